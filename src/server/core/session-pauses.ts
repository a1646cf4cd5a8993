/**
 * Pauses and resumes: a live session's state goes to a snapshot within its key's quota and its
 * sandbox ends; its next request resumes it (here, or on any node sharing the store, of which one
 * claims it). A pause that fails leaves a record that says the session was lost. Also the paused
 * sessions as the store lists them, and the scopes (MCP connections) that may have some.
 */
import { performance } from 'node:perf_hooks';
import type { Logger } from 'pino';
import type { VolumeMount } from '../../session/options.js';
import type { Session } from '../../session/session.js';
import { remountable } from '../../session/session-remounts.js';
import type { RestoreReport } from '../../session/session-state.js';
import type { VolumeStore } from '../../volumes/volume-store.js';
import type { Owner } from './auth.js';
import { SessionElsewhereError, SessionNotFoundError } from './errors.js';
import type { LiveSessions } from './live-sessions.js';
import type { ManagedSession } from './managed-session.js';
import type { PausedRecord, PausedSessions } from './paused-sessions.js';
import type { SessionRecords } from './session-records.js';
import type { SessionSnapshots } from './session-snapshots.js';

export type PauseReason = 'idle' | 'shutdown' | 'requested';

export interface SessionPausesHost {
  paused: PausedSessions;
  logger: Logger;
  live: LiveSessions;
  records: SessionRecords;
  snapshots: SessionSnapshots;
  /** A session from the pool, within the owner's and the server's limits. */
  acquire(owner: Owner, options: { environment: string; mounts?: VolumeMount[] }): Promise<Session>;
  /** The owner's volumes (a resume mounts its session's again), where this node keeps them (else it throws). */
  volumesFor(owner: Owner): Promise<VolumeStore>;
  /** Holds a resumed session under its record's id, with what it brought back, as every new one is held. */
  hold(session: Session, owner: Owner, record: PausedRecord, restored: RestoreReport): Promise<ManagedSession>;
}

export class SessionPauses {
  /** Resumes under way, by owner and id: two requests for a paused session share one. */
  private readonly resuming = new Map<string, Promise<ManagedSession>>();
  /** Scopes (MCP connections) with sessions that may be paused in the store: removeScope deletes those. */
  private readonly pausedScopes = new Set<string>();

  constructor(private readonly host: SessionPausesHost) {}

  /**
   * Pauses a live session: its state goes to a snapshot and its sandbox ends;
   * its next request resumes it. A pause refused while the session still runs
   * (code that does not end in time) leaves it live; one that fails with the
   * sandbox gone leaves a record that says the session was lost.
   */
  pause(entry: ManagedSession, reason: PauseReason): Promise<PausedRecord> {
    entry.pausing ??= this.pauseNow(entry, reason).catch((error) => {
      entry.pausing = undefined;
      throw error;
    });
    return entry.pausing;
  }

  /** The owner's paused session with this id resumed, once however many requests ask for it at once. */
  resume(owner: Owner, id: string): Promise<ManagedSession> {
    const key = `${owner.id}\u0000${id}`;
    let resuming = this.resuming.get(key);
    if (!resuming) {
      resuming = this.resumeNow(owner, id).finally(() => this.resuming.delete(key));
      this.resuming.set(key, resuming);
    }
    return resuming;
  }

  /** The owner's paused sessions (live ones are the registry's `list`). */
  async list(owner: Owner): Promise<PausedRecord[]> {
    // A live session's record is its marker (session-records.ts), not a paused session.
    return (await this.host.paused.list(owner.id)).filter((record) => !this.host.live.find(owner, record.id));
  }

  /** The paused session with this id, if the owner has one. */
  async find(owner: Owner, id: string): Promise<PausedRecord | undefined> {
    if (this.host.live.find(owner, id)) return undefined;
    return this.host.paused.find(owner.id, id);
  }

  /**
   * The owner's paused session with this id as the store has it now, to be resumed: undefined when
   * there is none (or it is live here); SessionLostError when its record says its state is gone,
   * SessionElsewhereError when it is live on another server.
   */
  async resumable(owner: Owner, id: string): Promise<PausedRecord | undefined> {
    const record = await this.find(owner, id);
    if (!record || record.snapshotId !== undefined) return record;
    throw await this.host.records.lost(record);
  }

  /** Deletes a paused session and its snapshot; false when there is none. */
  async remove(owner: Owner, id: string): Promise<boolean> {
    const record = await this.host.paused.find(owner.id, id);
    if (!record) return false;
    await this.host.paused.remove(owner.id, record);
    this.host.logger.info({ session: id, owner: owner.label }, 'paused session deleted');
    return true;
  }

  /** Resolves once the session with this id is not being paused (paused, or its pause failed). */
  async settled(id: string): Promise<void> {
    await this.host.live.byIdAnyOwner(id)?.pausing?.catch(() => undefined);
  }

