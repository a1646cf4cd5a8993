/**
 * Shell commands in a real sandbox (session.commands): exit codes as data,
 * output streamed in order, stdin, background commands listed and killed, a
 * timeout that takes the whole process group (a grandchild too), the output
 * cap, and nothing left on the host after close. Part of the backend contract.
 */
import { expect, it } from 'vitest';
import type { SandboxBackend } from '../../src/backends/spec.js';
import { SessionClosedError } from '../../src/errors.js';
import { Session } from '../../src/session/session.js';
import { isAlive, withSession } from './contract-support.js';

/** Whether sandbox process `pid` (its number inside the sandbox) still runs, as the sandbox sees it. */
async function runsInSandbox(session: Session, pid: number): Promise<boolean> {
  const result = await session.commands.run(
    `state=$(sed 's/.*) //' /proc/${pid}/stat 2>/dev/null | cut -c1); [ -n "$state" ] && [ "$state" != Z ] && echo yes || echo no`,
  );
  return result.stdout.trim() === 'yes';
}

export function commandCases(backend: SandboxBackend): void {
  it('commands: the exit code is data, stdout and stderr apart; they run beside code', async () => {
    await withSession(backend, {}, async (session) => {
      const ok = await session.commands.run('echo out; echo err >&2');
      expect(ok).toMatchObject({
        exitCode: 0,
        stdout: 'out\n',
        stderr: 'err\n',
        timedOut: false,
        outputTruncated: false,
      });
      expect((await session.commands.run('exit 3')).exitCode).toBe(3);
      const missing = await session.commands.run('no-such-program-here');
      expect(missing.exitCode).toBe(127);
      expect(missing.stderr).toContain('not found');
      // A command runs while the python context is busy.
      const busy = session.run('import time\ntime.sleep(1)\n"slept"');
      expect((await session.commands.run('echo beside')).stdout).toBe('beside\n');
      expect((await busy).results[0]?.data['text/plain']).toBe("'slept'");
      const where = await session.commands
        .run('pwd; echo "$GREETING"; id -un; ls', {
          cwd: 'sub',
          env: { GREETING: 'hi' },
        })
        .catch((error) => error);
      // A working directory that is not there is the caller's mistake.
      expect(where).toMatchObject({ code: 'invalid-input' });
      await session.files.write('sub/file.txt', 'x');
      expect(
        (await session.commands.run('pwd; echo "$GREETING"; id -un; ls', { cwd: 'sub', env: { GREETING: 'hi' } }))
          .stdout,
      ).toBe('/mnt/data/sub\nhi\nsandbox\nfile.txt\n');
    });
  });

  it('commands: output streams as it comes, in order, stdout and stderr interleaved as written', async () => {
    await withSession(backend, {}, async (session) => {
      const seen: string[] = [];
      const result = await session.commands.run(
        'echo one; sleep 0.3; echo two >&2; sleep 0.3; echo three; sleep 0.3; echo four >&2',
        {
          onStdout: (text) => seen.push(`out:${text}`),
          onStderr: (text) => seen.push(`err:${text}`),
        },
      );
      expect(seen).toEqual(['out:one\n', 'err:two\n', 'out:three\n', 'err:four\n']);
      expect(result).toMatchObject({ stdout: 'one\nthree\n', stderr: 'two\nfour\n', exitCode: 0 });
    });
  });

  it('commands: stdin text then end of file; a background command fed and closed', async () => {
    await withSession(backend, {}, async (session) => {
      expect((await session.commands.run('wc -l', { stdin: 'a\nb\nc\n' })).stdout.trim()).toBe('3');
      expect((await session.commands.run('cat')).stdout).toBe(''); // no stdin: empty, not waiting
      const cat = await session.commands.run('cat', { background: true, stdin: 'first\n' });
      cat.sendStdin('second\n');
      cat.closeStdin();
      expect(await cat.wait()).toMatchObject({ exitCode: 0, stdout: 'first\nsecond\n' });
    });
  });

  it('commands: background ones are listed and killed by pid; kill of an unknown pid is false', async () => {
    await withSession(backend, {}, async (session) => {
      const sleeper = await session.commands.run('sleep 600', { background: true });
      expect(await runsInSandbox(session, sleeper.pid)).toBe(true);
      const listed = await session.commands.list();
      expect(listed).toEqual([
        { id: sleeper.id, pid: sleeper.pid, command: 'sleep 600', cwd: '/mnt/data', startedMs: expect.any(Number) },
      ]);
      expect(await session.commands.kill(sleeper.pid)).toBe(true);
      expect(await sleeper.wait()).toMatchObject({ signal: 'SIGKILL', exitCode: 137, timedOut: false });
      expect(await runsInSandbox(session, sleeper.pid)).toBe(false);
      expect(await session.commands.list()).toEqual([]);
      expect(await session.commands.kill(sleeper.pid)).toBe(false);
    });
  });

  it('commands: past its timeout a command is killed with its whole process group, a grandchild included', async () => {
    await withSession(backend, {}, async (session) => {
      const result = await session.commands.run(
        'sh -c "sleep 600 & echo \\$! > /mnt/data/grandchild.pid; wait" & wait',
        { timeoutMs: 1000 },
      );
      expect(result).toMatchObject({ timedOut: true, signal: 'SIGKILL', exitCode: 137 });
      const grandchild = Number((await session.files.read('grandchild.pid')).toString().trim());
      expect(grandchild).toBeGreaterThan(1);
      expect(await runsInSandbox(session, grandchild)).toBe(false);
    });
  });

  it('commands: output past outputBytes is cut per stream and says so', async () => {
    await withSession(backend, { outputBytes: 64 * 1024 }, async (session) => {
      const result = await session.commands.run(
        'head -c 1000000 /dev/zero | tr "\\0" x; head -c 100 /dev/zero | tr "\\0" e >&2',
      );
      expect(result.outputTruncated).toBe(true);
      expect(Buffer.byteLength(result.stdout)).toBeLessThanOrEqual(64 * 1024);
      expect(Buffer.byteLength(result.stdout)).toBeGreaterThan(32 * 1024);
      expect(result.stderr).toBe('e'.repeat(100));
    });
  });

  it('commands: a background command is killed on close and leaves no process on the host', async () => {
    const session = await Session.create({ backend });
    const sleeper = await session.commands.run('sleep 600 & sleep 600', { background: true });
    const usage = await session.usage();
    await session.close();
    await expect(sleeper.wait()).rejects.toBeInstanceOf(SessionClosedError);
    for (const pid of usage.processIds ?? []) expect(isAlive(pid)).toBe(false);
  });
}
