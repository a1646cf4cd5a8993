/**
 * Which running sandboxes stand on an environment's root filesystem. A
 * bubblewrap sandbox mounts `<rootfs>/usr` as its /usr; removing the build
 * under it would take its Python away mid-session. `/proc/PID/root/usr`
 * resolves through that process's own mounts, so a sandbox's /usr has the
 * device and inode of the build's /usr — no registry of sessions needed, and
 * it sees sandboxes of every sandcell process on the machine.
 */
import { readdir, readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { isSessionTemplate } from '../backends/bubblewrap/zygote.js';

/**
 * Pids of processes whose /usr is `<rootfs>/usr` (none when the build is gone). A session template
 * (bubblewrap/zygote.ts) is not counted: it holds no session, and lets its root go when idle.
 */
export async function processesOnRootfs(rootfs: string): Promise<number[]> {
  const usr = await stat(path.join(rootfs, 'usr')).catch(() => undefined);
  if (!usr) return [];
  const pids: number[] = [];
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    // A process that ended meanwhile, or one we may not look into, is not counted.
    const theirs = await stat(`/proc/${entry}/root/usr`).catch(() => undefined);
    if (!theirs || theirs.dev !== usr.dev || theirs.ino !== usr.ino) continue;
    const commandLine = await readFile(`/proc/${entry}/cmdline`, 'utf8').catch(() => '');
    if (!isSessionTemplate(commandLine.split('\0'))) pids.push(Number(entry));
  }
  return pids;
}
