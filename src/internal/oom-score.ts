/**
 * The OOM killer's preference, per process (`/proc/<pid>/oom_score_adj`,
 * -1000 … 1000): when the host runs out of memory, a sandbox must go before
 * the server that holds every session. Raising one's own score is always
 * allowed; lowering it needs CAP_SYS_RESOURCE (root), and a score set with
 * that capability also becomes the floor the process can later return to.
 */
import { writeFileSync } from 'node:fs';

/** Sandboxes: the first thing the OOM killer takes. */
export const SANDBOX_OOM_SCORE_ADJ = 1000;
/** The server: far below anything else, but not -1000, which would make it unkillable even when it is the leak. */
export const SERVER_OOM_SCORE_ADJ = -900;

export type OomScoreOutcome = { applied: true; value: number } | { applied: false; value: number; reason: string };

/** Sets this process's oom_score_adj; says why not when the kernel refuses (no CAP_SYS_RESOURCE, no /proc). */
export function setOwnOomScoreAdjust(value: number): OomScoreOutcome {
  try {
    writeFileSync('/proc/self/oom_score_adj', String(value));
    return { applied: true, value };
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    const reason =
      code === 'EACCES' || code === 'EPERM'
        ? 'lowering it needs root (CAP_SYS_RESOURCE)'
        : `the kernel refused it (${(error as Error).message})`;
    return { applied: false, value, reason };
  }
}
