// The JavaScript kernel ends a cell on SIGINT, as the supervisor delivers an interrupt to its process
// group: a synchronous loop, a pending await, a wait for the event loop; the context's state is kept.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { disposeKernels, startKernel } from '../../test/support/javascript-kernel.js';

afterEach(disposeKernels);

describe('JavaScript kernel: interrupts', () => {
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
});
