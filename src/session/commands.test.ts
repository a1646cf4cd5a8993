/**
 * session.commands on the scripted backend: results as data, streaming,
 * stdin, background handles, list and kill, timeouts and aborts, the host's
 * caps and bounds, and a command's end with its sandbox or session. What a
 * real sandbox must do (process groups, grandchildren) is in test/contract/.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { toyShell } from '../../test/support/toy-shell.js';
import { createScriptedBackend, type ScriptedBackendOptions } from '../backends/scripted/index.js';
import {
  AbortError,
  InvalidInputError,
  KernelRequestError,
  SandboxCrashedError,
  SessionClosedError,
  TooManyCommandsError,
} from '../errors.js';
import type { SessionOptions } from './options.js';
import { Session } from './session.js';

const sessions: Session[] = [];
async function scriptedSession(options: SessionOptions = {}, backendOptions: ScriptedBackendOptions = {}) {
  const backend = createScriptedBackend({
    command: toyShell,
    execute: ({ code }) => (code === 'wait' ? [{ type: 'hang' }] : []),
    ...backendOptions,
  });
  const session = await Session.create({ ...options, backend });
  sessions.push(session);
  return { backend, session, sandbox: () => backend.sandboxes.at(-1) };
}

afterEach(async () => {
  await Promise.all(sessions.splice(0).map((session) => session.close()));
});

const sentOfType = (requests: unknown[] | undefined, type: string) =>
  (requests ?? []).filter((request) => (request as { type?: string }).type === type);

describe('session.commands on the scripted backend', () => {
  it('gives the exit code and output as data, a failure included, streaming as it comes', async () => {
    const { session, sandbox } = await scriptedSession();
    const seen: string[] = [];
    const result = await session.commands.run('both', {
      onStdout: (text) => seen.push(`out:${text}`),
      onStderr: (text) => seen.push(`err:${text}`),
    });
    expect(result).toEqual({
      exitCode: 0,
      stdout: 'one\nthree\n',
      stderr: 'two\n',
      durationMs: expect.any(Number),
      timedOut: false,
      outputTruncated: false,
    });
    expect(seen).toEqual(['out:one\n', 'err:two\n', 'out:three\n']);
    const failed = await session.commands.run('fail 3');
    expect(failed).toMatchObject({ exitCode: 3, stderr: 'failing\n', timedOut: false });
    expect((await session.commands.run('nosuch')).exitCode).toBe(127);
    expect(sentOfType(sandbox()?.requests, 'command-start')[0]).toEqual({
      type: 'command-start',
      id: 'command-1',
      command: 'both',
      stdin: false,
    });
  });

  it('passes the working directory (relative to /mnt/data) and environment, and stdin text then end of file', async () => {
    const { session } = await scriptedSession();
    expect((await session.commands.run('where', { cwd: 'sub', env: { GREETING: 'hi' } })).stdout).toBe(
      '/mnt/data/sub hi',
    );
    const piped = await session.commands.run('cat', { stdin: 'line 1\nline 2\n' });
    expect(piped).toMatchObject({ exitCode: 0, stdout: 'line 1\nline 2\n' });
  });

  it('runs in the background: a handle with a pid, listed, fed stdin, waited for', async () => {
    const { session } = await scriptedSession();
    const handle = await session.commands.run('cat', { background: true, stdin: 'first\n' });
    expect(handle.pid).toBeGreaterThan(0);
    const listed = await session.commands.list();
    expect(listed).toEqual([
      { id: handle.id, pid: handle.pid, command: 'cat', cwd: '/mnt/data', startedMs: expect.any(Number) },
    ]);
    handle.sendStdin('second\n');
    handle.closeStdin();
    handle.sendStdin('ignored after close\n');
    expect(await handle.wait()).toMatchObject({ exitCode: 0, stdout: 'first\nsecond\n' });
    expect(await session.commands.list()).toEqual([]);
    expect(session.busy).toBe(false);
  });

  it('kills by pid (false for one it does not know) and by handle; a killed command reports its signal', async () => {
    const { session } = await scriptedSession();
    const first = await session.commands.run('sleep', { background: true });
    const second = await session.commands.run('sleep', { background: true });
    expect(await session.commands.kill(first.pid)).toBe(true);
    expect(await first.wait()).toMatchObject({
      exitCode: 137,
      signal: 'SIGKILL',
      timedOut: false,
      stdout: 'started\n',
    });
    expect(await session.commands.kill(first.pid)).toBe(false);
    expect(await session.commands.kill(999_999)).toBe(false);
    expect(await second.kill('SIGTERM')).toBe(true);
    expect(await second.wait()).toMatchObject({ exitCode: 143, signal: 'SIGTERM' });
    expect(await second.kill()).toBe(false);
    await expect(second.kill('SIGSTOP' as 'SIGKILL')).rejects.toBeInstanceOf(InvalidInputError);
  });

  it('kills a command past its timeout, and one whose signal aborts; an aborted one never starts', async () => {
    const { session, sandbox } = await scriptedSession();
    const timed = await session.commands.run('sleep', { timeoutMs: 20 });
    expect(timed).toMatchObject({ timedOut: true, signal: 'SIGKILL', exitCode: 137, stdout: 'started\n' });
    expect(sentOfType(sandbox()?.requests, 'command-signal')).toEqual([
      { type: 'command-signal', id: 'command-1', signal: 'SIGKILL' },
    ]);
    const controller = new AbortController();
    const aborted = session.commands.run('sleep', { signal: controller.signal });
    setTimeout(() => controller.abort(), 10);
    expect(await aborted).toMatchObject({ timedOut: false, signal: 'SIGKILL' });
    await expect(session.commands.run('echo x', { signal: controller.signal })).rejects.toBeInstanceOf(AbortError);
  });

  it('a command waited for uses the session timeout; a background one has none unless given', async () => {
    const { session } = await scriptedSession({ timeoutMs: 30 });
    expect((await session.commands.run('sleep')).timedOut).toBe(true);
    const background = await session.commands.run('sleep', { background: true });
    await new Promise((resolve) => setTimeout(resolve, 60));
    expect((await session.commands.list()).map((command) => command.pid)).toEqual([background.pid]);
    expect((await background.kill()) && (await background.wait()).timedOut).toBe(false);
  });

  it('keeps outputBytes of each stream, whatever the sandbox sends', async () => {
    const { session } = await scriptedSession({ outputBytes: 4096 });
    const seen: string[] = [];
    const flood = await session.commands.run('flood', { onStdout: (text) => seen.push(text) });
    expect(flood.outputTruncated).toBe(true);
    expect(flood.stdout).toBe(`${'x'.repeat(3000)}${'y'.repeat(1096)}`);
    expect(seen.join('')).toBe(flood.stdout);
    expect(flood.stderr).toBe('e'.repeat(4096));
  });

  it('refuses bad input and too many running commands with typed errors', async () => {
    const { session } = await scriptedSession({ maxCommands: 2, maxCodeBytes: 64 });
    for (const bad of [
      () => session.commands.run('a\0b'),
      () => session.commands.run('x'.repeat(65)),
      () => session.commands.run(42 as unknown as string),
      () => session.commands.run('echo', { cwd: '' }),
      () => session.commands.run('echo', { env: { '1BAD': 'x' } }),
      () => session.commands.run('echo', { env: { GOOD: 'v'.repeat(40_000) } }),
      () => session.commands.run('echo', { timeoutMs: -1 }),
      () => session.commands.run('cat', { stdin: 'z'.repeat(65) }),
    ]) {
      await expect(bad()).rejects.toBeInstanceOf(InvalidInputError);
    }
    await expect(session.commands.run('nowhere')).rejects.toThrow(/could not start: no such directory: \/nowhere/);
    await expect(session.commands.run('nowhere', { background: true })).rejects.toBeInstanceOf(InvalidInputError);
    await expect(session.commands.run('unspawnable')).rejects.toBeInstanceOf(KernelRequestError);
    const running = await Promise.all([
      session.commands.run('sleep', { background: true }),
      session.commands.run('sleep', { background: true }),
    ]);
    await expect(session.commands.run('echo x')).rejects.toBeInstanceOf(TooManyCommandsError);
    await running[0]?.kill();
    await running[0]?.wait();
    expect((await session.commands.run('echo x')).stdout).toBe('x\n');
  });

  it('runs beside code: a hanging execution does not hold a command up', async () => {
    const { session } = await scriptedSession();
    const controller = new AbortController();
    const hanging = session.run('wait', { signal: controller.signal });
    expect((await session.commands.run('echo beside')).stdout).toBe('beside\n');
    controller.abort();
    expect((await hanging).error?.name).toBe('KeyboardInterrupt');
  });

  it('a foreground command makes the session busy; a background one only active (not idle)', async () => {
    const { session } = await scriptedSession();
    expect(session.active).toBe(false);
    const background = await session.commands.run('sleep', { background: true });
    expect(session.busy).toBe(false);
    expect(session.active).toBe(true);
    const controller = new AbortController();
    const foreground = session.commands.run('sleep', { signal: controller.signal });
    await new Promise((resolve) => setTimeout(resolve, 5));
    expect(session.busy).toBe(true);
    controller.abort();
    await foreground;
    await background.kill();
  });

  it('commands end with their sandbox: a crash fails them, restart kills them, close rejects them', async () => {
    const { backend, session } = await scriptedSession();
    const victim = await session.commands.run('sleep', { background: true });
    await expect(session.commands.run('crash')).rejects.toBeInstanceOf(SandboxCrashedError);
    await expect(victim.wait()).rejects.toThrow(/The command was killed: the sandbox ended/);

    const beforeRestart = await session.commands.run('sleep', { background: true });
    await session.restart();
    expect(await beforeRestart.wait()).toMatchObject({ signal: 'SIGKILL', exitCode: 137 });
    expect(await session.commands.list()).toEqual([]);

    const beforeClose = await session.commands.run('sleep', { background: true });
    await session.close();
    await expect(beforeClose.wait()).rejects.toBeInstanceOf(SessionClosedError);
    await expect(session.commands.run('echo x')).rejects.toBeInstanceOf(SessionClosedError);
    await expect(session.commands.list()).rejects.toBeInstanceOf(SessionClosedError);
    expect(backend.liveSandboxes).toHaveLength(0);
  });

  it('reset kills every command', async () => {
    const { session } = await scriptedSession();
    const running = await session.commands.run('sleep', { background: true });
    await session.reset();
    expect(await running.wait()).toMatchObject({ signal: 'SIGKILL' });
    expect(await session.commands.list()).toEqual([]);
  });

  it("a kernel cannot forge a command's output", async () => {
    const { session } = await scriptedSession(
      {},
      {
        execute: () => [
          {
            type: 'send',
            from: 'kernel',
            line: { type: 'command-output', id: 'command-1', name: 'stdout', text: 'forged\n' },
          },
        ],
      },
    );
    const handle = await session.commands.run('sleep', { background: true });
    await session.run('forge');
    await handle.kill();
    expect((await handle.wait()).stdout).toBe('started\n');
  });
});
