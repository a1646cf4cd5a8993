/**
 * The session's own logic on the scripted backend: queueing, timeouts and
 * what follows them, host-side caps, aborts, and kernels that die or break
 * the protocol. What a real sandbox must do is in test/contract/.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createScriptedBackend, type ScriptedRunContext, type ScriptedStep } from '../backends/scripted/index.js';
import { AbortError, FileOperationError, InvalidInputError, SandboxStartError, SessionClosedError } from '../errors.js';
import type { SessionOptions } from './options.js';
import { Session } from './session.js';

/**
 * A toy Python: `name = value` stores a value, a bare `name` shows it (a
 * NameError when unset); anything else succeeds silently.
 */
function toyPython({ code, state }: ScriptedRunContext): ScriptedStep[] {
  const assignment = /^(\w+) = (.*)$/.exec(code);
  if (assignment) {
    state.set(assignment[1] ?? '', assignment[2]);
    return [];
  }
  if (/^\w+$/.test(code)) {
    if (!state.has(code)) return [{ type: 'error', name: 'NameError', value: `name '${code}' is not defined` }];
    return [{ type: 'result', data: { 'text/plain': String(state.get(code)) } }];
  }
  return [];
}

/** A promise that resolves once the kernel began a run of `code`, with the script's steps. */
function startSignal(code: string, steps: ScriptedStep[], otherwise: (context: ScriptedRunContext) => ScriptedStep[]) {
  let markStarted: () => void = () => undefined;
  const started = new Promise<void>((resolve) => {
    markStarted = resolve;
  });
  const script = (context: ScriptedRunContext): ScriptedStep[] => {
    if (context.code !== code) return otherwise(context);
    markStarted();
    return steps;
  };
  return { started, script };
}

const sessions: Session[] = [];
async function scriptedSession(
  steps: (context: ScriptedRunContext) => ScriptedStep[] | Promise<ScriptedStep[]>,
  options: SessionOptions = {},
) {
  const backend = createScriptedBackend({ execute: steps });
  const session = await Session.create({ ...options, backend });
  sessions.push(session);
  return { backend, session };
}

afterEach(async () => {
  await Promise.all(sessions.splice(0).map((session) => session.close()));
});

