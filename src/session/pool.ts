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
 */
import { DEFAULT_ENVIRONMENT_NAME } from '../environments/types.js';
import { PoolExhaustedError, SessionClosedError } from '../errors.js';
import type { SessionOptions } from './options.js';
import { Session } from './session.js';

export const DEFAULT_POOL_SIZE = 2;
export const DEFAULT_MAX_SESSIONS = 16;
/** How long a handed-out session may sit unused before it is closed: the one default, for pools and servers. */
export const DEFAULT_IDLE_TIMEOUT_MS = 20 * 60_000;
export const DEFAULT_PRELOAD_MODULES = ['numpy', 'pandas', 'matplotlib', 'matplotlib.pyplot'];
/** After a failed warm-up, wait this long, doubling with each further failure up to the maximum. */
const REFILL_RETRY_MS = 1_000;
const REFILL_RETRY_MAX_MS = 30_000;
const REFILL_DELAY_MS = 20;

export interface SessionPoolOptions {
  /** Sessions kept warm and ready. @default 2 */
  size?: number;
  /** Most sessions alive at once, warm and handed out together. @default 16 */
  maxSessions?: number;
  /** A handed-out session idle (nothing running, no run, command or file operation since it was handed out) this long is closed. @default 1_200_000 (20 min) */
  idleTimeoutMs?: number;
  /** Options of every session; `preloadModules` defaults to numpy, pandas and matplotlib. */
  sessionOptions?: SessionOptions;
}

export interface SessionPoolStats {
  warm: number;
  starting: number;
  leased: number;
  maxSessions: number;
  /** The last error met while warming a session, if the latest attempt failed. */
  lastError?: string;
}

export interface AcquireOptions {
  /** The environment the session runs in. @default the pool's (its sessionOptions.environmentName, else `default`) */
  environment?: string;
}

export class SessionPool {
  private readonly size: number;
  private readonly maxSessions: number;
  private readonly idleTimeoutMs: number;
  private readonly sessionOptions: SessionOptions;
  private readonly warm: Session[] = [];
  private readonly leased = new Set<Session>();
  /** When each session was handed out: time spent warm in the pool is not idleness. */
  private readonly handedOutAt = new WeakMap<Session, number>();
  private readonly startingSessions = new Set<Promise<Session | undefined>>();
  private readonly waiters: ((session: Session | undefined) => void)[] = [];
  private lastError?: Error;
  private failuresInARow = 0;
  private retryTimer?: NodeJS.Timeout;
  private readonly reaper: NodeJS.Timeout;
  private readonly idleListeners = new Set<(session: Session) => void>();
  private closed = false;

  constructor(options: SessionPoolOptions = {}) {
    this.size = Math.max(0, Math.floor(options.size ?? DEFAULT_POOL_SIZE));
    this.maxSessions = Math.max(1, Math.floor(options.maxSessions ?? DEFAULT_MAX_SESSIONS));
    this.idleTimeoutMs = options.idleTimeoutMs ?? DEFAULT_IDLE_TIMEOUT_MS;
    this.sessionOptions = {
      ...options.sessionOptions,
      preloadModules: options.sessionOptions?.preloadModules ?? DEFAULT_PRELOAD_MODULES,
    };
    this.reaper = setInterval(() => void this.reapIdle(), Math.min(30_000, Math.max(50, this.idleTimeoutMs / 4)));
    this.reaper.unref();
  }

  /** Starts warming and resolves once `size` sessions are ready (or rejects with the error that stopped one). */
  async start(): Promise<void> {
    this.fill();
    const results = await Promise.all([...this.startingSessions]);
    if (results.some((session) => session === undefined) && this.lastError) throw this.lastError;
  }

  /**
   * A ready session: a warm one at once, else a new one (slower), within `maxSessions`.
   * A session in another environment than the pool's starts cold.
   */
  async acquire(options: AcquireOptions = {}): Promise<Session> {
    if (this.closed) throw new SessionClosedError('pool');
    this.forgetClosed();
    // No environment named means the pool's own (a server's `serve --env`, else `default`).
    const own = (options.environment ?? this.environmentName) === this.environmentName;
    const session =
      (own ? this.warm.shift() : undefined) ?? (await this.startForLease(own ? undefined : options.environment));
    this.leased.add(session);
    this.handedOutAt.set(session, Date.now());
    // Refill a moment later: starting a sandbox costs the event loop a few
    // milliseconds, which should not land on the caller's first run.
    setTimeout(() => this.fill(), REFILL_DELAY_MS).unref();
    return session;
  }

