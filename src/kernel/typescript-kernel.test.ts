// The TypeScript kernel: the JavaScript kernel started with `typescript` (sandcell_javascript_typescript.mjs
// strips the types), through the same fd 3/4 harness (test/support/javascript-kernel.ts).
import { afterEach, describe, expect, it } from 'vitest';
import { disposeKernels, startKernel } from '../../test/support/javascript-kernel.js';

afterEach(disposeKernels);

describe('TypeScript kernel', () => {
  it('runs type annotations, interfaces, enums, generics and parameter properties, keeping state', async () => {
    const kernel = await startKernel('typescript');
    expect((await kernel.ready).language).toBe('typescript');
    await kernel.execute(
      'interface Point { x: number; y: number }\nenum Color { Red, Green }\nfunction first<T>(items: T[]): T { return items[0] }',
    );
    const outcome = await kernel.execute(
      'class Box { constructor(private readonly size: number) {} area(): number { return this.size ** 2 } }\nconst p: Point = { x: 3, y: 4 };\n[first<number>([p.x, p.y]), Color.Green, new Box(3).area()]',
    );
    expect(outcome.error).toBeUndefined();
    expect(outcome.result).toBe('[ 3, 1, 9 ]');
    expect((await kernel.execute('const again: number = 1; again')).result).toBe('1');
    expect((await kernel.execute('const again: number = 2; again')).result).toBe('2');
  });

  it('reads a generic call as TypeScript although it also parses as JavaScript comparisons', async () => {
    const kernel = await startKernel('typescript');
    await kernel.execute('function identity<T>(value: T): T { return value }');
    expect((await kernel.execute('identity<number>(5)')).result).toBe('5');
  });

  it('reports a TypeScript syntax error and places runtime errors on the TypeScript lines', async () => {
    const kernel = await startKernel('typescript');
    const invalid = await kernel.execute('let size: number = ;');
    expect(invalid.error?.name).toBe('SyntaxError');
    expect(invalid.error?.traceback.join('\n')).toContain('<cell-1>:1');
    await kernel.execute(
      'interface Shape { sides: number }\nfunction describe(shape: Shape): string {\n  return (shape as any).name.toUpperCase();\n}',
    );
    const failed = await kernel.execute('describe({ sides: 3 })');
    expect(failed.error?.name).toBe('TypeError');
    const traceback = failed.error?.traceback.join('\n') ?? '';
    expect(traceback).toContain('<cell-2>:3:');
    expect(traceback).toContain('return (shape as any).name.toUpperCase();');
  });

  it('answers is-complete for TypeScript', async () => {
    const kernel = await startKernel('typescript');
    expect(await kernel.request('is-complete', { code: 'interface A {' })).toMatchObject({ status: 'incomplete' });
    expect(await kernel.request('is-complete', { code: 'let n: number = 1' })).toMatchObject({ status: 'complete' });
    expect(await kernel.request('is-complete', { code: 'let n: = 1' })).toMatchObject({ status: 'invalid' });
  });
});
