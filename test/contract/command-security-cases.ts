/**
 * The security probes run from a shell command (session.commands): host
 * files, the network, another session's files, fork, memory and disk bombs,
 * an endless command. Each starts with a harmless canary command in the same
 * session. Part of the security contract.
 */
import { randomBytes } from 'node:crypto';
import { expect, it } from 'vitest';
import type { SandboxBackend } from '../../src/backends/spec.js';
import type { CommandResult } from '../../src/session/command.js';
import type { SessionOptions } from '../../src/session/options.js';
import type { Session } from '../../src/session/session.js';
import { connectionsDuring, withHostSecret } from '../support/host-bait.js';
import { withSession } from './contract-support.js';

async function canaryCommand(session: Session): Promise<void> {
  const token = randomBytes(6).toString('hex');
  const result = await session.commands.run(`echo canary-${token}`);
  expect(result).toMatchObject({ exitCode: 0, stdout: `canary-${token}\n` });
}

/** Runs `command` after the canary, in a fresh session. */
async function probe(backend: SandboxBackend, command: string, options: SessionOptions = {}): Promise<CommandResult> {
  return withSession(backend, options, async (session) => {
    await canaryCommand(session);
    return session.commands.run(command, { timeoutMs: 30_000 });
  });
}

export function commandSecurityCases(backend: SandboxBackend): void {
  // /home/user is the session's own files (E2B's working directory), not the host's /home.
  it('a command cannot read /etc/shadow or a secret in the host user home', async () => {
    await withHostSecret(async ({ directory: secretDirectory, file: secretFile, text: secret }) => {
      const result = await probe(
        backend,
        `for target in /etc/shadow ${secretFile} /root/.bashrc; do cat "$target" >/dev/null 2>&1 && echo "$target READ" || echo "$target blocked"; done; ls -d /root/* /home/* ${secretDirectory}/* 2>/dev/null | grep -vx /home/user | wc -l`,
      );
      expect(result.stdout).not.toContain('READ');
      expect(result.stdout).not.toContain(secret);
      expect(result.stdout.match(/blocked/g)).toHaveLength(3);
      expect(result.stdout.trim().split('\n').at(-1)).toBe('0');
    });
  });

  it('a command has no network: not an IP, not the metadata service, not the host loopback, not DNS', async () => {
    const connections = await connectionsDuring(async (port) => {
      const result = await probe(
        backend,
        `for target in 1.1.1.1/53 169.254.169.254/80 127.0.0.1/${port}; do (timeout 3 bash -c "exec 3<>/dev/tcp/$target && echo CONNECTED $target" 2>/dev/null) || echo "blocked $target"; done; getent hosts example.com && echo RESOLVED || echo "blocked dns"`,
      );
      expect(result.stdout).not.toMatch(/CONNECTED|RESOLVED|host-secret/);
      expect(result.stdout.match(/blocked/g)).toHaveLength(4);
    });
    expect(connections).toBe(0);
  });

  it("a command cannot find another session's files, only its own", async () => {
    const marker = `session-file-${randomBytes(6).toString('hex')}`;
    await withSession(backend, {}, async (other) => {
      await other.files.write(`${marker}-other.txt`, 'private');
      await withSession(backend, {}, async (session) => {
        await canaryCommand(session);
        // Its own file is found, so the search works: the other session's is not there to find.
        await session.files.write(`${marker}-own.txt`, 'mine');
        // Everything but the host's read-only /usr and the sandbox's own /proc and /sys (searching them costs seconds).
        const result = await session.commands.run(
          `find / \\( -path /usr -o -path /proc -o -path /sys \\) -prune -o -name '${marker}*' -print 2>/dev/null`,
          { timeoutMs: 30_000 },
        );
        // Its own file shows at /mnt/data, and again at /home/user (E2B's working directory) and /workspace
        // (the OpenAI Agents SDK's) where those are mounts of the same storage (gVisor's are links to it,
        // which find does not follow).
        const found = result.stdout.trim().split('\n').sort();
        expect(found).toContain(`/mnt/data/${marker}-own.txt`);
        const roots = ['/home/user', '/mnt/data', '/workspace'];
        expect(found.filter((file) => !roots.some((root) => file === `${root}/${marker}-own.txt`))).toEqual([]);
      });
    });
  });

  it('a fork bomb from a command stops at the process limit; the session goes on', async () => {
    await withSession(backend, { limits: { processes: 64 } }, async (session) => {
      await canaryCommand(session);
      // Python rather than a shell loop: bash retries a refused fork for up to 15 s, so the command
      // would only end at its timeout. This one spawns until refused, says so, and ends its children.
      const bomb = [
        'import subprocess',
        'children = []',
        'try:',
        '    for _ in range(200): children.append(subprocess.Popen(["sleep", "30"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))',
        'except OSError as error: print("refused after", len(children), "-", error.strerror)',
        'for child in children: child.kill()',
      ].join('\n');
      const result = await session.commands.run(`python3 -c '${bomb}'`, { timeoutMs: 30_000 });
      expect(result.timedOut).toBe(false);
      expect(result.stdout).toMatch(/^refused after \d+ - Resource temporarily unavailable/);
      expect(Number(/refused after (\d+)/.exec(result.stdout)?.[1])).toBeLessThan(64);
      await canaryCommand(session);
      expect((await session.run('1 + 1')).results[0]?.data['text/plain']).toBe('2');
    });
  });

  it("a memory bomb from a command dies within the memory limit; the kernel's state is kept", async () => {
    await withSession(backend, { limits: { memoryBytes: 256 * 1024 * 1024 } }, async (session) => {
      await canaryCommand(session);
      await session.run('kept = "yes"');
      const result = await session.commands.run('python3 -c \'hog = []\nwhile True: hog.append(b"x" * (32 << 20))\'', {
        timeoutMs: 30_000,
      });
      expect(result.exitCode).not.toBe(0);
      expect(result.timedOut).toBe(false);
      expect((await session.run('kept')).results[0]?.data['text/plain']).toBe("'yes'");
      await canaryCommand(session);
    });
  });

  it('a command cannot fill the disk: /mnt/data and /tmp are capped', async () => {
    const MiB = 1024 * 1024;
    const result = await probe(
      backend,
      'for directory in /mnt/data /tmp; do dd if=/dev/zero of=$directory/fill.bin bs=1M count=512 2>/dev/null; echo "$directory $(stat -c %s $directory/fill.bin)"; rm -f $directory/fill.bin; done',
      { limits: { dataBytes: 16 * MiB, tmpBytes: 16 * MiB, fileSizeBytes: 16 * MiB } },
    );
    const lines = result.stdout.trim().split('\n');
    expect(lines).toHaveLength(2);
    for (const line of lines) expect(Number(line.split(' ')[1])).toBeLessThanOrEqual(16 * MiB);
  });

  it('an endless command stops at its timeout, and the session goes on', async () => {
    await withSession(backend, {}, async (session) => {
      await canaryCommand(session);
      const result = await session.commands.run('sleep 3600', { timeoutMs: 800 });
      expect(result).toMatchObject({ timedOut: true, signal: 'SIGKILL' });
      await canaryCommand(session);
    });
  });
}
