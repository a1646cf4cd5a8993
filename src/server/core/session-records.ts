/**
 * What the store says of each of the registry's sessions, written in order per session: its
 * marker as it starts (which says, if read, that its server stopped without pausing it, and names
 * that server), its pause's record, or its removal once it is closed on purpose; in a cluster its
 * catalog entry too. And what a marker read back means: a session live on another server
 * (SessionElsewhereError), or one whose state is gone (SessionLostError), said alike by every node.
 */
import type { Logger } from 'pino';
import { SessionLostError } from '../../snapshots/snapshot-errors.js';
import type { Cluster } from './cluster.js';
import { SessionElsewhereError } from './errors.js';
import type { ManagedSession } from './managed-session.js';
import type { PausedRecord, PausedSessions } from './paused-sessions.js';

/** What a session's record says until it is paused or closed: if it is read, its process ended without pausing it. */
const STOPPED_UNPAUSED = 'the server stopped without pausing it (a crash, or it was killed)';

export interface SessionRecordsHost {
  paused: PausedSessions;
  logger: Logger;
  cluster?: Cluster | undefined;
}

export class SessionRecords {
  /** Each session's record writes, in order. */
  private readonly writes = new WeakMap<ManagedSession, Promise<void>>();

  constructor(private readonly host: SessionRecordsHost) {}

  /**
   * Its marker, as it starts: read after a crash or a kill -9, it tells the next request, rather
   * than an empty sandbox. Without a state directory nothing outlives the process: nothing to say.
   */
  markLive(entry: ManagedSession): void {
    const { paused, cluster } = this.host;
    if (!paused.durable) return;
    this.write(entry, () =>
      paused
        .record(entry.owner.id, {
          ...this.base(entry, 'stopped'),
          pausedAt: new Date().toISOString(),
          lost: STOPPED_UNPAUSED,
          node: paused.node,
        })
        .then(() => cluster?.place(entry.id)),
    ).catch(() => undefined); // logged by write
  }

  /** Its pause's record: a snapshot to resume from, or why there is none (`lost`). */
  recordPause(entry: ManagedSession, record: PausedRecord): Promise<void> {
    return this.write(entry, () => this.host.paused.record(entry.owner.id, record));
  }

  /**
   * It is no longer live here: out of the catalog; and closed on purpose (deleted, idle with
   * --on-idle close, its sandbox gone), its record goes: nothing is left to resume or to report.
   */
  markClosed(entry: ManagedSession, reason: string): void {
    const { paused, cluster } = this.host;
    if (cluster) this.write(entry, () => cluster.unplace(entry.id)).catch(() => undefined); // logged by write
    if (reason !== 'paused' && reason !== 'pause-failed' && paused.durable) {
      this.write(entry, () => paused.remove(entry.owner.id, this.base(entry, reason), { keepSnapshot: true })).catch(
        () => undefined,
      ); // logged by write
    }
  }

  /** Resolves once every write asked for so far of the session's record is done (or failed, and logged). */
  async written(entry: ManagedSession): Promise<void> {
    await this.writes.get(entry);
  }

  /** What every record of the session holds: who it is, what made it, what its front door keeps. */
  base(entry: ManagedSession, reason: string) {
    return {
      id: entry.id,
      source: entry.source,
      ...(entry.name !== undefined ? { name: entry.name, scope: entry.scope ?? entry.source } : {}),
      environment: entry.session.environment.name,
      reason,
      ...(entry.keep !== undefined ? { keep: entry.keep } : {}),
      ...(entry.publishOutputs ? { publishOutputs: true } : {}),
      ...(entry.session.mounts.length > 0 ? { mounts: entry.session.mounts } : {}),
    };
  }

  /**
   * What a record without a snapshot means: SessionElsewhereError thrown for another server's live
   * session; else the SessionLostError that says why its state is gone. In a cluster a marker names
   * the node that held it live; one on a node no longer alive is lost, said alike by every node.
   */
  async lost(record: PausedRecord): Promise<SessionLostError> {
    const { paused, cluster } = this.host;
    const stoppedNode = `its node ${record.node} stopped without pausing it (a crash, or it was killed)`;
    if (paused.elsewhere(record)) {
      if (!cluster || record.node === undefined || (await cluster.isAlive(record.node)))
        throw new SessionElsewhereError(record.id, record.node);
      return new SessionLostError(record.id, stoppedNode);
    }
    if (cluster && record.lost === STOPPED_UNPAUSED && record.node !== undefined)
      return new SessionLostError(record.id, stoppedNode);
    return new SessionLostError(record.id, record.lost ?? 'it has no snapshot');
  }

  /** Writes to a session's record in order: its marker, then its pause or its removal. */
  private write(entry: ManagedSession, write: () => Promise<void>): Promise<void> {
    const next = (this.writes.get(entry) ?? Promise.resolve()).then(write);
    // The chain goes on after a failed write; a caller that awaits this one hears of it.
    this.writes.set(
      entry,
      next.catch((error: Error) => {
        this.host.logger.warn({ session: entry.id, error: error.message }, 'could not write the session’s record');
      }),
    );
    return next;
  }
}
