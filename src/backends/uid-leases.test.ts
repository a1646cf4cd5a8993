import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { BackendUnavailableError } from '../errors.js';
import { ownProcessIdentity, processStartTime } from '../internal/process-alive.js';
import {
  checkUidRangeIsFree,
  DEFAULT_UID_RANGE,
  parseUidRange,
  resolveUidRange,
  type UidLease,
  UidLeases,
} from './uid-leases.js';

const directories: string[] = [];
function leaseDirectory(): string {
  const directory = path.join(mkdtempSync(path.join(os.tmpdir(), 'sandcell-leases-')), 'leases');
  directories.push(path.dirname(directory));
  return directory;
}
afterEach(() => {
  for (const directory of directories.splice(0)) rmSync(directory, { recursive: true, force: true });
});

/** A lease file as another sandcell process would have left it. */
function plantLease(directory: string, uid: number, owner: { pid: number; start: string; boot: string }): string {
  const file = path.join(directory, `${uid}.${Math.random().toString(16).slice(2, 10)}`);
  writeFileSync(file, JSON.stringify({ ...owner, purpose: 'test' }));
  return file;
}

/** A pid that was a real process and has ended. */
function deadPid(): number {
  const child = spawnSync('/bin/true');
  return child.pid as number;
}

describe('the uid range', () => {
  it('defaults to 65,536 ids that no common account, dynamic or subordinate range uses', () => {
    expect(resolveUidRange(undefined)).toEqual(DEFAULT_UID_RANGE);
    expect(DEFAULT_UID_RANGE.last - DEFAULT_UID_RANGE.first + 1).toBe(65536);
    expect(DEFAULT_UID_RANGE.first).toBeGreaterThan(1879048191); // above systemd's container ranges
    expect(DEFAULT_UID_RANGE.last).toBeLessThan(0x7ffe0000); // below systemd's foreign range and the upper half
  });

  it('reads START-END and refuses anything else, saying how to set it', () => {
    expect(parseUidRange('200000-200999')).toEqual({ first: 200000, last: 200999 });
    for (const bad of ['200000', '5-1', '0-100', '65000-66000', 'a-b', '1-4294967295']) {
      expect(() => parseUidRange(bad)).toThrow(BackendUnavailableError);
      expect(() => parseUidRange(bad)).toThrow(/SANDCELL_UID_RANGE=START-END/);
    }
  });

  it('is refused when a host account or a subordinate id range overlaps it', async () => {
    await expect(checkUidRangeIsFree({ first: 1, last: 70 })).rejects.toThrow(/includes the account \w+ \(\d+\)/);
    const directory = leaseDirectory();
    const subuid = path.join(path.dirname(directory), 'subuid');
    writeFileSync(subuid, 'alice:1974206000:65536\n');
    const sources = { subuid, subgid: '/nonexistent' };
    await expect(checkUidRangeIsFree(DEFAULT_UID_RANGE, sources)).rejects.toThrow(
      /overlaps alice's subordinate ids 1974206000-1974271535 in .*subuid. Choose a range/,
    );
    await expect(
      checkUidRangeIsFree(DEFAULT_UID_RANGE, { subuid: '/nonexistent', subgid: '/nonexistent' }),
    ).resolves.toBe(undefined);
  });
});

describe('uid leases', () => {
  it('hand out distinct uids across processes sharing the directory, and release them', async () => {
    const directory = leaseDirectory();
    const range = { first: 300000, last: 300063 };
    // Two lease sets over one directory stand for two sandcell processes.
    const first = new UidLeases({ range, directory });
    const second = new UidLeases({ range, directory });
    await Promise.all([first.prepare(), second.prepare()]);
    const leases: UidLease[] = await Promise.all(
      Array.from({ length: 48 }, (_, index) => (index % 2 ? first : second).acquire(`session ${index}`)),
    );
    const uids = leases.map((lease) => lease.uid);
    expect(new Set(uids).size).toBe(48);
    for (const lease of leases) {
      expect(lease.uid).toBeGreaterThanOrEqual(range.first);
      expect(lease.uid).toBeLessThanOrEqual(range.last);
      expect(lease.gid).toBe(lease.uid);
    }
    expect(readdirSync(directory)).toHaveLength(48);
    await Promise.all(leases.map((lease) => lease.release()));
    await leases[0]?.release(); // idempotent
    expect(readdirSync(directory)).toEqual([]);
  });

  it('say so when every uid of the range is leased', async () => {
    const leases = new UidLeases({ range: { first: 300000, last: 300001 }, directory: leaseDirectory() });
    await leases.prepare();
    await leases.acquire('a');
    await leases.acquire('b');
    await expect(leases.acquire('c')).rejects.toThrow(/Every host uid of 300000-300001 is leased/);
  });

  it('sweep a lease whose owner is gone (dead pid, recycled pid, other boot), and keep a live one', async () => {
    const directory = leaseDirectory();
    const leases = new UidLeases({ range: { first: 300000, last: 300000 }, directory });
    await leases.prepare();
    const own = ownProcessIdentity();
    const dead = plantLease(directory, 300000, { pid: deadPid(), start: own.start, boot: own.boot });
    const recycled = plantLease(directory, 300000, { pid: own.pid, start: `${own.start}0`, boot: own.boot });
    const rebooted = plantLease(directory, 300000, { ...own, boot: 'another-boot' });
    const live = plantLease(directory, 300001, own);
    expect(await leases.sweep()).toBe(3);
    for (const file of [dead, recycled, rebooted]) expect(existsSync(file)).toBe(false);
    expect(existsSync(live)).toBe(true);
  });

  it('take over a uid whose lease was left by a dead owner, but never one a live owner holds', async () => {
    const directory = leaseDirectory();
    const leases = new UidLeases({ range: { first: 300000, last: 300000 }, directory });
    await leases.prepare();
    const own = ownProcessIdentity();
    const left = plantLease(directory, 300000, { pid: deadPid(), start: own.start, boot: own.boot });
    const lease = await leases.acquire('after a crash');
    expect(lease.uid).toBe(300000);
    expect(existsSync(left)).toBe(false);
    await lease.release();
    plantLease(directory, 300000, own);
    await expect(leases.acquire('while held')).rejects.toThrow(/is leased/);
  });

  it('keep respecting a live owner they have read before, and take over once that owner dies', async () => {
    const directory = leaseDirectory();
    const leases = new UidLeases({ range: { first: 300000, last: 300000 }, directory });
    await leases.prepare();
    const other = spawn('sleep', ['60']);
    try {
      const pid = other.pid as number;
      plantLease(directory, 300000, { pid, start: processStartTime(pid) as string, boot: ownProcessIdentity().boot });
      await expect(leases.acquire('while the other process lives')).rejects.toThrow(/is leased/);
      await expect(leases.acquire('again')).rejects.toThrow(/is leased/);
      const exited = new Promise((resolve) => other.once('exit', resolve));
      other.kill('SIGKILL');
      await exited;
      const lease = await leases.acquire('after the other process died');
      expect(lease.uid).toBe(300000);
      await lease.release();
      expect(readdirSync(directory)).toEqual([]);
    } finally {
      other.kill('SIGKILL');
    }
  });

  it('refuse a lease directory others can use', async () => {
    const directory = leaseDirectory();
    const leases = new UidLeases({ range: DEFAULT_UID_RANGE, directory });
    await leases.prepare();
    const { chmodSync } = await import('node:fs');
    chmodSync(directory, 0o777);
    await expect(new UidLeases({ range: DEFAULT_UID_RANGE, directory }).prepare()).rejects.toThrow(/mode 0700/);
  });
});
