import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { createBubblewrapBackend } from '../src/backends/bubblewrap/index.js';
import { Session } from '../src/session/session.js';
import { isAlive } from './contract/backend-contract.js';
import { canLowerOomScore, startSessionOwner } from './support/process.js';

describe('bubblewrap backend on this host', () => {
  const backend = createBubblewrapBackend();

  it('runs sandboxes as an unprivileged host account, and cleans up mounts, cgroups and directories on close', async () => {
    const report = await backend.report();
    const session = await Session.create({ backend });
    const volume = readdirSync(report.runtime.sessionsDirectory).find((name) => name.endsWith(`-${session.id}`));
    expect(volume).toBeDefined();
    const volumePath = path.join(report.runtime.sessionsDirectory, volume as string);
    const usage = await session.usage();
    if (report.runAs) {
      expect(report.runAs.uid).not.toBe(0);
      expect(readFileSync('/proc/mounts', 'utf8')).toContain(volumePath);
      // Every process of the sandbox belongs to the sandbox account on the host.
      for (const pid of usage.processIds ?? []) {
        const uid = /^Uid:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
        expect(Number(uid)).toBe(report.runAs.uid);
      }
    }
    const cgroupDirectories = report.cgroups
      ? Object.values(report.cgroups.parents).flatMap((parent) =>
          readdirSync(parent)
            .filter((name) => name.startsWith(`sandcell-${process.pid}-`))
            .map((name) => path.join(parent, name)),
        )
      : [];
    if (report.cgroups) expect(cgroupDirectories.length).toBeGreaterThan(0);
    await session.close();
    expect(existsSync(volumePath)).toBe(false);
    expect(readFileSync('/proc/mounts', 'utf8')).not.toContain(volumePath);
    for (const directory of cgroupDirectories) expect(existsSync(directory)).toBe(false);
    for (const pid of usage.processIds ?? []) expect(isAlive(pid)).toBe(false);
  });

  it('gives sandboxes the highest oom_score_adj, so a host OOM takes a sandbox first', async () => {
    const session = await Session.create({ backend });
    try {
      const pids = (await session.usage()).processIds ?? [];
      expect(pids.length).toBeGreaterThan(0);
      for (const pid of pids) expect(readFileSync(`/proc/${pid}/oom_score_adj`, 'utf8').trim()).toBe('1000');
      // Set with CAP_SYS_RESOURCE, the score is also the floor; without it (some containers deny it even to root)
      // the code could go back down to the score sandcell itself has.
      const lower = await session.run(
        'try:\n    with open("/proc/self/oom_score_adj", "w") as score:\n        score.write("0")\n    print("LOWERED")\nexcept OSError as error:\n    print("refused", type(error).__name__)',
      );
      expect(lower.stdout).toMatch(canLowerOomScore() ? /^refused/ : /^(refused|LOWERED)/);
    } finally {
      await session.close();
    }
  });

  it('caps memory with a cgroup when it has one', async () => {
    const report = await backend.report();
    if (!report.cgroups) return;
    const session = await Session.create({ backend, limits: { memoryBytes: 128 * 1024 * 1024 } });
    try {
      const execution = await session.run('hog = b"x" * (512 * 1024 * 1024)');
      expect(execution.error?.name).toBe('KernelDied');
      expect(execution.error?.value).toContain('more memory than its limit');
      expect(execution.stateLost).toBe(true);
    } finally {
      await session.close();
    }
  });
});

describe('after sandcell itself is killed', () => {
  it('its sandboxes die with it, and the next start removes the mounts, cgroups and directories it left', async () => {
    const report = await createBubblewrapBackend().report();
    const { child, id, pids } = await startSessionOwner();
    const volumePath = path.join(report.runtime.sessionsDirectory, `${child.pid}-${id}`);
    expect(existsSync(volumePath)).toBe(true);
    child.kill('SIGKILL');
    await new Promise((resolve) => child.once('exit', resolve));
    await expect.poll(() => pids.filter(isAlive).length, { timeout: 5_000 }).toBe(0);
    expect(existsSync(volumePath)).toBe(true); // left behind, until the next start

    await createBubblewrapBackend().ensureAvailable();
    expect(existsSync(volumePath)).toBe(false);
    expect(readFileSync('/proc/mounts', 'utf8')).not.toContain(volumePath);
    if (report.cgroups) {
      for (const parent of Object.values(report.cgroups.parents)) {
        expect(readdirSync(parent).filter((name) => name.startsWith(`sandcell-${child.pid}-`))).toEqual([]);
      }
    }
  });
});
