/**
 * SessionPool keeps sessions pre-warmed (kernel up, the usual data modules
 * imported), hands one out at once and refills in the background. A session
 * is never reused: a closed one is gone, and the pool starts a new one. It
 * is the one place that closes idle sessions: a server listens (onIdleClose)
 * rather than keeping its own clock.
 *
 * Contexts and commands: a warm session has its python context alone and runs
 * no command (only the preload ran in it). A session never comes back to the
 * pool, so none carries another user's contexts or commands: closing it (by
 * the holder, for idling, or with the pool) ends all of them with its sandbox.
 * A session running anything (code, a command someone waits for, or a
 * background command) is not idle; its idle clock restarts when the work ends.
 *
 * Per environment and sized by demand (pool-sizing.ts, arrival-rate.ts;
 * pool-environment.ts keeps the books). At most `startConcurrency` (CPUs + 1)
 * sandboxes start at once: unbounded, a backlog of callers starts everything
 * together and every start slows down. When callers wait, a start made for one
 * skips the preload, and warm sessions start light past a share of the cores
 * (warm-light.ts). A `network` other than the pool's own starts a session
 * apart (a channel cannot be added to a running sandbox), in a warm session's
 * room when the pool is full.
 *
 * A little over 500 lines, kept whole: what stands alone is apart already
 * (options and stats in pool-options.ts, one environment's warm sessions in
 * pool-environment.ts, the sizing rule in pool-sizing.ts, light warming in
 * warm-light.ts); what is left is one scheduler — acquiring, filling,
 * resizing and reaping all read and change the same counts of sessions
 * leased, warm and starting.
 */
import os from 'node:os';
import { isolatedBackend } from '../environments/select.js';
import { DEFAULT_ENVIRONMENT_NAME, type Isolation } from '../environments/types.js';
import { InvalidInputError, PoolExhaustedError, SandcellError, SessionClosedError } from '../errors.js';
import { type NetworkOption, resolveNetworkOption } from '../network/network-option.js';
import type { VolumeStore } from '../volumes/volume-store.js';
import type { SessionOptions, VolumeMount } from './options.js';
import { PoolEnvironment } from './pool-environment.js';
import {
  DEFAULT_IDLE_TIMEOUT_MS,
  DEFAULT_MAX_SESSIONS,
  DEFAULT_POOL_SIZE,
  DEFAULT_PRELOAD_MODULES,
  DEFAULT_SIZING_INTERVAL_MS,
  DEFAULT_START_CONCURRENCY,
  DEFAULT_WARM_MEMORY_BYTES,
  type PoolEnvironmentStats,
  type SessionPoolOptions,
  type SessionPoolStats,
} from './pool-options.js';
import { IDLE_RATE_PER_SECOND, warmTarget } from './pool-sizing.js';
import { Session } from './session.js';
import { DEFAULT_WARM_LIGHT_CPU_SHARE, warmsLight } from './warm-light.js';

export * from './pool-options.js';

/** After a failed warm-up, wait this long, doubling with each further failure up to the maximum. */
const REFILL_RETRY_MS = 1_000;
const REFILL_RETRY_MAX_MS = 30_000;
const REFILL_DELAY_MS = 20;
/** Between an environment's name and an isolation in a pool environment's name (`default@gvisor`). */
const ISOLATED = '@';

export interface AcquireOptions {
  /** The environment the session runs in. @default the pool's own (`sessionOptions.environmentName`, else `default`) */
  environment?: string;
  /**
   * The session's network. One other than the pool's is never a warm session's (the channel to a
   * gate is bound in when a sandbox starts and cannot be added to a running one): it starts cold.
   */
  network?: NetworkOption;
  /**
   * Volumes to mount, and whose they are (`owner`, in `volumes`). A session with volumes is never a warm
   * one (its sandbox binds them in as it starts): it starts cold, as one with a network of its own does.
   */
  mounts?: VolumeMount[];
  owner?: string;
  volumes?: VolumeStore;
  /**
   * The wall the session must run behind (an API key's): `gvisor` sessions run on the gVisor backend,
   * whatever the pool's, and are kept warm apart (`NAME@gvisor`): never is one of another backend's handed out.
   */
  isolation?: Isolation;
}

