/**
 * What every backend must give the host as root, beyond the sandbox boundary:
 * a host OOM takes a sandbox before the server, and per-uid kernel limits are
 * per session (each session runs as its own host uid). Shared by the
 * bubblewrap and Docker suites, which call it inside their own describe.
 */
import { readFileSync } from 'node:fs';
import { expect, it } from 'vitest';
import type { SandboxBackend } from '../../src/backends/spec.js';
import { Session } from '../../src/session/session.js';
import { inotifyInstancesPerUser, OPEN_INOTIFY_INSTANCES } from '../support/host-uids.js';
import { canLowerOomScore } from '../support/process.js';

export function hostIsolationCases(backend: SandboxBackend): void {
  it('gives sandboxes the highest oom_score_adj, so a host OOM takes a sandbox first', async () => {
    const session = await Session.create({ backend });
    try {
      const pids = (await session.usage()).processIds ?? [];
      expect(pids.length).toBeGreaterThan(0);
      for (const pid of pids) expect(readFileSync(`/proc/${pid}/oom_score_adj`, 'utf8').trim()).toBe('1000');
      // Set with CAP_SYS_RESOURCE, the score is also the floor; without it (some containers deny it even to root)
      // the code could go back down to the score sandcell itself has.
      const lower = await session.run(
        'try:\n    with open("/proc/self/oom_score_adj", "w") as score:\n        score.write("0")\n    print("LOWERED")\nexcept OSError as error:\n    print("refused", type(error).__name__)',
      );
      expect(lower.stdout).toMatch(canLowerOomScore() ? /^refused/ : /^(refused|LOWERED)/);
    } finally {
      await session.close();
    }
  });

  it("one session's inotify instances do not use up another's (per-uid kernel limits are per session)", async () => {
    const hog = await Session.create({ backend });
    const other = await Session.create({ backend });
    try {
      const held = await hog.run(OPEN_INOTIFY_INSTANCES);
      expect(Number(/opened (\d+)/.exec(held.stdout)?.[1])).toBeGreaterThanOrEqual(inotifyInstancesPerUser() - 8);
      const after = await other.run(OPEN_INOTIFY_INSTANCES.replace('len(held) < 4096', 'len(held) < 1'));
      expect(after.stdout).toMatch(/^opened 1 /);
    } finally {
      await Promise.all([hog.close(), other.close()]);
    }
  });
}
