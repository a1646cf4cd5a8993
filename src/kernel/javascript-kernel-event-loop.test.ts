// What a JavaScript cell leaves behind once its top level returns: a rejection or a timer's exception
// while it waits, errors and output of callbacks after it ended (held for the next execution, within
// outputBytes), and waitForEventLoop, which ends the execution only once that work is done.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { disposeKernels, startKernel } from '../../test/support/javascript-kernel.js';

afterEach(disposeKernels);

describe('JavaScript kernel: the work a cell leaves behind', () => {
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
});
