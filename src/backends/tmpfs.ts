/**
 * A session's /mnt/data as a tmpfs on this host: what it holds, and changing
 * its size while it is mounted. Both backends use it where the mount is
 * visible to sandcell (bubblewrap as root; Docker with a local engine).
 */
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { statfs } from 'node:fs/promises';
import { promisify } from 'node:util';

const execFileAsync = promisify(execFile);

/** tmpfs sizes are whole pages. */
export const PAGE_BYTES = 4096;

export function floorToPage(bytes: number): number {
  return Math.max(0, Math.floor(bytes / PAGE_BYTES) * PAGE_BYTES);
}

/** Bytes the files in the tmpfs at `directory` occupy (whole pages). */
export async function tmpfsUsedBytes(directory: string): Promise<number> {
  const stats = await statfs(directory);
  return (stats.blocks - stats.bfree) * stats.bsize;
}

/**
 * Sets the size of the tmpfs mounted at `directory`; the files stay. The
 * kernel refuses a size below what the files occupy (mount exits non-zero).
 */
export async function resizeTmpfs(directory: string, bytes: number): Promise<void> {
  await execFileAsync('mount', ['-o', `remount,size=${floorToPage(bytes)}`, directory]);
}

/** Whether a tmpfs is mounted exactly at `directory` in sandcell's own mount namespace. */
export function isTmpfsMountPoint(directory: string): boolean {
  let mountInfo: string;
  try {
    mountInfo = readFileSync('/proc/self/mountinfo', 'utf8');
  } catch {
    return false;
  }
  for (const line of mountInfo.split('\n')) {
    const [left, right] = line.split(' - ');
    if (!left || !right) continue;
    // Spaces and other odd characters in mount points are octal-escaped.
    const mountPoint = left
      .split(' ')[4]
      ?.replace(/\\([0-7]{3})/g, (_, octal) => String.fromCharCode(parseInt(octal, 8)));
    if (mountPoint === directory && right.startsWith('tmpfs ')) return true;
  }
  return false;
}
