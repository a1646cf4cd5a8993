/**
 * How many times the OOM killer acted inside a running container, read from
 * the container's memory cgroup on this machine. The engine cannot say: its
 * `OOMKilled` is set only when the container itself ends, but with a
 * supervisor inside, one kernel of several dies for memory while the container
 * lives on. Needs a local engine whose cgroups sandcell sees from the root (as
 * for session cgroups); elsewhere the answer is undefined.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { readMountInfo } from '../../internal/mount-info.js';

/** OOM kills in the memory cgroup of process `pid` (a container's init, seen from the host). */
export async function oomKillsOfProcess(pid: number): Promise<number | undefined> {
  let membership: string;
  try {
    membership = await readFile(`/proc/${pid}/cgroup`, 'utf8');
  } catch {
    return undefined;
  }
  const located = memoryCgroupDirectory(membership);
  if (!located) return undefined;
  try {
    const text = await readFile(path.join(located.directory, located.file), 'utf8');
    const match = /^oom_kill (\d+)$/m.exec(text);
    return match ? Number(match[1]) : undefined;
  } catch {
    return undefined;
  }
}

/** Where the memory cgroup of a `/proc/<pid>/cgroup` listing is, and the file that counts its OOM kills. */
function memoryCgroupDirectory(membership: string): { directory: string; file: string } | undefined {
  const mounts = readMountInfo().filter((mount) => mount.root === '/');
  for (const line of membership.split('\n')) {
    const [, controllers, cgroupPath] = line.split(':');
    if (controllers === undefined || cgroupPath === undefined) continue;
    if (controllers.split(',').includes('memory')) {
      const mount = mounts.find((entry) => entry.type === 'cgroup' && entry.superOptions.includes('memory'));
      if (mount) return { directory: path.join(mount.mountPoint, cgroupPath), file: 'memory.oom_control' };
    }
  }
  // cgroup v2: one line, `0::/path`.
  const unified = /^0::(\/.*)$/m.exec(membership)?.[1];
  const mount = mounts.find((entry) => entry.type === 'cgroup2');
  if (unified !== undefined && mount) return { directory: path.join(mount.mountPoint, unified), file: 'memory.events' };
  return undefined;
}