export class SessionPool {
  private readonly size: number;
  private readonly maxWarm: number;
  private readonly maxSessions: number;
  private readonly warmMemoryBytes: number;
  private readonly startConcurrency: number;
  private readonly idleTimeoutMs: number;
  private readonly lightStartsWhenBehind: boolean;
  private readonly warmLightCpuShare: number;
  private readonly cpuCores: number;
  /** Warm sessions start without the preload: preloaded ones would take more than the CPU share (warm-light.ts). */
  private warmLight = false;
  private readonly sessionOptions: SessionOptions;
  private readonly resolveEnvironment: (name: string) => SessionOptions | Promise<SessionOptions>;
  /** The environment `size` is kept warm in, and that a caller naming none gets (a server's `serve --env`). */
  private readonly homeEnvironment: string;
  private readonly rateWindowMs: number;
  private readonly now: () => number;
  private readonly environments = new Map<string, PoolEnvironment>();
  private readonly leased = new Set<Session>();
  /** When each session was handed out: time spent warm in the pool is not idleness. */
  private readonly handedOutAt = new WeakMap<Session, number>();
  /** Sandboxes starting, for the pool or for a caller: what the start concurrency bounds. */
  private startsInFlight = 0;
  private lastError?: Error;
  private readonly reaper: NodeJS.Timeout;
  private readonly sizer?: NodeJS.Timeout;
  private readonly idleListeners = new Set<(session: Session) => void | Promise<void>>();
  private closed = false;
  /** Sessions starting for one caller with a network other than the pool's, not for a warm list. */
  private startingApart = 0;

  constructor(options: SessionPoolOptions = {}) {
    this.size = Math.max(0, Math.floor(options.size ?? DEFAULT_POOL_SIZE));
    this.maxWarm = Math.floor(options.maxWarm ?? this.size);
    if (this.maxWarm < this.size) {
      throw new InvalidInputError(`\`maxWarm\` (${this.maxWarm}) must be at least \`size\` (${this.size}).`);
    }
    this.maxSessions = Math.max(1, Math.floor(options.maxSessions ?? DEFAULT_MAX_SESSIONS));
    this.warmMemoryBytes = options.warmMemoryBytes ?? DEFAULT_WARM_MEMORY_BYTES;
    this.startConcurrency = Math.max(1, Math.floor(options.startConcurrency ?? DEFAULT_START_CONCURRENCY));
    this.idleTimeoutMs = options.idleTimeoutMs ?? DEFAULT_IDLE_TIMEOUT_MS;
    this.lightStartsWhenBehind = options.lightStartsWhenBehind ?? true;
    this.warmLightCpuShare = options.warmLightCpuShare ?? DEFAULT_WARM_LIGHT_CPU_SHARE;
    this.cpuCores = options.cpuCores ?? os.availableParallelism();
    if (!(this.warmLightCpuShare >= 0) || !(this.cpuCores > 0)) {
      throw new InvalidInputError('`warmLightCpuShare` must be at least 0 and `cpuCores` above 0.');
    }
    this.sessionOptions = {
      ...options.sessionOptions,
      preloadModules: options.sessionOptions?.preloadModules ?? DEFAULT_PRELOAD_MODULES,
    };
    this.resolveEnvironment = options.resolveEnvironment ?? ((name) => ({ environmentName: name }));
    this.homeEnvironment =
      options.sessionOptions?.environmentName ?? (process.env.SANDCELL_ENVIRONMENT || DEFAULT_ENVIRONMENT_NAME);
    this.rateWindowMs = options.rateWindowMs ?? 30_000;
    this.now = options.now ?? Date.now;
    this.environment(this.homeEnvironment);
    this.reaper = setInterval(() => void this.reapIdle(), Math.min(30_000, Math.max(50, this.idleTimeoutMs / 4)));
    this.reaper.unref();
    if (this.sizing) {
      this.sizer = setInterval(() => this.resize(), options.sizingIntervalMs ?? DEFAULT_SIZING_INTERVAL_MS);
      this.sizer.unref();
    }
  }

  /** Whether the pool sizes itself by demand (`maxWarm` above `size`). */
  private get sizing(): boolean {
    return this.maxWarm > this.size;
  }