  /**
   * Calls `listener` with each handed-out session the pool closes for idling,
   * just before it closes it (a server records why the session went). Returns
   * the function that stops listening.
   */
  onIdleClose(listener: (session: Session) => void): () => void {
    this.idleListeners.add(listener);
    return () => this.idleListeners.delete(listener);
  }

  stats(): SessionPoolStats {
    this.forgetClosed();
    return {
      warm: this.warm.length,
      starting: this.startingSessions.size,
      leased: this.leased.size,
      maxSessions: this.maxSessions,
      ...(this.lastError ? { lastError: this.lastError.message } : {}),
    };
  }

  /** Closes every session, warm and handed out, and stops refilling. */
  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.reaper);
    clearTimeout(this.retryTimer);
    const starting = await Promise.all([...this.startingSessions]);
    const all = [...this.warm, ...this.leased, ...starting.filter((session) => session !== undefined)];
    this.warm.length = 0;
    this.leased.clear();
    await Promise.all(all.map((session) => session.close()));
  }

  private total(): number {
    return this.warm.length + this.leased.size + this.startingSessions.size;
  }

  private forgetClosed(): void {
    for (const session of this.leased) if (session.closed) this.leased.delete(session);
    for (let index = this.warm.length - 1; index >= 0; index--) {
      if (this.warm[index]?.closed) this.warm.splice(index, 1);
    }
  }

  /** The environment the pool's sessions run in (a server's `serve --env`). */
  private get environmentName(): string {
    return this.sessionOptions.environmentName ?? DEFAULT_ENVIRONMENT_NAME;
  }

  private async startForLease(environmentName?: string): Promise<Session> {
    if (this.total() >= this.maxSessions) {
      // One may be on its way into the warm list: take it rather than fail.
      if (this.startingSessions.size > 0) {
        const session = await new Promise<Session | undefined>((resolve) => this.waiters.push(resolve));
        if (session) return session;
      }
      throw new PoolExhaustedError(this.maxSessions);
    }
    return Session.create({ ...this.sessionOptions, ...(environmentName ? { environmentName } : {}) });
  }

  private fill(): void {
    if (this.closed || this.retryTimer) return;
    this.forgetClosed();
    while (this.warm.length + this.startingSessions.size < this.size && this.total() < this.maxSessions) {
      const starting: Promise<Session | undefined> = Session.create(this.sessionOptions).then(
        async (session) => {
          this.startingSessions.delete(starting);
          if (this.closed) {
            await session.close();
            return undefined;
          }
          this.lastError = undefined;
          this.failuresInARow = 0;
          const waiter = this.waiters.shift();
          if (waiter) waiter(session);
          else this.warm.push(session);
          return session;
        },
        (error: Error) => {
          this.startingSessions.delete(starting);
          this.lastError = error;
          this.waiters.shift()?.(undefined);
          // Back off rather than spin on a broken host or a full data budget (which frees slowly).
          this.failuresInARow++;
          const delay = Math.min(REFILL_RETRY_MAX_MS, REFILL_RETRY_MS * 2 ** (this.failuresInARow - 1));
          this.retryTimer ??= setTimeout(() => {
            this.retryTimer = undefined;
            this.fill();
          }, delay);
          this.retryTimer.unref();
          return undefined;
        },
      );
      this.startingSessions.add(starting);
    }
  }

  private async reapIdle(): Promise<void> {
    const now = Date.now();
    for (const session of this.leased) {
      const lastUse = Math.max(session.lastActivityAt, this.handedOutAt.get(session) ?? 0);
      if (!session.active && now - lastUse > this.idleTimeoutMs) {
        this.leased.delete(session);
        for (const listener of this.idleListeners) listener(session);
        await session.close().catch(() => undefined);
      }
    }
    this.fill();
  }
}
