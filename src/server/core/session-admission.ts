/**
 * What the registry lets in: a new session within the key's and the server's limits (counting
 * those still starting), an execution within its session's queue, the code size and the key's
 * rate, other work (uploads, commands, snapshots) within the key's rate, and nothing once the
 * server is shutting down. Each refusal is counted in the metrics and says what lifts it.
 */
import { SandcellError } from '../../errors.js';
import type { AcquireOptions, SessionPool } from '../../session/pool.js';
import type { Session } from '../../session/session.js';
import type { Owner } from './auth.js';
import { LimitExceededError, ShuttingDownError } from './errors.js';
import type { ManagedSession } from './managed-session.js';
import type { Metrics } from './metrics.js';
import type { RateLimiter } from './rate-limiter.js';

/** What a refused execution is told to wait: queued executions usually take seconds. */
const QUEUE_FULL_RETRY_AFTER_MS = 5_000;
/** What a session refused at the server's capacity is told to wait: sessions idle out or get closed. */
const SERVER_FULL_RETRY_AFTER_MS = 5_000;

/** What admission needs of the registry. */
export interface AdmissionHost {
  pool: SessionPool;
  metrics: Metrics;
  rateLimiter: RateLimiter;
  maxSessions: number;
  sessionsPerOwner: number;
  maxCodeBytes: number;
  /** Executions that may wait in one session behind the running one. */
  maxQueuedExecutions: number;
  /** Sessions the registry holds, and those of one owner. */
  held(): number;
  heldBy(owner: Owner): number;
  shuttingDown(): boolean;
}

export class Admission {
  private pendingCreations = 0;
  private readonly pendingByOwner = new Map<string, number>();

  constructor(private readonly host: AdmissionHost) {}

  /** Sessions asked of the pool and not yet handed out. */
  get starting(): number {
    return this.pendingCreations;
  }

  /** A session from the pool for `owner`, within the key's and the server's limits (those starting counted). */
  async acquire(owner: Owner, options: AcquireOptions): Promise<Session> {
    this.refuseWhenShuttingDown();
    const owned = this.host.heldBy(owner) + (this.pendingByOwner.get(owner.id) ?? 0);
    if (owned >= this.host.sessionsPerOwner) {
      this.host.metrics.rejected.inc({ reason: 'sessions-per-key' });
      throw new LimitExceededError('sessions-per-key', `This key already has ${owned} live sessions, its limit.`);
    }
    if (this.host.held() + this.pendingCreations >= this.host.maxSessions) {
      this.host.metrics.rejected.inc({ reason: 'server-capacity' });
      throw new LimitExceededError(
        'server-sessions',
        `The server holds ${this.host.maxSessions} sessions, its limit.`,
        SERVER_FULL_RETRY_AFTER_MS,
      );
    }
    this.pendingCreations++;
    this.pendingByOwner.set(owner.id, (this.pendingByOwner.get(owner.id) ?? 0) + 1);
    let session: Session;
    try {
      // A key that must run behind gVisor gets a session of gVisor's, whatever it asked for.
      session = await this.host.pool.acquire(owner.isolation ? { ...options, isolation: owner.isolation } : options);
    } catch (error) {
      if (error instanceof SandcellError && error.code === 'data-budget-exhausted') {
        this.host.metrics.rejected.inc({ reason: 'data-budget' });
      } else if (error instanceof SandcellError && error.code !== 'pool-exhausted') {
        this.host.metrics.sandboxFailures.inc({ kind: error.code });
      }
      throw error;
    } finally {
      this.pendingCreations--;
      this.pendingByOwner.set(owner.id, (this.pendingByOwner.get(owner.id) ?? 1) - 1);
    }
    if (this.host.shuttingDown()) {
      await session.close();
      this.refuseWhenShuttingDown();
    }
    return session;
  }

  /**
   * Checks an execution against the limits (shutdown, session queue, code size,
   * rate) and counts it; `execute` does this itself unless told it was done already
   * (a stream checks first, so a refusal answers the request, not a stream event).
   */
  admit(entry: ManagedSession, code: string): void {
    this.refuseWhenShuttingDown();
    this.refuseWhenQueueFull(entry);
    const size = Buffer.byteLength(code, 'utf8');
    if (size > this.host.maxCodeBytes) {
      this.host.metrics.rejected.inc({ reason: 'code-too-large' });
      throw new LimitExceededError('code-bytes', `The code is ${size} bytes; the limit is ${this.host.maxCodeBytes}.`);
    }
    try {
      this.host.rateLimiter.take(entry.owner.id);
    } catch (error) {
      this.host.metrics.rejected.inc({ reason: 'executions-per-minute' });
      throw error;
    }
  }

  /**
   * Checks an upload (or a command, once its size passed) against the limits: shutdown, and the
   * key's rate (executions, commands and uploads share one bucket).
   */
  admitWork(entry: ManagedSession): void {
    this.refuseWhenShuttingDown();
    try {
      this.host.rateLimiter.take(entry.owner.id);
    } catch (error) {
      this.host.metrics.rejected.inc({ reason: 'executions-per-minute' });
      throw error;
    }
  }

  refuseWhenShuttingDown(): void {
    if (this.host.shuttingDown()) {
      throw new ShuttingDownError();
    }
  }

  /** Each queued execution holds its code (up to 2 MiB) until it runs: a session's queue is bounded. */
  refuseWhenQueueFull(entry: ManagedSession): void {
    const waiting = Math.max(0, entry.inFlight - 1);
    if (entry.inFlight > 0 && waiting >= this.host.maxQueuedExecutions) {
      this.host.metrics.rejected.inc({ reason: 'queue-full' });
      throw new LimitExceededError(
        'queued-executions',
        `${waiting} executions already wait in this session behind the running one, its limit.`,
        QUEUE_FULL_RETRY_AFTER_MS,
      );
    }
  }
}
