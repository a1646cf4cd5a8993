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
 * kernel refuses a size below what the files occupy (mount exits non-zero,
 * and this rejects). Resizes asked for in the same tick share one process.
 */
export function resizeTmpfs(directory: string, bytes: number): Promise<void> {
  // size=0 means "no limit" to tmpfs: never ask for it.
  if (floorToPage(bytes) < PAGE_BYTES) {
    return Promise.reject(new RangeError(`A tmpfs cannot be sized below one page (${bytes}).`));
  }
  return new Promise((resolve, reject) => {
    if (queuedResizes.length === 0) queueMicrotask(runQueuedResizes);
    queuedResizes.push({ directory, sizeBytes: floorToPage(bytes), resolve, reject });
  });
}

interface QueuedResize {
  directory: string;
  sizeBytes: number;
  resolve(): void;
  reject(error: Error): void;
}

let queuedResizes: QueuedResize[] = [];

/** Resizes one shell runs, each a `mount` of its own (bounded: they are its arguments). */
const RESIZES_PER_PROCESS = 128;

/**
 * The shell remounts each pair of its arguments (size, directory) and prints
 * mount's exit status for each, one a line. Starting a process blocks Node's
 * event loop for milliseconds: when a new session makes a hundred volumes
 * shrink, one process instead of a hundred keeps the server answering.
 */
const RESIZE_SCRIPT =
  'while [ $# -gt 1 ]; do mount -o "remount,size=$1" -- "$2" >/dev/null 2>&1; echo $?; shift 2; done';

function runQueuedResizes(): void {
  const queued = queuedResizes;
  queuedResizes = [];
  for (let start = 0; start < queued.length; start += RESIZES_PER_PROCESS) {
    void runResizes(queued.slice(start, start + RESIZES_PER_PROCESS));
  }
}

async function runResizes(resizes: QueuedResize[]): Promise<void> {
  let statuses: string[] = [];
  try {
    const pairs = resizes.flatMap((resize) => [String(resize.sizeBytes), resize.directory]);
    const { stdout } = await execFileAsync('/bin/sh', ['-c', RESIZE_SCRIPT, 'sandcell-resize', ...pairs]);
    statuses = stdout.split('\n');
  } catch {
    // The shell itself failed: every resize counts as failed.
  }
  resizes.forEach((resize, index) => {
    if (statuses[index] === '0') resize.resolve();
    else {
      resize.reject(
        new Error(
          `mount -o remount,size=${resize.sizeBytes} ${resize.directory} failed (${statuses[index] || 'no status'})`,
        ),
      );
    }
  });
}

/** Whether a tmpfs is mounted at `directory` in sandcell's own mount namespace (the last mount there wins). */
export function isTmpfsMountPoint(directory: string): boolean {
  const mounts = readMountInfo().filter((mount) => mount.mountPoint === directory);
  return mounts.at(-1)?.type === 'tmpfs';
}
