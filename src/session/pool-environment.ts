/**
 * One environment's share of the pool: its warm sessions, the ones starting,
 * the callers waiting for one, and what sizing needs to know of it (the recent
 * arrival rate, how long its sessions take to start, how much memory a warm one
 * holds). The pool decides; this keeps the books.
 */
import { ArrivalRate } from './arrival-rate.js';
import type { Session } from './session.js';
import { INITIAL_LIGHT_START_CPU_SECONDS, INITIAL_PRELOADED_START_CPU_SECONDS } from './warm-light.js';

/** A first guess at a cold start on a busy 2-core host, until one is measured. */
export const INITIAL_COLD_START_MS = 2_000;
/**
 * A first guess at a warm session's memory (IPython with numpy, pandas and
 * matplotlib imported), until a backend that measures it says; also the figure
 * used for backends that do not measure.
 */
export const INITIAL_WARM_SESSION_BYTES = 192 * 2 ** 20;
/** Weight of the newest measurement in the running averages of cold start and footprint. */
const MEASUREMENT_WEIGHT = 0.3;

/**
 * How much shorter the window of `recentArrivals` is than the sizing rate's: 3 s for the default 30 s, so a
 * steady stream that preloaded starts cannot keep up with turns warming light within about 2 s, before
 * its backlog empties the warm list (with 10 s that took 7 s, and a few seconds of callers waiting).
 */
const RECENT_WINDOW_DIVISOR = 10;

/** A caller waiting for a session; a failed start fails the first one with its error. */
export interface Waiter {
  resolve: (session: Session) => void;
  reject: (error: Error) => void;
}

export class PoolEnvironment {
  readonly warm: Session[] = [];
  readonly starting = new Set<Promise<Session | undefined>>();
  /** Callers waiting for a session that is starting, first come first served. */
  readonly waiters: Waiter[] = [];
  readonly arrivals: ArrivalRate;
  /**
   * The same arrivals over a tenth of the window (3 s by default): warming light follows the larger
   * of the two, so it starts within seconds of a sustained burst (the 30 s rate reaches half of a new
   * steady rate only after 21 s, by when a backlog has built) and stops as slowly as the 30 s rate falls.
   */
  readonly recentArrivals: ArrivalRate;
  coldStartMs = INITIAL_COLD_START_MS;
  warmSessionBytes = INITIAL_WARM_SESSION_BYTES;
  failuresInARow = 0;
  /** Sessions started without the preload for callers waiting (for stats). */
  lightStarts = 0;
  /** Warm sessions started without the preload (while the pool warms light). */
  readonly lightSessions = new WeakSet<Session>();
  /** CPU of a start with the preload and without, lately: what keeping the warm list full costs. */
  preloadedStartCpuSeconds = INITIAL_PRELOADED_START_CPU_SECONDS;
  lightStartCpuSeconds = INITIAL_LIGHT_START_CPU_SECONDS;
  retryTimer?: NodeJS.Timeout;
  /** What sizing asked for last (for stats). */
  target = 0;

  constructor(
    readonly name: string,
    readonly minimum: number,
    rateWindowMs: number,
  ) {
    this.arrivals = new ArrivalRate(rateWindowMs);
    this.recentArrivals = new ArrivalRate(rateWindowMs / RECENT_WINDOW_DIVISOR);
  }

  /** Warm and starting: the sessions this environment has on their way to a caller. */
  get pipeline(): number {
    return this.warm.length + this.starting.size;
  }

  /** Starting sessions no waiter has claimed yet. */
  get unclaimedStarts(): number {
    return Math.max(0, this.starting.size - this.waiters.length);
  }

  /** Waiters no start is on its way for yet. */
  get uncoveredWaiters(): number {
    return Math.max(0, this.waiters.length - this.starting.size);
  }

  /** Whether it holds nothing and nobody wants it: the pool may forget it. */
  get unused(): boolean {
    return this.pipeline === 0 && this.waiters.length === 0 && this.minimum === 0 && this.retryTimer === undefined;
  }

  recordColdStart(durationMs: number): void {
    this.coldStartMs += MEASUREMENT_WEIGHT * (durationMs - this.coldStartMs);
  }

  /** Warm sessions without the preload. */
  get lightWarm(): number {
    return this.warm.filter((session) => this.lightSessions.has(session)).length;
  }

  recordArrival(now: number): void {
    this.arrivals.record(now);
    this.recentArrivals.record(now);
  }

  /** Arrivals per second for warming light: quick to rise, slow to fall. */
  demandRate(now: number): number {
    return Math.max(this.arrivals.perSecond(now), this.recentArrivals.perSecond(now));
  }

  recordStartCpu(light: boolean, seconds: number): void {
    if (light) this.lightStartCpuSeconds += MEASUREMENT_WEIGHT * (seconds - this.lightStartCpuSeconds);
    else this.preloadedStartCpuSeconds += MEASUREMENT_WEIGHT * (seconds - this.preloadedStartCpuSeconds);
  }

  recordWarmFootprint(bytes: number): void {
    this.warmSessionBytes += MEASUREMENT_WEIGHT * (bytes - this.warmSessionBytes);
  }

  forgetClosed(): void {
    for (let index = this.warm.length - 1; index >= 0; index--) {
      if (this.warm[index]?.closed) this.warm.splice(index, 1);
    }
  }
}
