/**
 * Contexts on the scripted backend: which context a run goes to, separate
 * state and counters, queues per context, restart and removal, a stuck or dead
 * kernel costing only its own context, and what a session restart or reset
 * leaves. What real kernels must do is in test/contract/.
 */
import { afterEach, describe, expect, it } from 'vitest';
import {
  createScriptedBackend,
  type ScriptedBackendOptions,
  type ScriptedRunContext,
  type ScriptedStep,
} from '../backends/scripted/index.js';
import {
  AbortError,
  InvalidInputError,
  LanguageUnavailableError,
  SessionClosedError,
  TooManyContextsError,
  UnknownContextError,
} from '../errors.js';
import type { SessionOptions } from './options.js';
import { Session } from './session.js';

/** A toy language: `name = value` stores, a bare `name` shows it (NameError when unset), `wait` hangs until interrupted. */
function toyKernel(context: ScriptedRunContext): ScriptedStep[] {
  const { code, state } = context;
  const assignment = /^(\w+) = (.*)$/.exec(code);
  if (assignment) {
    state.set(assignment[1] ?? '', assignment[2]);
    return [];
  }
  if (code === 'wait') return [{ type: 'hang' }];
  if (code === 'stubborn') return [{ type: 'hang', ignoreInterrupt: true }];
  if (code === 'where') return [{ type: 'stdout', text: `${context.contextId} ${context.language}` }];
  if (/^\w+$/.test(code)) {
    if (!state.has(code)) return [{ type: 'error', name: 'NameError', value: `name '${code}' is not defined` }];
    return [{ type: 'result', data: { 'text/plain': String(state.get(code)) } }];
  }
  return [];
}

const sessions: Session[] = [];
async function scriptedSession(options: SessionOptions = {}, backendOptions: ScriptedBackendOptions = {}) {
  const backend = createScriptedBackend({ execute: toyKernel, ...backendOptions });
  const session = await Session.create({ ...options, backend });
  sessions.push(session);
  return { backend, session, sandbox: () => backend.sandboxes.at(-1) };
}

const text = async (execution: Promise<{ results: { data: Record<string, unknown> }[] }>) =>
  (await execution).results[0]?.data['text/plain'];

afterEach(async () => {
  await Promise.all(sessions.splice(0).map((session) => session.close()));
});

