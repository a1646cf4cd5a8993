/**
 * CPU time of a sandbox's processes from /proc, for backends whose cgroups do not account CPU
 * (bubblewrap on a cgroup v1 host puts its kernels in the `cpu` hierarchy, which limits but does not
 * count; the counting one, `cpuacct`, is often mounted apart). Each process counts what it used and
 * what the children it reaped used, so a sandbox's live processes together cover its finished ones.
 */
import { readFile } from 'node:fs/promises';

/** USER_HZ, the unit of /proc/PID/stat's times: 100 on every Linux architecture Node runs on. */
const TICKS_PER_SECOND = 100;

/** CPU-seconds of one process and of the children it reaped (fields 14 to 17 of /proc/PID/stat); 0 once it is gone. */
export async function processCpuSeconds(processId: number): Promise<number> {
  try {
    const stat = await readFile(`/proc/${processId}/stat`, 'utf8');
    // The command name (field 2) may hold spaces and parentheses: the fields after it follow the last ')'.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return fields.slice(11, 15).reduce((sum, field) => sum + (Number(field) || 0), 0) / TICKS_PER_SECOND;
  } catch {
    return 0;
  }
}

/** CPU-seconds of a sandbox's processes together (a finished one is in its parent's count, a live one in its own). */
export async function processesCpuSeconds(processIds: readonly number[]): Promise<number> {
  const each = await Promise.all(processIds.map((processId) => processCpuSeconds(processId)));
  return each.reduce((sum, seconds) => sum + seconds, 0);
}