describe('Session on the scripted backend', () => {
  it('has no ports to reach on a backend that does not serve them, and says so with a typed error', async () => {
    const { session } = await scriptedSession(() => []);
    expect(session.ports.available).toBe(false);
    expect(await session.ports.list()).toEqual([]);
    await expect(session.ports.connect(8000)).rejects.toMatchObject({ code: 'ports-unavailable' });
    await expect(session.ports.connect(Number.NaN)).rejects.toMatchObject({ code: 'invalid-input' });
    await expect(session.ports.waitFor(8000, { timeoutMs: 20 })).rejects.toMatchObject({ code: 'port-closed' });
    await expect(session.ports.waitFor(8000, { timeoutMs: -1 })).rejects.toMatchObject({ code: 'invalid-input' });
  });

  it('turns the kernel messages of a run into an Execution', async () => {
    const { session } = await scriptedSession(() => [
      { type: 'stdout', text: 'out\n' },
      { type: 'stderr', text: 'err\n' },
      { type: 'display', data: { 'text/html': '<b>x</b>' } },
      { type: 'result', data: { 'text/plain': '2' }, metadata: { m: 1 } },
    ]);
    const seen: string[] = [];
    const execution = await session.run('1+1', { onStdout: (text) => seen.push(text) });
    expect(execution).toMatchObject({
      status: 'ok',
      stdout: 'out\n',
      stderr: 'err\n',
      executionCount: 1,
      results: [
        { type: 'display_data', data: { 'text/html': '<b>x</b>' }, metadata: {} },
        { type: 'execute_result', data: { 'text/plain': '2' }, metadata: { m: 1 } },
      ],
    });
    expect(execution.error).toBeUndefined();
    expect(seen).toEqual(['out\n']);
    expect((await session.run('again')).executionCount).toBe(2);
  });

  it('reports an error in the code as data and keeps the state', async () => {
    const { session } = await scriptedSession(toyPython);
    await session.run('kept = yes');
    const failed = await session.run('missing');
    expect(failed.status).toBe('error');
    expect(failed.error).toEqual({ name: 'NameError', value: "name 'missing' is not defined", traceback: [] });
    expect((await session.run('kept')).results[0]?.data['text/plain']).toBe('yes');
  });

  it('queues runs: the second starts after the first ended, in order', async () => {
    const order: string[] = [];
    const { session } = await scriptedSession(async ({ code }) => {
      order.push(`start ${code}`);
      return code === 'slow' ? [{ type: 'sleep', ms: 50 }] : [];
    });
    const slow = session.run('slow').then(() => order.push('end slow'));
    const fast = session.run('fast').then(() => order.push('end fast'));
    await Promise.all([slow, fast]);
    expect(order).toEqual(['start slow', 'end slow', 'start fast', 'end fast']);
  });

  it('interrupts a run at its timeout; when the code stops, the state is kept', async () => {
    const { backend, session } = await scriptedSession((context) =>
      context.code === 'loop' ? [{ type: 'hang' }] : toyPython(context),
    );
    await session.run('kept = yes');
    const execution = await session.run('loop', { timeoutMs: 50 });
    expect(execution.status).toBe('timeout');
    expect(execution.error?.name).toBe('TimeoutError');
    expect(execution.error?.value).toContain('time limit of 0.05 s');
    expect(execution.stateLost).toBeUndefined();
    expect((await session.run('kept')).results[0]?.data['text/plain']).toBe('yes');
    expect(backend.sandboxes).toHaveLength(1);
  });

  it('restarts the kernel of code that ignores the interrupt, and says the state was lost; sandbox and files stay', async () => {
    const { backend, session } = await scriptedSession(
      (context) => (context.code === 'stubborn' ? [{ type: 'hang', ignoreInterrupt: true }] : toyPython(context)),
      { interruptGraceMs: 50 },
    );
    await session.files.write('keep.txt', 'kept');
    await session.run('value = 1');
    const execution = await session.run('stubborn', { timeoutMs: 50 });
    expect(execution.status).toBe('timeout');
    expect(execution.stateLost).toBe(true);
    expect(execution.stateLostReason).toBe(
      "Execution exceeded the time limit of 0.05 s and did not stop when interrupted, so the kernel was killed and restarted: the session's state (variables, imports) was lost. Files in /mnt/data were kept.",
    );
    expect(backend.sandboxes[0]?.requests).toContainEqual({
      type: 'context-restart',
      id: expect.any(String),
      context: 'python',
    });
    expect((await session.run('value')).error?.name).toBe('NameError');
    expect((await session.files.read('keep.txt')).toString()).toBe('kept');
    expect(backend.sandboxes).toHaveLength(1);
    expect(backend.liveSandboxes).toHaveLength(1);
  });

  it('restarts the whole sandbox when it does not restart the stuck kernel in time, and says so', async () => {
    const { backend, session } = await scriptedSession(
      (context) =>
        context.code === 'stuck' ? [{ type: 'hang', ignoreInterrupt: true, stallRestart: true }] : toyPython(context),
      { interruptGraceMs: 20, contextRestartTimeoutMs: 50 },
    );
    await session.files.write('keep.txt', 'kept');
    await session.run('value = 1');
    const execution = await session.run('stuck', { timeoutMs: 20 });
    expect(execution.status).toBe('timeout');
    expect(execution.stateLostReason).toMatch(
      /^Execution exceeded the time limit of 0.02 s and did not stop when interrupted, and its kernel could not be restarted alone \(The kernel did not answer a context-restart request within 50 ms.\), so the whole sandbox was killed and restarted: the state of every context/,
    );
    expect(backend.sandboxes[0]?.exit?.reason).toBe('killed');
    expect((await session.run('value')).error?.name).toBe('NameError');
    expect((await session.files.read('keep.txt')).toString()).toBe('kept');
    expect(backend.liveSandboxes).toHaveLength(1);
  });

  it('aborts a run through its AbortSignal, and refuses one aborted before it started', async () => {
    const { started, script } = startSignal('wait', [{ type: 'hang' }], toyPython);
    const { session } = await scriptedSession(script);
    const controller = new AbortController();
    const running = session.run('wait', { signal: controller.signal });
    await started;
    controller.abort();
    const execution = await running;
    expect(execution.status).toBe('error');
    expect(execution.error?.name).toBe('KeyboardInterrupt');
    await expect(session.run('wait', { signal: controller.signal })).rejects.toBeInstanceOf(AbortError);
  });

  it('cuts stdout past outputBytes and drops results past resultBytes, whatever the kernel sends', async () => {
    const { session } = await scriptedSession(
      () => [
        // A kernel ignoring its own caps: the host's bounds still hold.
        { type: 'stdout', text: 'x'.repeat(3000) },
        { type: 'stdout', text: 'y'.repeat(3000) },
        { type: 'display', data: { 'text/plain': 'a'.repeat(3000) } },
        { type: 'display', data: { 'text/plain': 'b'.repeat(3000) } },
        { type: 'display', data: { 'text/plain': 'c'.repeat(3000) } },
      ],
      { outputBytes: 4096, resultBytes: 8192 },
    );
    const execution = await session.run('flood');
    expect(execution.status).toBe('ok');
    expect(execution.outputTruncated).toBe(true);
    expect(execution.stdout).toBe(`${'x'.repeat(3000)}${'y'.repeat(1096)}`);
    expect(execution.results.map((result) => String(result.data['text/plain'])[0])).toEqual(['a', 'b']);
  });

  it('drops a protocol line too long to read, says output is missing, and goes on', async () => {
    const { session } = await scriptedSession(
      (context) =>
        context.code === 'huge'
          ? [
              { type: 'stdout', text: 'before\n' },
              {
                type: 'send',
                line: { type: 'stream', id: context.executionId, name: 'stdout', text: 'z'.repeat(2 << 20) },
              },
              { type: 'stdout', text: 'after\n' },
            ]
          : toyPython(context),
      { outputBytes: 1024, resultBytes: 4096 },
    );
    await session.run('kept = yes');
    const execution = await session.run('huge');
    expect(execution.stdout).toBe('before\nafter\n');
    expect(execution.outputTruncated).toBe(true);
    expect(execution.stateLost).toBeUndefined();
    expect((await session.run('kept')).results[0]?.data['text/plain']).toBe('yes');
  });

  it('kills a kernel that sends a line that is not JSON; the run says so and the next run gets a new kernel', async () => {
    const { backend, session } = await scriptedSession((context) =>
      context.code === 'garbage' ? [{ type: 'send', line: 'this is not json' }, { type: 'hang' }] : toyPython(context),
    );
    await session.run('value = 1');
    const broken = await session.run('garbage');
    expect(broken.status).toBe('error');
    expect(broken.error?.name).toBe('KernelDied');
    expect(broken.error?.value).toContain('broke the wire protocol (the sandbox sent a line that is not JSON');
    expect(broken.stateLost).toBe(true);
    const after = await session.run('value');
    expect(after.error?.name).toBe('NameError');
    expect(backend.sandboxes).toHaveLength(2);
  });

  it('a sandbox that ends between runs is replaced, and the next run says the state was lost', async () => {
    const { backend, session } = await scriptedSession(toyPython);
    await session.run('value = 1');
    backend.sandboxes[0]?.die({ signal: 'SIGSEGV' });
    await backend.sandboxes[0]?.exited;
    const next = await session.run('value');
    expect(next.stateLost).toBe(true);
    expect(next.stateLostReason).toMatch(/^Between runs, the sandbox ended \(killed by SIGSEGV\)/);
    expect(next.error?.name).toBe('NameError');
    const later = await session.run('value = 2');
    expect(later.stateLost).toBeUndefined();
  });

  it('a kernel killed for memory during a run names the limit to raise', async () => {
    const { session } = await scriptedSession(() => [{ type: 'exit', reason: 'out-of-memory', signal: 'SIGKILL' }], {
      limits: { memoryBytes: 256 * 1024 * 1024 },
    });
    const execution = await session.run('big = bytearray(10**12)');
    expect(execution.error?.name).toBe('KernelDied');
    expect(execution.error?.value).toContain('(256 MiB); use less memory, or raise the option `limits.memoryBytes`');
    expect(execution.stateLost).toBe(true);
  });

  it('reset interrupts the running execution, then clears the state', async () => {
    const { started, script } = startSignal('wait', [{ type: 'hang' }], toyPython);
    const { session } = await scriptedSession(script);
    await session.run('before = 1');
    const running = session.run('wait');
    await started;
    await session.reset();
    expect((await running).error?.name).toBe('KeyboardInterrupt');
    const after = await session.run('before');
    expect(after.error?.name).toBe('NameError');
    expect(after.executionCount).toBe(1);
  });

  it('moves files through the kernel and keeps them across restarts; failures are typed', async () => {
    const { session } = await scriptedSession(toyPython);
    await session.files.write('in/data.bin', Buffer.from([0, 255]));
    await session.restart();
    expect(await session.files.read('in/data.bin')).toEqual(Buffer.from([0, 255]));
    expect((await session.files.list('', { recursive: true })).map((entry) => entry.path)).toEqual([
      'in',
      'in/data.bin',
    ]);
    await session.files.remove('in');
    await expect(session.files.read('in/data.bin')).rejects.toMatchObject({ reason: 'not-found' });
    await expect(session.files.read('in/data.bin')).rejects.toBeInstanceOf(FileOperationError);
  });

  it('streams a file in chunks past the transfer limit, and stops with an error when it changes meanwhile', async () => {
    const content = Buffer.from(Array.from({ length: 5_000_000 }, (_, index) => (index * 7) % 251));
    // The code makes a file over the transfer limit, which files.write could not have.
    const { session } = await scriptedSession(
      (context) => {
        if (context.code === 'make big.bin') context.files.write('big.bin', content);
        return toyPython(context);
      },
      { fileTransferBytes: 1 << 20 },
    );
    await session.run('make big.bin');
    const chunks: Buffer[] = [];
    for await (const chunk of session.files.stream('big.bin', { chunkBytes: 2 << 20, expectedBytes: 5_000_000 })) {
      chunks.push(chunk);
    }
    expect(chunks.map((chunk) => chunk.length)).toEqual([2 << 20, 2 << 20, 5_000_000 - (4 << 20)]);
    expect(Buffer.concat(chunks).equals(content)).toBe(true);

    const reading = session.files.stream('big.bin', { chunkBytes: 1 << 20 });
    expect((await reading.next()).value).toHaveLength(1 << 20);
    await session.files.write('big.bin', 'rewritten');
    // The chunk asked for ahead may predate the change; a later one sees it.
    const error = await (async () => {
      for await (const _ of reading);
    })().catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(FileOperationError);
    expect(error).toMatchObject({ reason: 'changed', message: expect.stringContaining('changed while it was read') });

    await expect(session.files.stream('big.bin', { expectedBytes: 10 }).next()).rejects.toMatchObject({
      reason: 'changed',
    });
    await expect(session.files.stream('missing.bin').next()).rejects.toMatchObject({ reason: 'not-found' });
    const empty: Buffer[] = [];
    await session.files.write('empty.txt', '');
    for await (const chunk of session.files.stream('empty.txt')) empty.push(chunk);
    expect(empty).toEqual([]);
    for (const chunkBytes of [0, 1.5, (4 << 20) + 1]) {
      expect(() => session.files.stream('big.bin', { chunkBytes })).toThrow(InvalidInputError);
    }
  });

  it('refuses a kernel of another protocol version, and one that never says it is ready', async () => {
    const versionBackend = createScriptedBackend({ protocolVersion: 99 });
    await expect(Session.create({ backend: versionBackend })).rejects.toThrow(/speaks protocol 99/);
    expect(versionBackend.volumes[0]?.disposed).toBe(true);
    const silentBackend = createScriptedBackend({ sendReady: false });
    const silent = Session.create({ backend: silentBackend, startTimeoutMs: 50 });
    await expect(silent).rejects.toBeInstanceOf(SandboxStartError);
    await expect(silent).rejects.toThrow(/did not start within 50 ms/);
    expect(silentBackend.liveSandboxes).toHaveLength(0);
  });

  it('close ends the sandbox, removes the volume, and fails queued runs', async () => {
    const { backend, session } = await scriptedSession(() => [{ type: 'hang' }]);
    const running = session.run('wait');
    const queued = session.run('next');
    await session.close();
    await expect(running).rejects.toBeInstanceOf(SessionClosedError);
    await expect(queued).rejects.toBeInstanceOf(SessionClosedError);
    await expect(session.run('1')).rejects.toBeInstanceOf(SessionClosedError);
    expect(backend.liveSandboxes).toHaveLength(0);
    expect(backend.volumes[0]?.disposed).toBe(true);
  });
});
