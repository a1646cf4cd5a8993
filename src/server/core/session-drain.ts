/**
 * The work someone waits for (executions, commands, snapshots, restores, forks), counted, and the
 * end of the server: a drain says it is going away; a shutdown lets nothing new in, waits a grace
 * for the running work, pauses every live session so the next server resumes it (in a cluster,
 * idle ones at once, so a peer takes them up), then closes the rest. What does not pause in time
 * is lost, and said so by its record.
 */
import type { Logger } from 'pino';
import { SandcellError } from '../../errors.js';
import type { SessionPool } from '../../session/pool.js';
import type { Cluster } from './cluster.js';
import { ShuttingDownError } from './errors.js';
import type { LiveSessions } from './live-sessions.js';
import type { PausedSessions } from './paused-sessions.js';
import type { RegistryCommands } from './registry-commands.js';
import type { SessionPauses } from './session-pauses.js';

export type TrackedWork = 'execution' | 'command' | 'snapshot' | 'restore' | 'fork';

export interface SessionDrainHost {
  pool: SessionPool;
  paused: PausedSessions;
  logger: Logger;
  cluster?: Cluster | undefined;
  /** How long a shutdown gives the pauses of the live sessions, after the running work. */
  pauseGraceMs: number;
  live: LiveSessions;
  pauses: SessionPauses;
  /** Background and foreground commands running, for the shutdown's log. */
  commands: Pick<RegistryCommands, 'running'>;
  /** The shutdown began: timers stop. */
  stopping(): void;
  /** Every session is closed: the registry's indexes let go of them. */
  closed(): void;
}

export class SessionDrain {
  private draining = false;
  private shuttingDown = false;
  /** Executions and commands someone waits for, now: what a graceful shutdown waits for. */
  private working = 0;
  /** Executions among them. */
  private executions = 0;
  private drained?: () => void;

  constructor(private readonly host: SessionDrainHost) {}

  get isShuttingDown(): boolean {
    return this.shuttingDown;
  }

  /** Draining: going away (a SIGTERM came), while it may still serve as before for --drain-delay. */
  get isDraining(): boolean {
    return this.draining || this.shuttingDown;
  }

  /** Executions running now (and queued in their sessions). */
  get running(): number {
    return this.executions;
  }

  /** Says the node is going away (/readyz answers 503; peers stop sending it new sessions), and changes nothing else. */
  beginDrain(): void {
    this.draining = true;
    void this.host.cluster?.announce();
  }

  /**
   * Runs work someone waits for, counted for a graceful shutdown, which waits for it; a session
   * closed under it by the shutdown is said to be the shutdown's doing.
   */
  async track<T>(work: () => Promise<T>, what: TrackedWork): Promise<T> {
    this.working++;
    if (what === 'execution') this.executions++;
    try {
      return await work();
    } catch (error) {
      if (this.shuttingDown && error instanceof SandcellError && error.code === 'session-closed') {
        throw new ShuttingDownError(`The server shut down before the ${what} finished.`);
      }
      throw error;
    } finally {
      this.working--;
      if (what === 'execution') this.executions--;
      if (this.working === 0) this.drained?.();
    }
  }

  /**
   * Stops new work; waits up to `graceMs` for running executions and the commands someone waits
   * for; then closes every session, which kills whatever still runs (background commands too).
   */
  async shutdown(graceMs: number): Promise<void> {
    const { live, pauses, paused, logger } = this.host;
    this.shuttingDown = true;
    this.host.stopping();
    // In a cluster, idle sessions are paused at once: their next requests go to a peer, which resumes
    // them, instead of waiting here for this node's running work.
    const early =
      this.host.cluster && paused.durable
        ? live.all().filter((entry) => entry.inFlight === 0 && !entry.session.busy)
        : [];
    for (const entry of early) pauses.pause(entry, 'shutdown').catch(() => undefined);
    if (this.working > 0) {
      const { foreground, background } = this.host.commands.running;
      logger.info(
        { executions: this.executions, commands: foreground, backgroundCommands: background, graceMs },
        'waiting for running executions and commands',
      );
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, graceMs);
        timer.unref();
        this.drained = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    }
    // Every live session is paused, so the next server resumes it; what does not pause in time is lost, and said.
    // Without a state directory nothing would outlive this process: they close as they are.
    const held = paused.durable ? [...new Set([...early, ...live.all()])] : [];
    const pausing = Promise.allSettled(held.map((entry) => pauses.pause(entry, 'shutdown')));
    if (held.length > 0) {
      logger.info({ sessions: held.length, graceMs: this.host.pauseGraceMs }, 'pausing every live session');
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([pausing, new Promise((resolve) => (timer = setTimeout(resolve, this.host.pauseGraceMs)))]);
      clearTimeout(timer);
    }
    live.closeAll('shutdown');
    await this.host.pool.close();
    // Pauses cut short by the close end now, each writing that its session was lost.
    const outcomes = await pausing;
    this.host.closed();
    const pausedCount = outcomes.filter((outcome) => outcome.status === 'fulfilled').length;
    await paused.close();
    logger.info({ paused: pausedCount, lost: held.length - pausedCount }, 'every sandbox closed');
  }
}
