/**
 * Which sandcell process owns a Docker object, and whether that process is
 * gone: objects carry the owner's host, boot, pid and start time, so a
 * recycled pid or a reboot is not mistaken for a live owner, and objects of
 * other machines sharing the engine are left alone.
 */
import { readFileSync } from 'node:fs';
import os from 'node:os';
import { OWNER_LABELS } from './container-config.js';

function bootId(): string {
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

let own: Record<string, string> | undefined;

/** Labels naming this process as the owner. */
export function ownerLabels(): Record<string, string> {
  own ??= {
    [OWNER_LABELS.host]: os.hostname(),
    [OWNER_LABELS.boot]: bootId(),
    [OWNER_LABELS.pid]: String(process.pid),
    [OWNER_LABELS.start]: processStartTime(process.pid) ?? 'unknown',
  };
  return own;
}

/** True when the labels name a sandcell process on this machine that no longer runs. */
export function ownerIsGone(labels: Record<string, string> | undefined): boolean {
  if (!labels) return false;
  const mine = ownerLabels();
  if (labels[OWNER_LABELS.host] !== mine[OWNER_LABELS.host]) return false;
  // Same host, another boot: every process of that boot is gone.
  if (labels[OWNER_LABELS.boot] !== mine[OWNER_LABELS.boot]) return true;
  const pid = Number(labels[OWNER_LABELS.pid]);
  if (!Number.isInteger(pid) || pid <= 0) return true;
  const started = processStartTime(pid);
  return started === undefined || started !== labels[OWNER_LABELS.start];
}
