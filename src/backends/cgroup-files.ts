/** Helpers both backends use on the host's cgroup filesystems. */
import { readdir, readFile, rmdir } from 'node:fs/promises';
import path from 'node:path';

/**
 * How long removing a cgroup keeps trying: killed processes on a loaded
 * machine can take a while to exit, and a cgroup with processes cannot go.
 */
export const CGROUP_REMOVAL_MS = 5_000;

/** Kills what is left in a cgroup and everything below it, then removes them, deepest first. */
export async function removeCgroupTree(directory: string): Promise<void> {
  let children: string[] = [];
  try {
    children = (await readdir(directory, { withFileTypes: true }))
      .filter((entry) => entry.isDirectory())
      .map((entry) => path.join(directory, entry.name));
  } catch {
    return;
  }
  for (const child of children) await removeCgroupTree(child);
  const deadline = Date.now() + CGROUP_REMOVAL_MS;
  for (let attempt = 0; ; attempt++) {
    try {
      for (const line of (await readFile(path.join(directory, 'cgroup.procs'), 'utf8')).split('\n')) {
        if (line) process.kill(Number(line), 'SIGKILL');
      }
      await rmdir(directory);
      return;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT' || Date.now() > deadline) return;
      await new Promise((resolve) => setTimeout(resolve, Math.min(50, 5 * (attempt + 1))));
    }
  }
}