  /** Starts warming and resolves once `size` sessions are ready (or rejects with the error that stopped one). */
  async start(): Promise<void> {
    this.fill();
    const defaults = this.environment(this.homeEnvironment);
    // Starts beyond the concurrency bound begin as earlier ones end (each end fills again).
    while (!this.closed && defaults.warm.length < this.size && defaults.starting.size > 0) {
      const results = await Promise.all([...defaults.starting]);
      if (results.some((session) => session === undefined)) {
        if (this.lastError) throw this.lastError;
        return;
      }
    }
  }

  /** A ready session of the environment: a warm one at once, else the next one of it to start (slower), within `maxSessions`. */
  async acquire(options: AcquireOptions = {}): Promise<Session> {
    if (this.closed) throw new SessionClosedError('pool');
    const environmentName = options.environment ?? this.homeEnvironment;
    const name = options.isolation ? `${environmentName}${ISOLATED}${options.isolation}` : environmentName;
    // An unknown name fails here, before it takes any room in the pool.
    await this.optionsOf(name);
    this.forgetClosed();
    const apart: SessionOptions = {
      ...(options.network !== undefined && !sameNetwork(options.network, this.sessionOptions.network)
        ? { network: options.network }
        : {}),
      ...(options.mounts?.length
        ? {
            mounts: options.mounts,
            ...(options.owner !== undefined ? { owner: options.owner } : {}),
            ...(options.volumes ? { volumes: options.volumes } : {}),
          }
        : {}),
    };
    if (Object.keys(apart).length > 0) return this.lease(await this.startApart(name, apart));
    const environment = this.environment(name);
    environment.recordArrival(this.now());
    return this.lease(environment.warm.shift() ?? (await this.waitForStart(environment)));
  }

  private lease(session: Session): Session {
    this.leased.add(session);
    this.handedOutAt.set(session, Date.now());
    // Refill a moment later: starting a sandbox costs the event loop a few
    // milliseconds, which should not land on the caller's first run.
    setTimeout(() => this.fill(), REFILL_DELAY_MS).unref();
    return session;
  }

  /**
   * Calls `listener` with each handed-out session the pool closes for idling,
   * just before it closes it (a server records why the session went, or pauses
   * it: the close waits for the promise it returns). Returns the function that
   * stops listening.
   */
  onIdleClose(listener: (session: Session) => void | Promise<void>): () => void {
    this.idleListeners.add(listener);
    return () => this.idleListeners.delete(listener);
  }

  stats(): SessionPoolStats {
    this.forgetClosed();
    const environments: Record<string, PoolEnvironmentStats> = {};
    let warm = 0;
    let starting = 0;
    let waiting = 0;
    for (const environment of this.environments.values()) {
      warm += environment.warm.length;
      starting += environment.starting.size;
      waiting += environment.waiters.length;
      environments[environment.name] = {
        warm: environment.warm.length,
        starting: environment.starting.size,
        waiting: environment.waiters.length,
        target: environment.target,
        ratePerSecond: environment.arrivals.perSecond(this.now()),
        coldStartMs: environment.coldStartMs,
        lightStarts: environment.lightStarts,
        warmLight: this.warmLight,
        lightWarm: environment.lightWarm,
        startCpuSeconds: environment.preloadedStartCpuSeconds,
        lightStartCpuSeconds: environment.lightStartCpuSeconds,
      };
    }
    return {
      warm,
      starting,
      waiting,
      leased: this.leased.size,
      maxSessions: this.maxSessions,
      maxWarm: this.maxWarm,
      environments,
      warmLight: this.warmLight,
      startCpuDemand: this.preloadedDemandCores(),
      startCpuBudget: this.warmLightCpuShare * this.cpuCores,
      ...(this.lastError ? { lastError: this.lastError.message } : {}),
    };
  }

