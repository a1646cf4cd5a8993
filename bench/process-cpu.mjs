import { readFileSync } from 'node:fs';

const TICKS_PER_SECOND = 100;

/**
 * CPU-seconds of a process alone (utime + stime; 0 once it is gone). A template's own: the helpers it reaps are
 * in their session's usage already.
 */
export function cpuOf(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return fields.slice(11, 13).reduce((sum, field) => sum + Number(field), 0) / TICKS_PER_SECOND;
  } catch {
    return 0;
  }
}
