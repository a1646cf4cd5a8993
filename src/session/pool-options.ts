/** SessionPool's options, their defaults, and what it reports. */
import os from 'node:os';
import type { SessionOptions } from './options.js';

export { DEFAULT_PRELOAD_MODULES } from '../kernel/index.js';

export const DEFAULT_POOL_SIZE = 2;
export const DEFAULT_MAX_SESSIONS = 16;
/** How long a handed-out session may sit unused before it is closed: the one default, for pools and servers. */
export const DEFAULT_IDLE_TIMEOUT_MS = 20 * 60_000;
/**
 * Sandboxes started at once: one more than the CPUs, because a start waits
 * on more than the CPU (bwrap's set-up, the kernel's handshake). Measured on 2
 * busy cores without preloading: 1.3 starts/s two at a time, 1.6 three at a
 * time, 1.7 four at a time with each start much slower (docs/architecture.md, Pool).
 */
export const DEFAULT_START_CONCURRENCY = os.availableParallelism() + 1;
/** Memory warm sessions may hold together, all environments: an eighth of the host's. */
export const DEFAULT_WARM_MEMORY_BYTES = Math.floor(os.totalmem() / 8);
/** How often the pool looks at demand again (to shrink as it falls). */
export const DEFAULT_SIZING_INTERVAL_MS = 1_000;

export interface SessionPoolOptions {
  /**
   * Sessions kept warm and ready in the pool's own environment (`sessionOptions.environmentName`,
   * else `default`), whatever the demand; other environments keep none until they are used. @default 2
   */
  size?: number;
  /**
   * Most sessions warm or starting, all environments together. Above `size`, the
   * pool sizes itself by demand: each environment keeps about (recent arrivals per
   * second × its cold start) + a margin, and shrinks as demand falls. Equal to
   * `size`, the pool keeps exactly `size` (sizing off). Below `size` it is an error.
   * @default `size` (sizing off)
   */
  maxWarm?: number;
  /** Most sessions alive at once, warm and handed out together. @default 16 */
  maxSessions?: number;
  /**
   * Memory warm sessions may hold together, all environments, in bytes. Each warm
   * session counts what its sandbox last measured after warming (cgroup memory, on
   * backends that report it), else 192 MiB. @default an eighth of the host's memory
   */
  warmMemoryBytes?: number;
  /** Sessions started at once while warming (cold starts compete for CPU). @default max(2, CPUs) */
  startConcurrency?: number;
  /** A handed-out session idle (nothing running, no run, command or file operation since it was handed out) this long is closed. @default 1_200_000 (20 min) */
  idleTimeoutMs?: number;
  /**
   * When a caller finds nothing warm and no start under way is left for it, the session started for
   * it skips `preloadModules` (the environment's own warm imports still run): it is ready in a
   * fraction of the CPU, and the user's first `import pandas` costs what it costs. Starts for the
   * warm list preload (unless the pool warms light: `warmLightCpuShare`), and none is made while a
   * caller waits (it would end in a caller's hands, later). The pool falls behind only when the host
   * cannot start sessions as fast as they arrive, and then a preloaded start is what it cannot
   * afford (docs/architecture.md, Pool). `false`: every start preloads, warm ones too. @default true
   */
  lightStartsWhenBehind?: boolean;
  /**
   * The share of the host's cores that preloaded warm starts may keep busy: when the recent arrival
   * rates (the larger of the `rateWindowMs` rate and the same over a tenth of it, so it follows a
   * burst within seconds) × the measured CPU of a preloaded start, all environments together, would
   * exceed it, warm sessions start without `preloadModules` (the modules import on first use), and
   * preload again once that demand is below four fifths of it. Off with `lightStartsWhenBehind:
   * false`. @default 0.6
   */
  warmLightCpuShare?: number;
  /** The host's cores, which `warmLightCpuShare` is a share of. @default os.availableParallelism() */
  cpuCores?: number;
  /** Options of every session; `preloadModules` defaults to numpy, pandas and matplotlib. */
  sessionOptions?: SessionOptions;
  /**
   * The options of a session in the named environment, laid over `sessionOptions`; may throw for a
   * name that is not an environment, before anything starts.
   * @default `{ environmentName: name }`: `Session.create` finds the built environment (or fails with `environment-not-found`)
   */
  resolveEnvironment?: (name: string) => SessionOptions | Promise<SessionOptions>;
  /** How arrivals are averaged: the time constant of the rate, in ms. @default 30_000 */
  rateWindowMs?: number;
  /** How often demand is looked at again. @default 1_000 */
  sizingIntervalMs?: number;
  /** The clock arrival rates are read by (tests pass a fake one); cold starts are timed for real. @default Date.now */
  now?: () => number;
}

export interface PoolEnvironmentStats {
  warm: number;
  starting: number;
  waiting: number;
  /** Warm and starting sessions sizing aims at now. */
  target: number;
  /** Recent new sessions per second. */
  ratePerSecond: number;
  /** Recent cold start (with the preload), in ms. */
  coldStartMs: number;
  /** Sessions started for a waiting caller without the preload (`lightStartsWhenBehind`), since the pool began. */
  lightStarts: number;
  /**
   * Whether warm sessions start without the preload now (`warmLightCpuShare`): a decision for the
   * whole host, the same in every environment.
   */
  warmLight: boolean;
  /** Warm sessions without the preload (started while the pool warmed light; replaced once it does not). */
  lightWarm: number;
  /** CPU-seconds of a preloaded start, lately (measured after warm-up where the backend counts CPU). */
  startCpuSeconds: number;
  /** CPU-seconds of a start without the preload, lately. */
  lightStartCpuSeconds: number;
}

export interface SessionPoolStats {
  warm: number;
  /** Sandboxes starting, to be warm or for a waiting caller. */
  starting: number;
  /** Callers waiting for a session to start (nothing was warm): a backlog when it grows. */
  waiting: number;
  leased: number;
  maxSessions: number;
  /** Most sessions warm or starting, all environments. */
  maxWarm: number;
  /** Per environment in use. */
  environments: Record<string, PoolEnvironmentStats>;
  /** Whether warm sessions start without the preload now (`warmLightCpuShare`; each environment's stats say the same). */
  warmLight: boolean;
  /** Cores that preloaded starts would keep busy at the recent arrival rates (Σ rate × startCpuSeconds). */
  startCpuDemand: number;
  /** Cores they may (`warmLightCpuShare` × `cpuCores`): above it, warm sessions start light. */
  startCpuBudget: number;
  /** The last error met while warming a session, if the latest attempt failed. */
  lastError?: string;
}
