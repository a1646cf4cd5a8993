/**
 * A test's state directory, removed whole even if a server it started was stopped before it unmounted
 * its volumes' images (as root they are loop mounts under `volumes/owners/…/files`): each is detached
 * first (lazily: a sandbox still stopping may hold it), so nothing under it outlives the test.
 */
import { execFileSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import { readMountInfo } from '../../src/internal/mount-info.js';

export function removeStateDirectory(directory: string): void {
  for (const mount of readMountInfo()
    .filter((entry) => entry.mountPoint.startsWith(`${directory}/`))
    .reverse()) {
    try {
      execFileSync('umount', ['--lazy', mount.mountPoint]);
    } catch {
      // Gone meanwhile.
    }
  }
  // A lazily detached image lets go a moment later (ENOTEMPTY until then, seen once under load): tried again.
  rmSync(directory, { recursive: true, force: true, maxRetries: 10, retryDelay: 100 });
}
