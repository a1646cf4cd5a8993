// One file (over 500 lines): the TypeScript cases run the same kernel through the same fd 3/4 harness.
//
// The JavaScript and TypeScript kernel, run as the supervisor runs it: a real node process in
// its own process group, requests on fd 3 and events on fd 4 (pipes: named ones here), its
// output on fds 1 and 2. SANDCELL_TEST_NODE picks another node (e.g. Debian's Node 18).
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import {
  closeSync,
  constants,
  mkdtempSync,
  openSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';

const KERNEL = path.join(path.dirname(fileURLToPath(import.meta.url)), 'sandcell_javascript_kernel.mjs');
const NODE = process.env.SANDCELL_TEST_NODE ?? process.execPath;

type KernelEvent = { type: string; id?: string; [key: string]: unknown };
interface ExecutionOutcome {
  events: KernelEvent[];
  result: string | undefined;
  displays: Array<Record<string, unknown>>;
  error: { name: string; value: string; traceback: string[] } | undefined;
  end: { status: string; executionCount: number; outputTruncated: boolean };
}

class KernelUnderTest {
  stdout = '';
  stderr = '';
  readonly ready: Promise<KernelEvent>;
  private readonly waiting = new Map<string, (event: KernelEvent) => void>();
  private readonly collected = new Map<string, KernelEvent[]>();
  private nextId = 0;
  private readonly child: ChildProcess;
  private readonly requestFd: number;
  private readonly eventFd: number;
  private readonly directory: string;
  readonly exited: Promise<{ code: number | null; signal: string | null }>;

  constructor(language: string, options: Record<string, unknown> = {}) {
    this.directory = mkdtempSync(path.join(tmpdir(), 'sandcell-js-kernel-'));
    const requests = path.join(this.directory, 'requests');
    const events = path.join(this.directory, 'events');
    execFileSync('mkfifo', [requests, events]);
    // Read-write opens of a FIFO do not wait for the other end.
    this.requestFd = openSync(requests, constants.O_RDWR);
    this.eventFd = openSync(events, constants.O_RDWR);
    this.child = spawn(NODE, [KERNEL, language], {
      detached: true,
      cwd: this.directory,
      env: { PATH: process.env.PATH, SANDCELL_KERNEL_OPTIONS: JSON.stringify(options) },
      stdio: ['ignore', 'pipe', 'pipe', this.requestFd, this.eventFd],
    });
    this.child.stdout?.on('data', (chunk) => {
      this.stdout += chunk;
    });
    this.child.stderr?.on('data', (chunk) => {
      this.stderr += chunk;
    });
    this.exited = new Promise((resolve) => this.child.on('exit', (code, signal) => resolve({ code, signal })));
    let onReady: (event: KernelEvent) => void = () => {};
    this.ready = new Promise((resolve) => {
      onReady = resolve;
    });
    const reader = new net.Socket({ fd: this.eventFd, readable: true, writable: false });
    let pending = '';
    reader.setEncoding('utf8');
    reader.on('data', (chunk: string) => {
      pending += chunk;
      for (let newline = pending.indexOf('\n'); newline !== -1; newline = pending.indexOf('\n')) {
        const event = JSON.parse(pending.slice(0, newline)) as KernelEvent;
        pending = pending.slice(newline + 1);
        if (event.type === 'ready') onReady(event);
        else this.receive(event);
      }
    });
    this.reader = reader;
  }

  private readonly reader: net.Socket;

  private receive(event: KernelEvent): void {
    const id = String(event.id);
    const list = this.collected.get(id) ?? [];
    list.push(event);
    this.collected.set(id, list);
    if (event.type === 'execution-end' || event.type === 'reply') this.waiting.get(id)?.(event);
  }

  private send(request: Record<string, unknown>): Promise<KernelEvent> {
    const id = `request-${++this.nextId}`;
    const done = new Promise<KernelEvent>((resolve) => this.waiting.set(id, resolve));
    writeSync(this.requestFd, `${JSON.stringify({ ...request, id })}\n`);
    return done.then((event) => ({ ...event, all: this.collected.get(id) }));
  }

  async execute(code: string, fields: Record<string, unknown> = {}): Promise<ExecutionOutcome> {
    const end = (await this.send({ type: 'execute', code, ...fields })) as KernelEvent & { all: KernelEvent[] };
    const events = end.all;
    const result = events.find((event) => event.type === 'result');
    const error = events.find((event) => event.type === 'error');
    return {
      events,
      result: result ? String((result.data as Record<string, unknown>)['text/plain']) : undefined,
      displays: events
        .filter((event) => event.type === 'display')
        .map((event) => event.data as Record<string, unknown>),
      error: error as ExecutionOutcome['error'],
      end: end as unknown as ExecutionOutcome['end'],
    };
  }

  request(type: string, fields: Record<string, unknown> = {}): Promise<KernelEvent> {
    return this.send({ type, ...fields });
  }

  /** SIGINT to the kernel's process group, as the supervisor delivers an interrupt. */
  interrupt(): void {
    process.kill(-(this.child.pid as number), 'SIGINT');
  }

  async dispose(): Promise<void> {
    this.reader.destroy();
    try {
      process.kill(-(this.child.pid as number), 'SIGKILL');
    } catch {
      // Already gone.
    }
    await this.exited;
    closeSync(this.requestFd);
    rmSync(this.directory, { recursive: true, force: true });
  }
}

const kernels: KernelUnderTest[] = [];
async function startKernel(language = 'javascript', options: Record<string, unknown> = {}): Promise<KernelUnderTest> {
  const kernel = new KernelUnderTest(language, options);
  kernels.push(kernel);
  await kernel.ready;
  return kernel;
}

afterEach(async () => {
  await Promise.all(kernels.splice(0).map((kernel) => kernel.dispose()));
});

describe('JavaScript kernel', () => {
  it('announces itself ready with the protocol version, its language and pid', async () => {
    const kernel = new KernelUnderTest('javascript');
    kernels.push(kernel);
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

  it('ends a synchronous loop on SIGINT with Interrupted, and keeps the state', async () => {
    const kernel = await startKernel();
    await kernel.execute('const kept = "still here"');
    const running = kernel.execute("console.log('looping'); let spins = 0; while (true) { spins++ }");
    await vi.waitFor(() => expect(kernel.stdout).toContain('looping'));
    kernel.interrupt();
    const outcome = await running;
    expect(outcome.error?.name).toBe('Interrupted');
    expect(outcome.end.status).toBe('error');
    expect((await kernel.execute('kept')).result).toBe("'still here'");
  });

  it('ends a synchronous loop that runs after a top-level await on SIGINT, and keeps the state', async () => {
    const kernel = await startKernel();
    await kernel.execute('let before = "kept"');
    const running = kernel.execute(
      "await new Promise((resolve) => setTimeout(resolve, 10)); console.log('spinning'); for (;;) {}",
    );
    await vi.waitFor(() => expect(kernel.stdout).toContain('spinning'));
    kernel.interrupt();
    expect((await running).error?.name).toBe('Interrupted');
    expect((await kernel.execute('before')).result).toBe("'kept'");
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

  it('ends a pending await on SIGINT with Interrupted, and keeps the state', async () => {
    const kernel = await startKernel();
    await kernel.execute('let counter = 1');
    // Printed from a timer, once the cell is waiting (not as a stretch of it ends, when Node's
    // breakOnSigint is tearing down its handler and a SIGINT can be lost).
    const running = kernel.execute(
      "counter += 1; await new Promise(() => { setTimeout(() => console.log('waiting'), 10) })",
    );
    await vi.waitFor(() => expect(kernel.stdout).toContain('waiting'));
    kernel.interrupt();
    expect((await running).error?.name).toBe('Interrupted');
    expect((await kernel.execute('counter')).result).toBe('2');
  });

  it('does not resume an interrupted cell when what it awaited settles later', async () => {
    const kernel = await startKernel();
    const running = kernel.execute(
      "let resumed = false; await new Promise((resolve) => { setTimeout(() => console.log('sleeping'), 10); setTimeout(resolve, 300) }); resumed = true",
    );
    await vi.waitFor(() => expect(kernel.stdout).toContain('sleeping'));
    kernel.interrupt();
    expect((await running).error?.name).toBe('Interrupted');
    const later = await kernel.execute('await new Promise((resolve) => setTimeout(resolve, 500)); resumed');
    expect(later.result).toBe('false');
  });

  it('reports an unhandled rejection and an exception thrown by a timer as the execution’s error, and lives on', async () => {
    const kernel = await startKernel();
    const rejected = await kernel.execute(
      "Promise.reject(new RangeError('nobody caught me')); await new Promise((resolve) => setTimeout(resolve, 50))",
    );
    expect(rejected.error).toMatchObject({ name: 'RangeError', value: 'nobody caught me' });
    const thrown = await kernel.execute(
      "setTimeout(() => { throw new Error('from a timer') }, 1); await new Promise((resolve) => setTimeout(resolve, 1000))",
    );
    expect(thrown.error).toMatchObject({ name: 'Error', value: 'from a timer' });
    expect((await kernel.execute('"alive"')).result).toBe("'alive'");
  });

  it('gives an error thrown after its execution ended to the next execution’s stderr, and lives on', async () => {
    const kernel = await startKernel();
    expect((await kernel.execute("setTimeout(() => { throw new Error('too late') }, 20); 'ended'")).result).toBe(
      "'ended'",
    );
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(kernel.stderr).not.toContain('too late'); // the supervisor would drop it: no execution runs
    expect((await kernel.execute('"alive"')).result).toBe("'alive'");
    await vi.waitFor(() => expect(kernel.stderr).toContain('Uncaught Error: too late'));
  });

  it('holds what callbacks print and display after their cell ended, and gives it to the next execution', async () => {
    const kernel = await startKernel();
    const cell =
      "setTimeout(() => { console.log('late line'); display.html('<b>late</b>'); console.error('late error') }, 20)";
    expect((await kernel.execute(cell)).end.status).toBe('ok');
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(kernel.stdout).not.toContain('late line');
    const next = await kernel.execute("console.log('next line'); display.html('<i>next</i>')");
    expect(next.displays).toEqual([{ 'text/html': '<b>late</b>' }, { 'text/html': '<i>next</i>' }]);
    expect(next.end.outputTruncated).toBe(false);
    // stdout and stderr are two pipes: each arrives in its own time.
    await vi.waitFor(() => {
      expect(kernel.stdout).toContain('late line\nnext line\n');
      expect(kernel.stderr).toContain('late error');
    });
  });

  it('bounds what it holds between executions by outputBytes, and marks the next execution truncated', async () => {
    const kernel = await startKernel('javascript', { outputBytes: 1000 });
    await kernel.execute("setTimeout(() => { for (let i = 0; i < 100; i++) console.log('x'.repeat(99)) }, 20)");
    await new Promise((resolve) => setTimeout(resolve, 300));
    const next = await kernel.execute('1');
    expect(next.end.outputTruncated).toBe(true);
    await vi.waitFor(() => expect(kernel.stdout.length).toBe(1000));
  });

  it('with waitForEventLoop, ends an execution once the work it left is done, as `node script.js` does', async () => {
    const kernel = await startKernel();
    const cell = "setTimeout(() => console.log('later'), 300); console.log('now'); 'value'";
    const started = Date.now();
    const outcome = await kernel.execute(cell, { waitForEventLoop: true });
    expect(Date.now() - started).toBeGreaterThanOrEqual(290);
    expect(outcome.result).toBe("'value'");
    await vi.waitFor(() => expect(kernel.stdout).toBe('now\nlater\n'));
    // A socket and a chain of timers keep it going; a top-level await on what nothing settles ends it.
    const server = await kernel.execute(
      "const net = require('node:net'); const server = net.createServer((socket) => socket.end('hi')).listen(0);\n" +
        "const socket = net.connect(server.address().port); socket.on('data', (data) => { console.log('got', String(data)); setTimeout(() => server.close(), 100) })",
      { waitForEventLoop: true },
    );
    expect(server.end.status).toBe('ok');
    await vi.waitFor(() => expect(kernel.stdout).toContain('got hi\n'));
    const stuck = await kernel.execute('await new Promise(() => {})', { waitForEventLoop: true });
    expect(stuck.error).toMatchObject({ name: 'UnsettledTopLevelAwait' });
    // The kernel waits for requests again (its channel keeps it alive), and a cell without the option ends at once.
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect((await kernel.request('ping')).ok).toBe(true);
    const plain = await kernel.execute("setTimeout(() => {}, 5000); 'at once'");
    expect(plain.result).toBe("'at once'");
  });

  it('with waitForEventLoop, a SIGINT ends the wait with Interrupted and the state is kept', async () => {
    const kernel = await startKernel();
    const running = kernel.execute("let ticks = 0; setInterval(() => { ticks += 1 }, 10); 'started'", {
      waitForEventLoop: true,
    });
    await new Promise((resolve) => setTimeout(resolve, 300));
    kernel.interrupt();
    expect((await running).error).toMatchObject({ name: 'Interrupted' });
    expect(Number((await kernel.execute('ticks')).result)).toBeGreaterThan(0);
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

/** Runs a cell that must succeed. */
async function succeed(target: KernelUnderTest, code: string): Promise<void> {
  expect((await target.execute(code)).error).toBeUndefined();
}
