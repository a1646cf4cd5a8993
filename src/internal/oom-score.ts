/**
 * The OOM killer's preference, per process (`/proc/<pid>/oom_score_adj`,
 * -1000 … 1000): when the host runs out of memory, a sandbox must go before
 * the server that holds every session. Raising one's own score is always
 * allowed; lowering it needs CAP_SYS_RESOURCE (root, unless a container dropped it), and a score set with
 * that capability also becomes the floor the process can later return to.
 */
import { readFileSync, writeFileSync } from 'node:fs';

/** Sandboxes: the first thing the OOM killer takes. */
export const SANDBOX_OOM_SCORE_ADJ = 1000;
/** The server: far below anything else, but not -1000, which would make it unkillable even when it is the leak. */
export const SERVER_OOM_SCORE_ADJ = -900;

export type OomScoreOutcome = { applied: true; value: number } | { applied: false; value: number; reason: string };

/** CAP_SYS_RESOURCE's bit in the capability sets of /proc/<pid>/status. */
const CAP_SYS_RESOURCE = 24n;

/** Whether the effective capabilities (`CapEff:` of /proc/self/status) hold CAP_SYS_RESOURCE; undefined when unknown. */
export function hasSysResource(status: string): boolean | undefined {
  const effective = /^CapEff:\s*([0-9a-f]+)$/im.exec(status)?.[1];
  return effective === undefined ? undefined : ((BigInt(`0x${effective}`) >> CAP_SYS_RESOURCE) & 1n) === 1n;
}

/**
 * Why lowering was refused, in the words that fix it: root alone is not enough, a container or a
 * systemd unit may run root without CAP_SYS_RESOURCE.
 */
export function permissionReason(uid: number | undefined, status: string | undefined): string {
  if (uid === 0 && status !== undefined && hasSysResource(status) === false) {
    return 'this process runs as root but without CAP_SYS_RESOURCE, which lowering it needs (the container or service dropped it: e.g. docker run --cap-add SYS_RESOURCE, or AmbientCapabilities=CAP_SYS_RESOURCE in a systemd unit)';
  }
  return 'lowering it needs root with CAP_SYS_RESOURCE';
}

/** Sets this process's oom_score_adj; says why not when the kernel refuses (no CAP_SYS_RESOURCE, no /proc). */
export function setOwnOomScoreAdjust(value: number): OomScoreOutcome {
  try {
    writeFileSync('/proc/self/oom_score_adj', String(value));
    return { applied: true, value };
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    const reason =
      code === 'EACCES' || code === 'EPERM'
        ? permissionReason(process.getuid?.(), readStatus())
        : `the kernel refused it (${(error as Error).message})`;
    return { applied: false, value, reason };
  }
}

function readStatus(): string | undefined {
  try {
    return readFileSync('/proc/self/status', 'utf8');
  } catch {
    return undefined;
  }
}
