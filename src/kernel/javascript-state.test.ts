// A JavaScript or TypeScript context's state (sandcell_javascript_state.mjs), saved by one kernel and
// loaded by a fresh one: what comes back, what is left out and why, and the files it refuses.
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { disposeKernels, startKernel, succeed } from '../../test/support/javascript-kernel.js';

afterEach(disposeKernels);

describe('JavaScript state: saved by one kernel, loaded by a fresh one', () => {
  const scratch = mkdtempSync(path.join(tmpdir(), 'sandcell-js-state-'));
  afterAll(() => rmSync(scratch, { recursive: true, force: true }));

  it('brings back values with their shared references, functions, classes and their instances, the working directory and the count', async () => {
    const saver = await startKernel();
    await succeed(
      saver,
      "const count = 42; let text = 'héllo wörld ✓ 🎉'; const nested = { list: [1] }; nested.self = nested; nested.list.push(nested);",
    );
    await succeed(
      saver,
      [
        "const lookup = new Map([['a', 1], ['b', { n: 2 }]]); const when = new Date('2024-01-02T03:04:05Z');",
        'const bytes = new Float64Array([1.5, -2]); const huge = 2n ** 70n; const factor = 3;',
        'function scale(n) { return n * factor }',
        'class Point { constructor(x, y) { this.x = x; this.y = y } norm() { return Math.hypot(this.x, this.y) } }',
        'const origin = new Point(3, 4); const points = [origin, new Point(0, 1)]; const alias = scale;',
      ].join('\n'),
    );
    await succeed(
      saver,
      "require('node:fs').mkdirSync('work/inner', { recursive: true }); process.chdir('work/inner')",
    );
    const file = path.join(scratch, 'whole.state');
    const saved = await saver.request('state-save', { path: file });
    expect(saved).toMatchObject({ ok: true, skipped: [], executionCount: 3 });
    const names = [
      'count',
      'text',
      'nested',
      'lookup',
      'when',
      'bytes',
      'huge',
      'factor',
      'origin',
      'points',
      'scale',
      'Point',
      'alias',
    ];
    expect([...(saved.saved as string[])].sort()).toEqual([...names].sort());
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(readFileSync(file).subarray(0, 28).toString()).toBe('sandcell-javascript-state 1\n');

    const loader = await startKernel();
    const loaded = await loader.request('state-load', { path: file });
    expect(loaded).toMatchObject({ ok: true, skipped: [], executionCount: 3 });
    expect([...(loaded.restored as string[])].sort()).toEqual([...names].sort());
    const check = await loader.execute(
      [
        'display.json([count, text, nested.self === nested, nested.list[1] === nested, lookup.get("b").n, when.toISOString(),',
        '  bytes instanceof Float64Array && bytes[0], String(huge), scale(2), alias === scale, origin instanceof Point,',
        '  origin.norm(), points[0] === origin, points[1].norm(), process.cwd().endsWith("/work/inner")])',
      ].join('\n'),
    );
    expect(check.error).toBeUndefined();
    expect(check.displays).toEqual([
      {
        'application/json': [
          42,
          'héllo wörld ✓ 🎉',
          true,
          true,
          2,
          '2024-01-02T03:04:05.000Z',
          1.5,
          String(2n ** 70n),
          6,
          true,
          true,
          5,
          true,
          1,
          true,
        ],
      },
    ]);
    expect(check.end.executionCount).toBe(4);
    // A `const` comes back as the kernel makes one: a cell that declares it again runs.
    expect((await loader.execute('const count = 7; factor = 10; scale(count)')).result).toBe('70');
  });

  it('keeps a TypeScript context’s typed function and typed values', async () => {
    const saver = await startKernel('typescript');
    await succeed(
      saver,
      'interface Shape { sides: number }\nfunction area(radius: number): number { return 3 * radius ** 2 }\nconst square: Shape = { sides: 4 }',
    );
    const file = path.join(scratch, 'typescript.state');
    expect(await saver.request('state-save', { path: file })).toMatchObject({ ok: true, saved: ['square', 'area'] });
    const loader = await startKernel('typescript');
    expect(await loader.request('state-load', { path: file })).toMatchObject({
      ok: true,
      restored: ['square', 'area'],
    });
    expect((await loader.execute('const sides: number = square.sides; area(2) + sides')).result).toBe('16');
  });

  it('names what it cannot keep with the reason, and keeps the rest', async () => {
    const saver = await startKernel();
    await succeed(
      saver,
      [
        'const kept = { ok: true }; const pending = Promise.resolve(1); const ticker = setInterval(() => {}, 1000);',
        "const server = require('node:net').createServer(); const tag = Symbol('t'); const weak = new WeakMap();",
        'const holder = { list: [{ run() {} }] }; function make(n) { return () => n } const made = make(3);',
        "require('node:fs').mkdirSync('gone'); process.chdir('gone')",
      ].join('\n'),
    );
    const file = path.join(scratch, 'partial.state');
    const saved = await saver.request('state-save', { path: file });
    const skipped = [
      { name: 'pending', reason: 'Promise' },
      { name: 'ticker', reason: 'Timeout' },
      { name: 'server', reason: 'Server' },
      { name: 'tag', reason: 'Symbol' },
      { name: 'weak', reason: 'WeakMap' },
      { name: 'holder', reason: 'contains a function' },
      { name: 'made', reason: 'function (closure)' },
    ];
    expect(saved).toMatchObject({ ok: true, saved: ['kept', 'make'], skipped });
    await succeed(saver, "clearInterval(ticker); process.chdir('..'); require('node:fs').rmdirSync('gone')");

    const loader = await startKernel();
    const loaded = await loader.request('state-load', { path: file });
    expect(loaded).toMatchObject({ ok: true, restored: ['kept', 'make'], executionCount: 1 });
    expect(loaded.skipped).toEqual([
      ...skipped,
      { name: '(working directory)', reason: expect.stringMatching(/\/gone: ENOENT$/) },
    ]);
    const check = await loader.execute('[kept.ok, make(5)(), typeof pending, typeof made]');
    expect(check.result).toBe("[ true, 5, 'undefined', 'undefined' ]");
  });

  it('refuses a file that is not its state, changing nothing, and names a file it cannot read', async () => {
    const saver = await startKernel();
    await succeed(saver, 'const value = 1');
    const real = path.join(scratch, 'real.state');
    expect((await saver.request('state-save', { path: real })).ok).toBe(true);
    const cut = path.join(scratch, 'cut.state');
    writeFileSync(cut, readFileSync(real).subarray(0, 32));
    const python = path.join(scratch, 'python.state');
    writeFileSync(python, 'sandcell-python-state 1\n2\n{}');

    const loader = await startKernel();
    await succeed(loader, "const before = 'unchanged'");
    for (const file of [python, cut]) {
      expect(await loader.request('state-load', { path: file })).toMatchObject({
        ok: false,
        error: { code: 'state-invalid' },
      });
    }
    expect(await loader.request('state-load', { path: path.join(scratch, 'missing.state') })).toMatchObject({
      ok: false,
      error: { code: 'state-failed' },
    });
    expect(await loader.request('state-load', {})).toMatchObject({ ok: false, error: { code: 'invalid-request' } });
    expect(await loader.request('state-save', { path: 3 })).toMatchObject({
      ok: false,
      error: { code: 'invalid-request' },
    });
    expect(await loader.request('state-save', { path: path.join(scratch, 'no-such-dir', 'x.state') })).toMatchObject({
      ok: false,
      error: { code: 'state-failed' },
    });
    const after = await loader.execute('[before, typeof value]');
    expect(after.result).toBe("[ 'unchanged', 'undefined' ]");
    expect(after.end.executionCount).toBe(2);
  });

  it('saves in its turn, after the execution that is running', async () => {
    const saver = await startKernel();
    await succeed(saver, "let x = 'before'");
    const running = saver.execute("await new Promise((resolve) => setTimeout(resolve, 500)); x = 'after'");
    const file = path.join(scratch, 'queued.state');
    const saved = await saver.request('state-save', { path: file });
    expect(saved).toMatchObject({ ok: true, saved: ['x'], executionCount: 2 });
    expect((await running).end.status).toBe('ok');
    const loader = await startKernel();
    expect((await loader.request('state-load', { path: file })).ok).toBe(true);
    expect((await loader.execute('x')).result).toBe("'after'");
  });
});