describe('contexts on the scripted backend', () => {
  it('starts with python; a created context gets an id, its own variables and its own count', async () => {
    const { session, sandbox } = await scriptedSession();
    expect(session.listContexts()).toEqual([{ id: 'python', language: 'python', cwd: '/mnt/data', executionCount: 0 }]);
    const second = await session.createContext({ language: 'python', cwd: 'work', env: { MODE: 'x' } });
    expect(second).toEqual({
      id: expect.stringMatching(/^python-[0-9a-f]{6}$/),
      language: 'python',
      cwd: '/mnt/data/work',
      executionCount: 0,
    });
    expect(sandbox()?.requests).toContainEqual({
      type: 'context-create',
      id: expect.any(String),
      context: second.id,
      language: 'python',
      cwd: '/mnt/data/work',
      env: { MODE: 'x' },
    });
    await session.run('a = default');
    await session.run('a = second', { context: second.id });
    await session.run('b = 2', { context: second.id });
    expect(await text(session.run('a'))).toBe('default');
    const inSecond = await session.run('a', { context: second.id });
    expect(inSecond).toMatchObject({ context: second.id, language: 'python', executionCount: 3 });
    expect(inSecond.results[0]?.data['text/plain']).toBe('second');
    expect((await session.run('b')).error?.name).toBe('NameError');
    expect(session.listContexts().map(({ id, executionCount }) => [id, executionCount])).toEqual([
      ['python', 3],
      [second.id, 3],
    ]);
  });

  it("runs a language alone in that language's default context, made on first use and kept", async () => {
    const { session, sandbox } = await scriptedSession();
    const first = await session.run('where', { language: 'javascript' });
    expect(first).toMatchObject({ context: 'javascript', language: 'javascript', stdout: 'javascript javascript' });
    await session.run('x = 1', { language: 'javascript' });
    expect(await text(session.run('x', { context: 'javascript' }))).toBe('1');
    const creations = sandbox()?.requests.filter((request) => (request as { type: string }).type === 'context-create');
    expect(creations).toHaveLength(1);
    expect((await session.run('where')).stdout).toBe('python python');
    expect(session.listContexts().map((context) => context.id)).toEqual(['python', 'javascript']);
  });

  it('refuses what names no usable context, with typed errors', async () => {
    const { session } = await scriptedSession();
    await expect(session.run('1', { context: 'nope' })).rejects.toBeInstanceOf(UnknownContextError);
    await expect(session.run('1', { context: 'python', language: 'r' })).rejects.toBeInstanceOf(InvalidInputError);
    await expect(session.run('1', { context: 'bad id!' })).rejects.toBeInstanceOf(InvalidInputError);
    await expect(session.run('1', { language: 'cobol' as 'r' })).rejects.toThrow(/must be one of python, javascript/);
    await expect(session.createContext({ language: 'cobol' as 'r' })).rejects.toBeInstanceOf(InvalidInputError);
    await expect(session.createContext({ language: 'r', cwd: 'a\0b' })).rejects.toBeInstanceOf(InvalidInputError);
    const tooMany = Object.fromEntries(Array.from({ length: 65 }, (_, index) => [`V${index}`, 'x']));
    await expect(session.createContext({ language: 'r', env: tooMany })).rejects.toThrow(/at most 64/);
    await expect(session.createContext({ language: 'r', env: { 'A-B': 'x' } })).rejects.toBeInstanceOf(
      InvalidInputError,
    );
    await expect(session.restartContext('nope')).rejects.toBeInstanceOf(UnknownContextError);
    await expect(session.removeContext('nope')).rejects.toBeInstanceOf(UnknownContextError);
    expect(session.listContexts()).toHaveLength(1);
  });

  it('says which package a missing language needs, and lists no context for it', async () => {
    const { session } = await scriptedSession({}, { languages: { python: '3.11', bash: '5.2' } });
    const error = await session.run('1', { language: 'r' }).catch((caught) => caught);
    expect(error).toBeInstanceOf(LanguageUnavailableError);
    expect(error.message).toMatch(
      /no r runtime \(it has python, bash\).*r-base-core.*npm run setup.*sandcell image build/,
    );
    await expect(session.createContext({ language: 'javascript' })).rejects.toThrow(/the nodejs package/);
    expect(session.listContexts().map((context) => context.id)).toEqual(['python']);
    expect((await session.run('where', { language: 'bash' })).stdout).toBe('bash bash');
  });

  it('holds at most maxContexts contexts, python included', async () => {
    const { session } = await scriptedSession({ maxContexts: 2 });
    await session.createContext({ language: 'r' });
    await expect(session.createContext({ language: 'r' })).rejects.toBeInstanceOf(TooManyContextsError);
    await expect(session.run('1', { language: 'bash' })).rejects.toThrow(/remove one with session.removeContext/);
    await session.removeContext(session.listContexts()[1]?.id ?? '');
    expect((await session.run('where', { language: 'bash' })).stdout).toBe('bash bash');
  });

  it('runs different contexts at once, and one context in order', async () => {
    const { session } = await scriptedSession();
    const controller = new AbortController();
    const waiting = session.run('wait', { signal: controller.signal });
    const queued = session.run('after = 1');
    // Python is busy; bash is not held up by it.
    expect((await session.run('where', { language: 'bash' })).stdout).toBe('bash bash');
    expect(session.busy).toBe(true);
    controller.abort();
    expect((await waiting).error?.name).toBe('KeyboardInterrupt');
    await queued;
    expect(await text(session.run('after'))).toBe('1');
  });

  it('restarting a context loses only its state, and ends a run in it', async () => {
    const { session } = await scriptedSession();
    const other = await session.createContext({ language: 'python' });
    await session.run('kept = yes');
    await session.run('lost = yes', { context: other.id });
    const running = session.run('wait', { context: other.id });
    await new Promise((resolve) => setTimeout(resolve, 10));
    expect(await session.restartContext(other.id)).toEqual({ ...other, executionCount: 0 });
    const ended = await running;
    expect(ended).toMatchObject({ status: 'error', stateLost: true, error: { name: 'KernelRestarted' } });
    expect((await session.run('lost', { context: other.id })).error?.name).toBe('NameError');
    expect(await text(session.run('kept'))).toBe('yes');
  });

  it('removing a context ends its run, fails its queued runs, and frees its kernel', async () => {
    const { session, sandbox } = await scriptedSession();
    const other = await session.createContext({ language: 'bash' });
    const running = session.run('wait', { context: other.id });
    const queued = session.run('x = 1', { context: other.id });
    await new Promise((resolve) => setTimeout(resolve, 10));
    await session.removeContext(other.id);
    expect((await running).error?.name).toBe('ContextRemoved');
    await expect(queued).rejects.toBeInstanceOf(UnknownContextError);
    await expect(session.run('1', { context: other.id })).rejects.toBeInstanceOf(UnknownContextError);
    expect(sandbox()?.supervisor.contexts.has(other.id)).toBe(false);
    expect(session.listContexts().map((context) => context.id)).toEqual(['python']);
  });

  it("a timeout's restart costs only the stuck context's state", async () => {
    const { session } = await scriptedSession({ interruptGraceMs: 20 });
    const other = await session.createContext({ language: 'javascript' });
    await session.run('kept = yes');
    await session.run('lost = yes', { context: other.id });
    const stuck = await session.run('stubborn', { context: other.id, timeoutMs: 20 });
    expect(stuck.status).toBe('timeout');
    expect(stuck.stateLostReason).toMatch(new RegExp(`restarted: the state of context "${other.id}" \\(variables`));
    expect((await session.run('lost', { context: other.id })).error?.name).toBe('NameError');
    const kept = await session.run('kept');
    expect(kept.results[0]?.data['text/plain']).toBe('yes');
    expect(kept.stateLost).toBeUndefined();
  });

  it('when the sandbox cannot restart a stuck context, every context is lost and each says so', async () => {
    const { backend, session } = await scriptedSession(
      { interruptGraceMs: 20, contextRestartTimeoutMs: 30 },
      {
        execute: (context) =>
          context.code === 'stuck' ? [{ type: 'hang', ignoreInterrupt: true, stallRestart: true }] : toyKernel(context),
      },
    );
    const other = await session.createContext({ language: 'r' });
    await session.run('lost = yes');
    await session.run('lost = yes', { context: other.id });
    const stuck = await session.run('stuck', { context: other.id, timeoutMs: 20 });
    expect(stuck.stateLostReason).toMatch(/so the whole sandbox was killed and restarted: the state of every context/);
    expect(backend.sandboxes).toHaveLength(2);
    const python = await session.run('lost');
    expect(python.error?.name).toBe('NameError');
    expect(python.stateLostReason).toMatch(new RegExp(`code in context "${other.id}" did not stop when interrupted`));
    const again = await session.run('lost', { context: other.id });
    expect(again.error?.name).toBe('NameError');
    expect(again.stateLost).toBeUndefined(); // its own run already said so
  });

  it("a kernel that dies during a run ends it with its state lost, naming memory when the sandbox's counters say so", async () => {
    const { session } = await scriptedSession(
      { limits: { memoryBytes: 256 * 1024 * 1024 } },
      {
        execute: (context) =>
          context.code === 'hog'
            ? [{ type: 'kernel-exit', outOfMemory: true }]
            : context.code === 'segfault'
              ? [{ type: 'kernel-exit', signal: 'SIGSEGV' }]
              : toyKernel(context),
      },
    );
    await session.run('kept = yes');
    await session.run('lost = yes', { language: 'r' });
    const hog = await session.run('hog', { language: 'r' });
    expect(hog).toMatchObject({ status: 'error', stateLost: true, error: { name: 'KernelDied' } });
    expect(hog.error?.value).toMatch(
      /killed for using more memory than its limit \(256 MiB\); use less memory, or raise the option `limits.memoryBytes`/,
    );
    expect(hog.error?.value).toMatch(/the state of context "r"/);
    const segfault = await session.run('segfault', { language: 'r' });
    expect(segfault.error?.value).toMatch(/^The kernel died \(killed by SIGSEGV\)\./);
    expect((await session.run('lost', { language: 'r' })).error?.name).toBe('NameError');
    expect(await text(session.run('kept'))).toBe('yes');
  });

  it('a kernel that dies between runs is restarted, and its next run says the state was lost', async () => {
    const { session, sandbox } = await scriptedSession();
    const other = await session.createContext({ language: 'python' });
    await session.run('lost = yes', { context: other.id });
    sandbox()?.endContext(other.id);
    await new Promise((resolve) => setTimeout(resolve, 10));
    const next = await session.run('lost', { context: other.id });
    expect(next.stateLost).toBe(true);
    expect(next.stateLostReason).toMatch(
      /stopped between runs \(killed by SIGKILL\), so it was restarted and the state of context/,
    );
    expect(next.error?.name).toBe('NameError');
  });

  it('after a sandbox crash, every context is made again on its next use and says its state was lost', async () => {
    const { backend, session } = await scriptedSession();
    const other = await session.createContext({ language: 'bash', cwd: '/tmp' });
    await session.run('lost = yes', { context: other.id });
    backend.sandboxes[0]?.die({ signal: 'SIGKILL' });
    await backend.sandboxes[0]?.exited;
    const next = await session.run('lost', { context: other.id });
    expect(next.stateLostReason).toMatch(
      /^Between runs, the sandbox ended \(killed by SIGKILL\), and every kernel and command in it with it; a new sandbox replaced it, so the state of context/,
    );
    expect(backend.sandboxes[1]?.requests).toContainEqual(
      expect.objectContaining({ type: 'context-create', context: other.id, cwd: '/tmp' }),
    );
    expect((await session.run('1')).stateLost).toBe(true);
    expect(session.listContexts().map((context) => context.id)).toEqual(['python', other.id]);
  });

  it('a sandbox that ends under runs: each keeps its output and says once what ended and what was lost', async () => {
    const { backend, session } = await scriptedSession(
      {},
      {
        execute: (context) =>
          context.code === 'crash'
            ? [
                { type: 'stdout', text: 'before\n' },
                { type: 'sleep', ms: 50 },
                { type: 'exit', reason: 'killed', code: 137 },
              ]
            : context.code === 'busy'
              ? [{ type: 'stdout', text: 'busy\n' }, { type: 'hang' }]
              : toyKernel(context),
      },
    );
    const other = await session.createContext({ language: 'bash' });
    const idle = await session.createContext({ language: 'r' });
    await session.run('lost = yes', { context: idle.id });
    const [crashed, busy] = await Promise.all([session.run('crash'), session.run('busy', { context: other.id })]);
    for (const [execution, output] of [
      [crashed, 'before\n'],
      [busy, 'busy\n'],
    ] as const) {
      expect(execution).toMatchObject({
        status: 'error',
        stateLost: true,
        stdout: output,
        error: { name: 'KernelDied' },
      });
      expect(execution.error?.value).toBe(
        'The sandbox ended (killed), and every kernel and command in it with it. A new sandbox replaces it: the state of every context (variables, imports) was lost. Files in /mnt/data were kept.',
      );
      expect(execution.stateLostReason).toBe(execution.error?.value);
    }
    const next = await session.run('lost', { context: idle.id });
    expect(next.stateLostReason).toMatch(/^Between runs, the sandbox ended \(killed\)/);
    expect((await session.run('1', { context: idle.id })).stateLost).toBeUndefined();
    expect(backend.sandboxes).toHaveLength(2);
  });

  it('session.restart() leaves a fresh python alone; reset() removes the other contexts and clears python', async () => {
    const { session } = await scriptedSession();
    const other = await session.createContext({ language: 'r' });
    await session.run('x = 1', { language: 'bash' });
    await session.restart();
    expect(session.listContexts()).toEqual([{ id: 'python', language: 'python', cwd: '/mnt/data', executionCount: 0 }]);
    await expect(session.run('1', { context: other.id })).rejects.toBeInstanceOf(UnknownContextError);
    expect((await session.run('x', { language: 'bash' })).error?.name).toBe('NameError');

    await session.run('y = 1');
    await session.createContext({ language: 'javascript' });
    await session.reset();
    expect(session.listContexts()).toEqual([{ id: 'python', language: 'python', cwd: '/mnt/data', executionCount: 0 }]);
    expect((await session.run('y')).error?.name).toBe('NameError');
  });

  it("a kernel cannot put output into another context's run", async () => {
    let victimRun: unknown;
    const { session } = await scriptedSession(
      {},
      {
        execute: (context) => {
          if (context.code === 'victim') {
            victimRun = context.executionId;
            return [
              { type: 'sleep', ms: 30 },
              { type: 'stdout', text: 'own\n' },
            ];
          }
          if (context.code === 'forge') {
            return [
              {
                type: 'send',
                from: 'kernel',
                line: { type: 'stream', id: victimRun, name: 'stdout', text: 'forged\n', context: 'python' },
              },
            ];
          }
          return toyKernel(context);
        },
      },
    );
    const victim = session.run('victim');
    await new Promise((resolve) => setTimeout(resolve, 5));
    await session.run('forge', { language: 'javascript' });
    expect((await victim).stdout).toBe('own\n');
  });

  it('an aborted creation leaves no context', async () => {
    const { session } = await scriptedSession();
    const controller = new AbortController();
    controller.abort();
    await expect(session.createContext({ language: 'r', signal: controller.signal })).rejects.toBeInstanceOf(
      AbortError,
    );
    expect(session.listContexts()).toHaveLength(1);
  });

  it('a creation or first run cut short by close fails as closed', async () => {
    const { session, sandbox } = await scriptedSession({}, { kernelStartMs: 1_000 });
    const creating = session.createContext({ language: 'r' });
    const firstRun = session.run('1', { language: 'r' });
    // Both kernels are starting when the session closes.
    await expect.poll(() => sandbox()?.requests.length).toBe(2);
    await session.close();
    await expect(creating).rejects.toBeInstanceOf(SessionClosedError);
    await expect(firstRun).rejects.toBeInstanceOf(SessionClosedError);
  });
});