  /** Closes every session, warm and handed out, and stops refilling. */
  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.reaper);
    clearInterval(this.sizer);
    const all: Session[] = [...this.leased];
    for (const environment of this.environments.values()) {
      clearTimeout(environment.retryTimer);
      const starting = await Promise.all([...environment.starting]);
      all.push(...environment.warm, ...starting.filter((session) => session !== undefined));
      environment.warm.length = 0;
      for (const waiter of environment.waiters.splice(0)) waiter.reject(new SessionClosedError('pool'));
    }
    this.leased.clear();
    await Promise.all(all.map((session) => session.close()));
  }

  private environment(name: string): PoolEnvironment {
    let environment = this.environments.get(name);
    if (!environment) {
      environment = new PoolEnvironment(name, name === this.homeEnvironment ? this.size : 0, this.rateWindowMs);
      environment.target = environment.minimum;
      this.environments.set(name, environment);
    }
    return environment;
  }

  /** A pool environment's session options; `NAME@gvisor` is NAME's on the gVisor backend. */
  private async optionsOf(name: string): Promise<SessionOptions> {
    const [environmentName, isolation] = name.split(ISOLATED) as [string, Isolation | undefined];
    return {
      ...this.sessionOptions,
      ...(await this.resolveEnvironment(environmentName)),
      // The pool's own backend where it is that one already (its options kept), else the process's.
      ...(isolation && backendName(this.sessionOptions.backend) !== isolation
        ? { backend: isolatedBackend(isolation) }
        : {}),
    };
  }

  private total(): number {
    let total = this.leased.size + this.startingApart;
    for (const environment of this.environments.values()) total += environment.pipeline;
    return total;
  }

  private forgetClosed(): void {
    for (const session of this.leased) if (session.closed) this.leased.delete(session);
    for (const environment of this.environments.values()) environment.forgetClosed();
  }

  /** A session with its own network, in the room of a warm one (the fullest list's) when the pool is full. */
  private async startApart(name: string, apart: SessionOptions): Promise<Session> {
    if (this.total() >= this.maxSessions) {
      const fullest = [...this.environments.values()].sort((one, other) => other.warm.length - one.warm.length)[0];
      const spare = fullest?.warm.shift();
      if (!spare) throw new PoolExhaustedError(this.maxSessions);
      await spare.close();
    }
    this.startingApart++;
    try {
      return await Session.create({ ...(await this.optionsOf(name)), ...apart });
    } finally {
      this.startingApart--;
    }
  }

  /**
   * Waits for the next session of this environment to start: one already on its way (it ends
   * sooner than a new one would), else one started for this caller, as soon as the start
   * concurrency allows (more at once would only slow every start down).
   */
  private waitForStart(environment: PoolEnvironment): Promise<Session> {
    return new Promise<Session>((resolve, reject) => {
      const waiter = { resolve, reject };
      environment.waiters.push(waiter);
      this.fill();
      // Nothing on its way for it, and no room to start one: every session is taken.
      if (environment.uncoveredWaiters > 0 && this.total() >= this.maxSessions) {
        environment.waiters.splice(environment.waiters.indexOf(waiter), 1);
        reject(new PoolExhaustedError(this.maxSessions));
      }
    });
  }

  /**
   * Starts sessions until each environment has its target warm or on the way,
   * one at a time to the environment furthest short, so that under the total
   * caps one in heavy use does not take all the room from another.
   */
  private fill(): void {
    if (this.closed) return;
    this.forgetClosed();
    const now = this.now();
    for (const environment of this.environments.values()) {
      environment.target = this.sizing
        ? warmTarget({
            ratePerSecond: environment.arrivals.perSecond(now),
            coldStartMs: environment.coldStartMs,
            minimum: environment.minimum,
            maximum: this.maxWarm,
          })
        : environment.minimum;
    }
    this.decideWarmLight();
    for (;;) {
      const next = this.neediest().find((environment) => this.roomToWarm(environment));
      if (!next) return;
      this.startWarm(next);
    }
  }

  /** Cores that preloaded starts would keep busy at the recent arrival rates, all environments. */
  private preloadedDemandCores(): number {
    const now = this.now();
    let cores = 0;
    for (const environment of this.environments.values()) {
      cores += environment.demandRate(now) * environment.preloadedStartCpuSeconds;
    }
    return cores;
  }

  /**
   * Warm light while preloaded starts would take more than the share of the cores; preloaded again
   * once demand falls, replacing the light warm sessions one start at a time per environment.
   */
  private decideWarmLight(): void {
    // With nothing to preload (`--preload none`) a light start is the same start: nothing to decide.
    const preloads = (this.sessionOptions.preloadModules ?? []).length > 0;
    this.warmLight =
      this.lightStartsWhenBehind &&
      preloads &&
      warmsLight({
        preloadedDemandCores: this.preloadedDemandCores(),
        cores: this.cpuCores,
        share: this.warmLightCpuShare,
        lightNow: this.warmLight,
      });
    if (this.warmLight || this.callersWaiting()) return;
    for (const environment of this.environments.values()) {
      // One replacement at a time, and none while starts fail (it would close light sessions for nothing).
      const busy = environment.starting.size > 0 || environment.retryTimer !== undefined;
      if (busy || this.startsInFlight >= this.startConcurrency) continue;
      const index = environment.warm.findIndex((session) => environment.lightSessions.has(session));
      if (index === -1) continue;
      // Its room goes to a preloaded start, made by fill's loop below (it is now short of its target by one).
      const [light] = environment.warm.splice(index, 1);
      void light?.close().catch(() => undefined);
    }
  }

  /**
   * Environments that want a start: callers waiting first, then those furthest short of their target
   * (then the one holding fewer). Backing off after a failure holds back the target, not a caller.
   */
  private neediest(): PoolEnvironment[] {
    const shortfall = (environment: PoolEnvironment) =>
      environment.target - environment.warm.length - environment.unclaimedStarts;
    return [...this.environments.values()]
      .filter(
        (environment) => environment.uncoveredWaiters > 0 || (!environment.retryTimer && shortfall(environment) > 0),
      )
      .sort(
        (one, other) =>
          other.uncoveredWaiters - one.uncoveredWaiters ||
          shortfall(other) - shortfall(one) ||
          one.pipeline - other.pipeline,
      );
  }

  private roomToWarm(environment: PoolEnvironment): boolean {
    if (this.startsInFlight >= this.startConcurrency || this.total() >= this.maxSessions) return false;
    // A caller is waiting: only the session cap and the concurrency hold it back.
    if (environment.uncoveredWaiters > 0) return true;
    // Behind: while callers wait, any start ends in a caller's hands (they take the first to finish), so
    // none is made for a warm list; the callers' own starts, light, get the CPU.
    if (this.lightStartsWhenBehind && this.callersWaiting()) return false;
    let held = 0;
    let heldBytes = 0;
    // Starts a caller waits for are the caller's, not the pool's: they count against maxSessions only.
    for (const other of this.environments.values()) {
      const pooled = other.warm.length + other.unclaimedStarts;
      held += pooled;
      heldBytes += pooled * other.warmSessionBytes;
    }
    if (held >= this.maxWarm) return false;
    // The minimum is what the operator asked for outright; the memory budget bounds what demand adds.
    if (environment.warm.length + environment.unclaimedStarts < environment.minimum) return true;
    return heldBytes + environment.warmSessionBytes <= this.warmMemoryBytes;
  }

  private callersWaiting(): boolean {
    for (const environment of this.environments.values()) if (environment.waiters.length > 0) return true;
    return false;
  }

  private startWarm(environment: PoolEnvironment): void {
    // A real duration, not the sizing clock: how long a caller would wait.
    const began = performance.now();
    this.startsInFlight++;
    // Behind: a caller waits with no start left for it. Its session skips the preload (see lightStartsWhenBehind).
    const behind = this.lightStartsWhenBehind && environment.uncoveredWaiters > 0;
    if (behind) environment.lightStarts++;
    // Or preloaded warm starts would take more of the host than it can give (warm-light.ts).
    const light = behind || this.warmLight;
    const starting: Promise<Session | undefined> = this.optionsOf(environment.name)
      .then((options) => Session.create(light ? { ...options, preloadModules: [] } : options))
      .then(
        async (session) => {
          this.startsInFlight--;
          environment.starting.delete(starting);
          if (this.closed) {
            await session.close();
            return undefined;
          }
          // The sizing target is about warm sessions, which preload: a light start would understate it.
          if (!light) environment.recordColdStart(performance.now() - began);
          this.lastError = undefined;
          environment.failuresInARow = 0;
          const waiter = environment.waiters.shift();
          if (waiter) {
            // Counted as handed out from now, not when the caller resumes, so the fill below keeps the cap.
            this.leased.add(session);
            waiter.resolve(session);
          } else if (light && !this.warmLight) {
            // Its caller was served by an earlier start: a session without the preload is warm only while the pool warms light.
            await session.close();
            this.fill();
            return undefined;
          } else {
            environment.warm.push(session);
            if (light) environment.lightSessions.add(session);
            void this.measureWarm(environment, session, light);
          }
          // A start slot is free: the next start, if one is due.
          this.fill();
          return session;
        },
        (error: Error) => {
          this.startsInFlight--;
          environment.starting.delete(starting);
          // The pool's own environment missing is the operator's to fix: it backs off and says so, below.
          const missing = error instanceof SandcellError && error.code === 'environment-not-found';
          if (missing && environment.name !== this.homeEnvironment) {
            this.forgetMissingEnvironment(environment, error);
            return undefined;
          }
          this.lastError = error;
          // The caller first in line gets the error (a full data budget, a broken host), as if it had started it.
          environment.waiters.shift()?.reject(error);
          // Back off rather than spin on a broken host or a full data budget (which frees slowly).
          environment.failuresInARow++;
          const delay = Math.min(REFILL_RETRY_MAX_MS, REFILL_RETRY_MS * 2 ** (environment.failuresInARow - 1));
          environment.retryTimer ??= setTimeout(() => {
            environment.retryTimer = undefined;
            this.fill();
          }, delay);
          environment.retryTimer.unref();
          this.fill();
          return undefined;
        },
      );
    environment.starting.add(starting);
  }

  /**
   * A name that is not a built environment: its callers get the error, and nothing is kept or
   * retried for it (building it later makes it usable at the next call). Not the pool's health.
   */
  private forgetMissingEnvironment(environment: PoolEnvironment, error: Error): void {
    for (const waiter of environment.waiters.splice(0)) waiter.reject(error);
    if (environment.pipeline === 0 && environment.name !== this.homeEnvironment) {
      this.environments.delete(environment.name);
    }
  }

  /**
   * What a warm session of this environment holds (the memory budget's unit: preloaded ones, the
   * larger) and what its start cost in CPU, where the backend measures them: read as it becomes warm
   * (a caller who takes it at once adds no more than its code's first milliseconds).
   */
  private async measureWarm(environment: PoolEnvironment, session: Session, light: boolean): Promise<void> {
    const usage: { memoryBytes?: number; cpuSeconds?: number } = await session.usage().catch(() => ({}));
    if (!light && typeof usage.memoryBytes === 'number' && usage.memoryBytes > 0)
      environment.recordWarmFootprint(usage.memoryBytes);
    if (typeof usage.cpuSeconds === 'number' && usage.cpuSeconds > 0)
      environment.recordStartCpu(light, usage.cpuSeconds);
  }

  /** On the sizing clock: fill up to the targets, close warm sessions above them, forget unused environments. */
  private resize(): void {
    this.fill();
    const now = this.now();
    for (const environment of this.environments.values()) {
      const excess = Math.min(
        environment.warm.length,
        environment.warm.length + environment.unclaimedStarts - environment.target,
      );
      for (const session of environment.warm.splice(0, Math.max(0, excess)))
        void session.close().catch(() => undefined);
      if (environment.unused && environment.arrivals.perSecond(now) < IDLE_RATE_PER_SECOND) {
        this.environments.delete(environment.name);
      }
    }
  }

  private async reapIdle(): Promise<void> {
    const now = Date.now();
    for (const session of this.leased) {
      const lastUse = Math.max(session.lastActivityAt, this.handedOutAt.get(session) ?? 0);
      if (!session.active && now - lastUse > this.idleTimeoutMs) {
        this.leased.delete(session);
        await Promise.allSettled([...this.idleListeners].map((listener) => listener(session)));
        await session.close().catch(() => undefined);
      }
    }
    this.fill();
  }
}

/** Whether two network options allow the same (validated: a bad one throws here, before any session starts). */
function sameNetwork(requested: NetworkOption, pools: NetworkOption | undefined): boolean {
  return JSON.stringify(resolveNetworkOption(requested)) === JSON.stringify(resolveNetworkOption(pools));
}

function backendName(backend: SessionOptions['backend']): string | undefined {
  return typeof backend === 'object' ? backend.name : backend;
}