  /**
   * Once the sessions of `scope` (an MCP connection's) being paused are paused: true. False at once
   * when one of them is live and not being paused (still working, in a drain: its pause comes later).
   */
  async settledScope(scope: string): Promise<boolean> {
    const entries = this.host.live.all().filter((entry) => entry.scope === scope && !entry.session.closed);
    if (entries.some((entry) => entry.pausing === undefined)) return false;
    await Promise.all(entries.map((entry) => entry.pausing?.catch(() => undefined)));
    return true;
  }

  /** Says that sessions of `scope` may be paused in the store (paused here, or by a node before this one). */
  markScopePaused(scope: string): void {
    this.pausedScopes.add(scope);
  }

  /** Deletes the owner's paused sessions of a scope that ended, looked for only when one may be there. */
  async removeScope(owner: Owner, scope: string): Promise<void> {
    if (!this.pausedScopes.delete(scope)) return;
    for (const record of await this.host.paused.list(owner.id)) {
      if (record.scope === scope && !this.host.live.find(owner, record.id))
        await this.host.paused.remove(owner.id, record);
    }
  }

  private async pauseNow(entry: ManagedSession, reason: PauseReason): Promise<PausedRecord> {
    const { paused, records, logger, live } = this.host;
    const base = records.base(entry, reason);
    const started = performance.now();
    try {
      const info = await this.host.snapshots.withinQuota(entry.owner, async (maxBytes) =>
        entry.session.pause({
          owner: entry.owner.id,
          sessionId: entry.id,
          snapshots: await paused.snapshots(),
          maxBytes,
        }),
      );
      const record: PausedRecord = { ...base, pausedAt: new Date().toISOString(), snapshotId: info.id };
      await records.recordPause(entry, record);
      if (entry.scope !== undefined) this.pausedScopes.add(entry.scope);
      live.forget(entry, 'paused');
      logger.info(
        {
          session: entry.id,
          owner: entry.owner.label,
          reason,
          snapshot: info.id,
          bytes: info.bytes,
          skipped: info.contexts.flatMap((context) => context.skipped.map((skip) => `${context.id}:${skip.name}`)),
          ms: Math.round(performance.now() - started),
        },
        'session paused',
      );
      return record;
    } catch (error) {
      // Asked for, the pause fails and the session runs on; idle or at shutdown, it ends all the same.
      if (!entry.session.closed && reason === 'requested') throw error;
      const lost = `its pause (${reason}) failed: ${(error as Error).message}`;
      await records.recordPause(entry, { ...base, pausedAt: new Date().toISOString(), lost });
      if (entry.scope !== undefined) this.pausedScopes.add(entry.scope);
      live.forget(entry, 'pause-failed');
      if (!entry.session.closed) void entry.session.close().catch(() => undefined);
      logger.warn({ session: entry.id, owner: entry.owner.label, reason, error: lost }, 'session lost');
      throw error;
    }
  }

  private async resumeNow(owner: Owner, id: string): Promise<ManagedSession> {
    const { paused, records, logger } = this.host;
    const record = await paused.find(owner.id, id);
    if (!record) throw new SessionNotFoundError(id);
    if (record.snapshotId === undefined) throw await records.lost(record);
    // In a cluster, resumed on the node that keeps its volumes: elsewhere this throws (relayed there) before any claim.
    const volumes = record.mounts?.length ? await this.host.volumesFor(owner) : undefined;
    // A store shared with other servers: of those asked for this session at once, one resumes it.
    if (!(await paused.claim(owner.id, record))) throw new SessionElsewhereError(id);
    const started = performance.now();
    let session: Session | undefined;
    let report: RestoreReport;
    try {
      // Its volumes are mounted again; one deleted meanwhile is said in the report, never an empty mount.
      const remounted =
        volumes && record.mounts ? await remountable(record.mounts, volumes, owner.id) : { mounts: [], gone: [] };
      session = await this.host.acquire(owner, {
        environment: record.environment,
        ...(remounted.mounts.length > 0 ? { mounts: remounted.mounts } : {}),
      });
      report = await session.load(record.snapshotId, { owner: owner.id, snapshots: await paused.snapshots() });
      if (remounted.gone.length > 0) {
        report = { ...report, notKept: [...report.notKept, ...remounted.gone] };
        session.restored = report;
      }
    } catch (error) {
      await session?.close();
      await paused.release(owner.id, record.snapshotId).catch(() => undefined);
      throw error;
    }
    // The record goes first: the entry's own marker (register) must not be removed after it is written.
    await paused.remove(owner.id, record).catch((error: Error) => {
      logger.warn({ session: id, error: error.message }, 'could not remove the snapshot of a resumed session');
    });
    const entry = await this.host.hold(session, owner, record, report);
    logger.info(
      {
        session: id,
        owner: owner.label,
        snapshot: record.snapshotId,
        restored: report.contexts.map((context) => ({ context: context.id, names: context.restored.length })),
        skipped: report.contexts.flatMap((context) =>
          context.skipped.map((skip) => `${context.id}:${skip.name} (${skip.reason})`),
        ),
        ms: Math.round(performance.now() - started),
      },
      'session resumed',
    );
    return entry;
  }
}
