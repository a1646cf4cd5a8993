/**
 * Whether a process lives, and who a process is: a pid alone can be recycled,
 * so owners of host objects (Docker objects, uid leases, …) are named by pid,
 * start time and boot id, and an owner is gone when any of them no longer
 * matches.
 */
import { readFileSync } from 'node:fs';
import { readdir } from 'node:fs/promises';
import path from 'node:path';

/** Whether a process id names a live process (one we may not signal counts as alive). */
export function isProcessAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** This boot of the machine (every process of another boot is gone). */
export function bootId(): string {
  try {
    return readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim();
  } catch {
    return 'unknown';
  }
}

/** Start time of a process in clock ticks since boot (field 22 of /proc/PID/stat), or undefined when it is gone. */
export function processStartTime(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return fields[19];
  } catch {
    return undefined;
  }
}

/** A process named so that a recycled pid or a reboot is not mistaken for it. */
export interface ProcessIdentity {
  pid: number;
  start: string;
  boot: string;
}

let own: ProcessIdentity | undefined;

export function ownProcessIdentity(): ProcessIdentity {
  own ??= { pid: process.pid, start: processStartTime(process.pid) ?? 'unknown', boot: bootId() };
  return own;
}

/** True when the process named is no longer running on this machine. */
export function processIsGone(identity: ProcessIdentity): boolean {
  if (identity.boot !== ownProcessIdentity().boot) return true;
  if (!Number.isInteger(identity.pid) || identity.pid <= 0) return true;
  const started = processStartTime(identity.pid);
  return started === undefined || started !== identity.start;
}

/**
 * Removes the entries of `directory` that a sandcell process no longer alive
 * left behind: those whose name matches `pattern` with the owner's pid as its
 * first group (volumes, cgroups: `<pid>-…`, `sandcell-<pid>-…`). A missing
 * directory holds nothing; a failed removal is left for the next sweep.
 */
export async function sweepDeadOwnersEntries(
  directory: string,
  pattern: RegExp,
  remove: (entry: string) => Promise<void>,
): Promise<void> {
  let names: string[];
  try {
    names = await readdir(directory);
  } catch {
    return;
  }
  for (const name of names) {
    const owner = pattern.exec(name)?.[1];
    if (!owner || isProcessAlive(Number(owner))) continue;
    await remove(path.join(directory, name)).catch(() => undefined);
  }
}
