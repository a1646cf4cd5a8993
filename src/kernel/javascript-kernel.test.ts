// The JavaScript kernel (sandcell_javascript_kernel.mjs) runs code as Node's REPL would: state kept
// between cells, the last value shown, imports, errors as data, displays and the requests it answers.
// Its interrupts, the work a cell leaves behind, TypeScript and snapshots have files of their own
// (javascript-kernel-*.test.ts, typescript-kernel.test.ts, javascript-state.test.ts); the harness
// is test/support/javascript-kernel.ts.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { disposeKernels, launchKernel, startKernel } from '../../test/support/javascript-kernel.js';

afterEach(disposeKernels);

describe('JavaScript kernel', () => {
  it('announces itself ready with the protocol version, its language and pid', async () => {
    const kernel = launchKernel('javascript');
    const ready = await kernel.ready;
    expect(ready).toMatchObject({ type: 'ready', protocolVersion: 2, language: 'javascript' });
    expect(ready.version).toMatch(/^\d+\.\d+\.\d+$/);
    expect(typeof ready.pid).toBe('number');
  });

  it('keeps state between cells, and re-running a cell that declares const, let and class works', async () => {
    const kernel = await startKernel();
    const cell = 'const total = 40; let step = 2; class Adder { add(a) { return a + step } }\nnew Adder().add(total)';
    expect((await kernel.execute(cell)).result).toBe('42');
    const again = await kernel.execute(cell);
    expect(again.error).toBeUndefined();
    expect(again.result).toBe('42');
    expect((await kernel.execute('function twice(n) { return 2 * n }')).result).toBeUndefined();
    expect((await kernel.execute('twice(total) + step')).result).toBe('82');
  });

  it('shows the last expression as Node’s REPL does, and nothing for undefined or a declaration', async () => {
    const kernel = await startKernel();
    expect((await kernel.execute("({ name: 'x', list: [1, 2] })")).result).toBe("{ name: 'x', list: [ 1, 2 ] }");
    expect((await kernel.execute("'text'")).result).toBe("'text'");
    expect((await kernel.execute('{ a: 1 }')).result).toBe('{ a: 1 }');
    expect((await kernel.execute('Promise.resolve(3)')).result).toBe('Promise { 3 }');
    expect((await kernel.execute('undefined')).result).toBeUndefined();
    expect((await kernel.execute('const y = 5')).result).toBeUndefined();
  });

  it('runs top-level await, imports of built-ins (static, dynamic) and require', async () => {
    const kernel = await startKernel();
    const cell = [
      "import path from 'node:path';",
      "import { join as joinPaths } from 'node:path';",
      'const value = await new Promise((resolve) => setTimeout(() => resolve(7), 20));',
      "const os = await import('node:os');",
      "[path.basename('/a/b.txt'), joinPaths('a', 'b'), value, typeof os.cpus, require('node:util').format('%d', 3)]",
    ].join('\n');
    expect((await kernel.execute(cell)).result).toBe("[ 'b.txt', 'a/b', 7, 'function', '3' ]");
    expect((await kernel.execute("path.extname('x.js')")).result).toBe("'.js'");
  });

  it('imports and requires the working directory’s own files', async () => {
    const kernel = await startKernel();
    const cell = [
      "import { writeFileSync } from 'node:fs';",
      "writeFileSync('helper.mjs', 'export const twice = (n) => 2 * n;');",
      "writeFileSync('helper.cjs', 'module.exports = { thrice: (n) => 3 * n };');",
      "const { twice } = await import('./helper.mjs');",
      "[twice(2), require('./helper.cjs').thrice(2)]",
    ].join('\n');
    expect((await kernel.execute(cell)).result).toBe('[ 4, 6 ]');
  });

  it('runs a script file as a cell: its #! line and exports do not get in the way', async () => {
    const kernel = await startKernel();
    const script = [
      '#!/usr/bin/env node',
      "export function main() { return 'ran' }",
      'export const answer = 42;',
      'export { answer as alias };',
      'export default class Program {}',
      'main() + answer',
    ].join('\n');
    expect((await kernel.execute(script)).result).toBe("'ran42'");
    expect((await kernel.execute('typeof Program')).result).toBe("'function'");
  });

  it('sends console.log to stdout and console.error to stderr', async () => {
    const kernel = await startKernel();
    const outcome = await kernel.execute("console.log('to stdout', [1]); console.error('to stderr')");
    expect(outcome.end.status).toBe('ok');
    await vi.waitFor(() => expect(kernel.stdout).toContain('to stdout [ 1 ]'));
    await vi.waitFor(() => expect(kernel.stderr).toContain('to stderr'));
  });

  it('reports an error as data, with the cells’ frames and lines and none of the kernel’s', async () => {
    const kernel = await startKernel();
    await kernel.execute('function explode(value) {\n  return value.missing.field;\n}');
    const outcome = await kernel.execute('explode({})');
    expect(outcome.end.status).toBe('error');
    expect(outcome.error).toMatchObject({ name: 'TypeError', value: expect.stringContaining("reading 'field'") });
    const traceback = outcome.error?.traceback.join('\n') ?? '';
    expect(traceback).toContain('at explode (<cell-1>:2:');
    expect(traceback).toContain('return value.missing.field;');
    expect(traceback).toContain('<cell-2>:1:1');
    expect(traceback).not.toMatch(/sandcell_javascript|node:vm/);
    expect((await kernel.execute('1 + 1')).result).toBe('2');
  });

  it('reports a syntax error with the line and a caret, and counts the execution', async () => {
    const kernel = await startKernel();
    const outcome = await kernel.execute('let broken = ;');
    expect(outcome.error?.name).toBe('SyntaxError');
    expect(outcome.error?.traceback).toEqual([
      '<cell-1>:1',
      'let broken = ;',
      '             ^',
      expect.stringMatching(/^SyntaxError: /),
    ]);
    expect((await kernel.execute('2')).end.executionCount).toBe(2);
  });

  it('counts executions from 1, errors included', async () => {
    const kernel = await startKernel();
    const counts = [];
    for (const code of ['1', 'throw new Error("x")', '3']) counts.push((await kernel.execute(code)).end.executionCount);
    expect(counts).toEqual([1, 2, 3]);
    const result = (await kernel.execute('4')).events.find((event) => event.type === 'result');
    expect(result?.executionCount).toBe(4);
  });

  it('awaits inside expressions and catches a rejected await, as async code does', async () => {
    const kernel = await startKernel();
    const cell = [
      'const sum = await Promise.resolve(2) + (await Promise.resolve(3)) * 2;',
      'let caught;',
      "try { await Promise.reject(new Error('no')) } catch (error) { caught = error.message }",
      'var yield_ = [sum, caught];',
      'yield_',
    ].join('\n');
    expect((await kernel.execute(cell)).result).toBe("[ 8, 'no' ]");
    expect((await kernel.execute('var yield = 1; yield + await Promise.resolve(1)')).result).toBe('2');
    expect((await kernel.execute('for await (const item of [Promise.resolve(5)]) { item }')).error).toBeUndefined();
  });

  it('reset clears the cells’ names, restores the built-ins they replaced and restarts the count', async () => {
    const kernel = await startKernel();
    await kernel.execute(
      'const gone = 1; class Gone {}; function goneToo() {}; var alsoGone = 2; globalThis.console = { log() {} }',
    );
    expect((await kernel.request('reset')).ok).toBe(true);
    const after = await kernel.execute(
      "console.log('logging again'); [typeof gone, typeof Gone, typeof goneToo, typeof alsoGone, typeof require, typeof display]",
    );
    expect(after.result).toBe("[ 'undefined', 'undefined', 'undefined', 'undefined', 'function', 'function' ]");
    expect(after.end.executionCount).toBe(1);
    await vi.waitFor(() => expect(kernel.stdout).toContain('logging again'));
  });

  it('answers is-complete: complete, incomplete (with an indent) and invalid', async () => {
    const kernel = await startKernel();
    expect(await kernel.request('is-complete', { code: 'const a = 1' })).toMatchObject({
      ok: true,
      status: 'complete',
    });
    expect(await kernel.request('is-complete', { code: 'function f() {' })).toMatchObject({
      status: 'incomplete',
      indent: 2,
    });
    expect(await kernel.request('is-complete', { code: 'const s = `open' })).toMatchObject({ status: 'incomplete' });
    expect(await kernel.request('is-complete', { code: '1 )' })).toMatchObject({ status: 'invalid' });
    expect(await kernel.request('ping')).toMatchObject({ type: 'reply', ok: true });
    expect(await kernel.request('no-such-request')).toMatchObject({ ok: false, error: { code: 'unknown-request' } });
  });

  it('sends displays: HTML, PNG bytes as base64, SVG, and any value as text', async () => {
    const kernel = await startKernel();
    const outcome = await kernel.execute(
      "display({ 'text/html': '<b>bold</b>' }); display.png(Buffer.from([137, 80, 78, 71])); display.svg('<svg/>'); display([1, 2])",
    );
    expect(outcome.displays).toEqual([
      { 'text/html': '<b>bold</b>' },
      { 'image/png': 'iVBORw==' },
      { 'image/svg+xml': '<svg/>' },
      { 'text/plain': '[ 1, 2 ]' },
    ]);
  });

  it('drops results past resultBytes and cuts an error past outputBytes, saying so', async () => {
    const kernel = await startKernel('javascript', { resultBytes: 2000, outputBytes: 4000 });
    const small = await kernel.execute('"fits"');
    expect(small.result).toBe("'fits'");
    expect(small.end.outputTruncated).toBe(false);
    const large = await kernel.execute("'x'.repeat(5000)");
    expect(large.result).toBeUndefined();
    expect(large.end.outputTruncated).toBe(true);
    const error = await kernel.execute("throw new Error('e'.repeat(20000))");
    expect(Buffer.byteLength(error.error?.value ?? '')).toBeLessThanOrEqual(4000);
    expect(error.error?.value).toContain('[sandcell cut this error value');
    expect(error.end.outputTruncated).toBe(true);
  });

  it('gives its child processes none of its protocol descriptors', async () => {
    const kernel = await startKernel();
    const outcome = await kernel.execute(
      "require('node:child_process').execFileSync('bash', ['-c', 'ls -l /proc/$$/fd; true'], { stdio: ['ignore', 'pipe', 'ignore'] }).toString()",
    );
    expect(outcome.result).toContain('/dev/null');
    expect(outcome.result).not.toMatch(/requests|events/);
  });
});
