/** The mounts of sandcell's own mount namespace, from /proc/self/mountinfo. */
import { readFileSync } from 'node:fs';

export interface MountEntry {
  /** The path inside the filesystem that is mounted (for cgroups: the cgroup the mount starts at). */
  root: string;
  mountPoint: string;
  type: string;
  superOptions: string[];
}

/** Mount points with spaces and other odd characters are octal-escaped. */
function unescapeField(field: string): string {
  return field.replace(/\\([0-7]{3})/g, (_, octal: string) => String.fromCharCode(Number.parseInt(octal, 8)));
}

/** Every mount; empty when /proc is not readable. */
export function readMountInfo(): MountEntry[] {
  let text: string;
  try {
    text = readFileSync('/proc/self/mountinfo', 'utf8');
  } catch {
    return [];
  }
  const entries: MountEntry[] = [];
  for (const line of text.split('\n')) {
    const [left, right] = line.split(' - ');
    if (!left || !right) continue;
    const fields = left.split(' ');
    const [type, , superOptions = ''] = right.split(' ');
    if (!type || fields[3] === undefined || fields[4] === undefined) continue;
    entries.push({
      root: unescapeField(fields[3]),
      mountPoint: unescapeField(fields[4]),
      type,
      superOptions: superOptions.split(','),
    });
  }
  return entries;
}
