import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { createBubblewrapBackend } from '../src/backends/bubblewrap/index.js';
import { DEFAULT_UID_RANGE } from '../src/backends/uid-leases.js';
import { Session } from '../src/session/session.js';
import { isAlive } from './contract/contract-support.js';
import { hostIsolationCases } from './contract/host-isolation-cases.js';
import { hostHasAccount, hostUidOf, hostUidsOf, leasesOf } from './support/host-uids.js';
import { startSessionOwner } from './support/process.js';

describe('bubblewrap backend on this host', () => {
  const backend = createBubblewrapBackend();

  it('cleans up mounts, cgroups, directories and the uid lease on close', async () => {
    const report = await backend.report();
    const session = await Session.create({ backend });
    const volume = readdirSync(report.runtime.sessionsDirectory).find((name) =>
      name.startsWith(`${process.pid}-${session.id}-`),
    );
    expect(volume).toBeDefined();
    const volumePath = path.join(report.runtime.sessionsDirectory, volume as string);
    const usage = await session.usage();
    if (report.uidLeases) expect(readFileSync('/proc/mounts', 'utf8')).toContain(volumePath);
    const uid = await hostUidOf(session);
    const cgroupDirectories = report.cgroups
      ? Object.values(report.cgroups.parents).flatMap((parent) =>
          readdirSync(parent)
            .filter((name) => name.startsWith(`sandcell-${process.pid}-`))
            .map((name) => path.join(parent, name)),
        )
      : [];
    if (report.cgroups) expect(cgroupDirectories.length).toBeGreaterThan(0);
    if (report.uidLeases) expect(leasesOf(report.uidLeases.directory, uid)).toHaveLength(1);
    await session.close();
    expect(existsSync(volumePath)).toBe(false);
    expect(readFileSync('/proc/mounts', 'utf8')).not.toContain(volumePath);
    for (const directory of cgroupDirectories) expect(existsSync(directory)).toBe(false);
    for (const pid of usage.processIds ?? []) expect(isAlive(pid)).toBe(false);
    if (report.uidLeases) expect(leasesOf(report.uidLeases.directory, uid)).toEqual([]);
  });

  it('runs each session as its own host uid from the reserved range, one no account has, for the whole session', async () => {
    const report = await backend.report();
    expect(report.uidLeases).toBeDefined(); // these tests run as root
    const range = report.uidLeases?.range ?? DEFAULT_UID_RANGE;
    const [first, second] = await Promise.all([Session.create({ backend }), Session.create({ backend })]);
    try {
      const uids = [await hostUidOf(first), await hostUidOf(second)];
      expect(uids[0]).not.toBe(uids[1]);
      for (const uid of uids) {
        expect(uid).toBeGreaterThanOrEqual(range.first);
        expect(uid).toBeLessThanOrEqual(range.last);
        expect(hostHasAccount(uid)).toBe(false);
      }
      // Inside, it is still the user sandbox (uid 1000) of the sandbox's own user namespace.
      expect((await first.run('import os; print(os.getuid())')).stdout).toBe('1000\n');
      // The session's files belong to its uid on the host, and a restarted kernel keeps the uid.
      await first.files.write('mine.txt', 'x');
      const volume = readdirSync(report.runtime.sessionsDirectory).find((name) =>
        name.startsWith(`${process.pid}-${first.id}-`),
      );
      const stats = statSync(path.join(report.runtime.sessionsDirectory, volume as string, 'mine.txt'));
      expect([stats.uid, stats.gid]).toEqual([uids[0], uids[0]]);
      await first.restart();
      expect(await hostUidOf(first)).toBe(uids[0]);
    } finally {
      await Promise.all([first.close(), second.close()]);
    }
  });

  hostIsolationCases(backend);

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
  it('its sandboxes die with it, and the next start removes the mounts, cgroups, directories and uid leases it left', async () => {
    const report = await createBubblewrapBackend().report();
    const { child, id, pids } = await startSessionOwner();
    const volumeName = readdirSync(report.runtime.sessionsDirectory).find((name) =>
      name.startsWith(`${child.pid}-${id}-`),
    );
    const volumePath = path.join(report.runtime.sessionsDirectory, volumeName ?? `${child.pid}-${id}-missing`);
    expect(existsSync(volumePath)).toBe(true);
    const uid = hostUidsOf(pids[0] as number)[0] as number;
    const leaseDirectory = report.uidLeases?.directory;
    if (leaseDirectory) expect(leasesOf(leaseDirectory, uid)).toHaveLength(1);
    child.kill('SIGKILL');
    await new Promise((resolve) => child.once('exit', resolve));
    await expect.poll(() => pids.filter(isAlive).length, { timeout: 5_000 }).toBe(0);
    expect(existsSync(volumePath)).toBe(true); // left behind, until the next start

    if (leaseDirectory) expect(leasesOf(leaseDirectory, uid)).toHaveLength(1); // left behind, until the next start
    await createBubblewrapBackend().ensureAvailable();
    if (leaseDirectory) expect(leasesOf(leaseDirectory, uid)).toEqual([]);
    expect(existsSync(volumePath)).toBe(false);
    expect(readFileSync('/proc/mounts', 'utf8')).not.toContain(volumePath);
    if (report.cgroups) {
      for (const parent of Object.values(report.cgroups.parents)) {
        expect(readdirSync(parent).filter((name) => name.startsWith(`sandcell-${child.pid}-`))).toEqual([]);
      }
    }
  });
});
