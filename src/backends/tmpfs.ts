/**
 * A session's /mnt/data as a tmpfs on this host: what it holds, and changing
 * its size while it is mounted. Both backends use it where the mount is
 * visible to sandcell (bubblewrap as root; Docker with a local engine).
 */
import { execFile } from 'node:child_process';
import { statfs } from 'node:fs/promises';
import { promisify } from 'node:util';
import { readMountInfo } from '../internal/mount-info.js';

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
  // size=0 means "no limit" to tmpfs: never ask for it.
  if (floorToPage(bytes) < PAGE_BYTES) throw new RangeError(`A tmpfs cannot be sized below one page (${bytes}).`);
  await execFileAsync('mount', ['-o', `remount,size=${floorToPage(bytes)}`, directory]);
}

/** Whether a tmpfs is mounted at `directory` in sandcell's own mount namespace (the last mount there wins). */
export function isTmpfsMountPoint(directory: string): boolean {
  const mounts = readMountInfo().filter((mount) => mount.mountPoint === directory);
  return mounts.at(-1)?.type === 'tmpfs';
}
