/** What the host sees of a sandbox's identity: the uid its processes run as, and per-uid kernel limits. */
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { expect } from 'vitest';
import type { Session } from '../../src/session/session.js';

/** The real, effective, saved and file-system uids of a host process (/proc/PID/status). */
export function hostUidsOf(pid: number): number[] {
  const line = /^Uid:\s+(.*)$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? '';
  return line.trim().split(/\s+/).map(Number);
}

/** The one host uid every process of a session runs as. */
export async function hostUidOf(session: Session): Promise<number> {
  const pids = (await session.usage()).processIds ?? [];
  expect(pids.length).toBeGreaterThan(0);
  const uids = new Set(pids.flatMap(hostUidsOf));
  expect(uids.size).toBe(1);
  return [...uids][0] as number;
}

/** Whether the host's account database (files and every other NSS source) names this uid or gid. */
export function hostHasAccount(id: number): boolean {
  for (const database of ['passwd', 'group']) {
    try {
      execFileSync('getent', [database, String(id)], { stdio: 'ignore' });
      return true;
    } catch {
      // exit status 2: no such entry
    }
  }
  return false;
}

/** Python that opens inotify instances until the kernel refuses, keeps them, and prints how many it got. */
export const OPEN_INOTIFY_INSTANCES = `import ctypes
libc = ctypes.CDLL(None, use_errno=True)
held = []
while len(held) < 4096:
    descriptor = libc.inotify_init1(0)
    if descriptor < 0:
        break
    held.append(descriptor)
print("opened", len(held), "errno", ctypes.get_errno())`;

/** The per-uid cap on inotify instances (fs.inotify.max_user_instances). */
export function inotifyInstancesPerUser(): number {
  return Number(readFileSync('/proc/sys/fs/inotify/max_user_instances', 'utf8'));
}

/** The lease files held for `uid` in a lease directory (`<uid>.<token>`). */
export function leasesOf(directory: string, uid: number): string[] {
  return readdirSync(directory).filter((name) => name.startsWith(`${uid}.`));
}

/**
 * The `setpriv` arguments that run what follows as another host account, with every privilege
 * dropped: `uid`, primary group `gid` (the uid's own by default) and only the supplementary `groups`.
 */
export function asAccount(account: { uid: number; gid?: number; groups?: number[] }): string[] {
  const groups = account.groups ?? [];
  return [
    `--reuid=${account.uid}`,
    `--regid=${account.gid ?? account.uid}`,
    ...(groups.length > 0 ? [`--groups=${groups.join(',')}`] : ['--clear-groups']),
    '--inh-caps=-all',
    '--',
  ];
}
