/** Resource limits of one sandbox, their defaults, and their validation. */
import { InvalidInputError } from '../errors.js';

export interface SandboxLimits {
  /** Memory of all processes together (a cgroup where the host offers one, else RLIMIT_AS per process). @default 2 GiB */
  memoryBytes: number;
  /** Processes and threads. @default 256 */
  processes: number;
  /** CPU time of one kernel process over its life, in seconds (RLIMIT_CPU). @default 3600 */
  cpuSeconds: number;
  /** CPU cores' worth of time per period (cgroup CPU quota), where cgroups are available. @default 1 */
  cpus: number;
  /** Largest file the code may write (RLIMIT_FSIZE). @default 1 GiB */
  fileSizeBytes: number;
  /**
   * Size of /mnt/data. Its files are RAM and count against `memoryBytes`, so it
   * is capped further at what leaves the kernel room to start (see dataCapacityBytes). @default 1 GiB
   */
  dataBytes: number;
  /** Size of /tmp. @default 512 MiB */
  tmpBytes: number;
  /** Open file descriptors per process. @default 1024 */
  openFiles: number;
}

const MiB = 1024 * 1024;
const GiB = 1024 * MiB;

export const DEFAULT_LIMITS: Readonly<SandboxLimits> = Object.freeze({
  memoryBytes: 2 * GiB,
  processes: 256,
  cpuSeconds: 3600,
  cpus: 1,
  fileSizeBytes: GiB,
  dataBytes: GiB,
  tmpBytes: 512 * MiB,
  openFiles: 1024,
});

/** Memory a session's files may never take from its kernel: enough to start Python and clean up. */
export const KERNEL_MEMORY_RESERVE_BYTES = 128 * MiB;

/**
 * How much /mnt/data may hold: `dataBytes`, but never so much that files
 * (which share the session's memory budget and outlive the kernel) leave a
 * restarted kernel too little memory to start and delete them. The reserve
 * is 128 MiB, or half the budget when that is smaller.
 */
export function dataCapacityBytes(limits: Pick<SandboxLimits, 'dataBytes' | 'memoryBytes'>): number {
  const reserve = Math.min(KERNEL_MEMORY_RESERVE_BYTES, limits.memoryBytes / 2);
  return Math.floor(Math.min(limits.dataBytes, limits.memoryBytes - reserve));
}

const MINIMUMS: Record<keyof SandboxLimits, number> = {
  memoryBytes: 64 * MiB,
  processes: 8,
  cpuSeconds: 1,
  cpus: 0.01,
  fileSizeBytes: 1024,
  dataBytes: MiB,
  tmpBytes: MiB,
  openFiles: 64,
};

/** Fills defaults and rejects nonsense (negative, NaN, too small to start Python). */
export function resolveLimits(limits: Partial<SandboxLimits> = {}): SandboxLimits {
  const resolved = { ...DEFAULT_LIMITS };
  for (const [key, value] of Object.entries(limits) as [keyof SandboxLimits, number | undefined][]) {
    if (value === undefined) continue;
    if (!(key in DEFAULT_LIMITS)) {
      throw new InvalidInputError(`Unknown limit \`${key}\`; known limits: ${Object.keys(DEFAULT_LIMITS).join(', ')}.`);
    }
    if (typeof value !== 'number' || !Number.isFinite(value) || value < MINIMUMS[key]) {
      throw new InvalidInputError(
        `Limit \`${key}\` must be a number of at least ${MINIMUMS[key]}; got ${String(value)}.`,
      );
    }
    resolved[key] = value;
  }
  return resolved;
}
