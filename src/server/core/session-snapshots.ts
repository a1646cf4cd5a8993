/**
 * Snapshots of the registry's sessions: those a client takes of a live session, restores into
 * one, lists and deletes, each within the key's quota of the store (`--snapshot-bytes-per-key`,
 * paused sessions' snapshots counted too), and the retention that deletes paused sessions,
 * snapshots and published outputs past `--snapshot-retention` (soon after start, then hourly).
 */
import type { Logger } from 'pino';
import { InvalidInputError } from '../../errors.js';
import { formatBytes } from '../../protocol/format-bytes.js';
import { type RestoreReport, type SnapshotInfo, snapshotInfo } from '../../session/session-state.js';
import { SnapshotTooLargeError } from '../../snapshots/snapshot-errors.js';
import type { Owner } from './auth.js';
import { LimitExceededError } from './errors.js';
import type { ManagedSession } from './managed-session.js';
import type { Metrics } from './metrics.js';
import type { OutputPublisher } from './output-publisher.js';
import type { PausedSessions } from './paused-sessions.js';

/** Retention runs this long after start (not in the way of a start), then every RETENTION_INTERVAL_MS. */
const RETENTION_FIRST_MS = 60_000;
const RETENTION_INTERVAL_MS = 3_600_000;

/** What the snapshots need of the registry. */
export interface SessionSnapshotsHost {
  paused: PausedSessions;
  metrics: Metrics;
  logger: Logger;
  publisher?: OutputPublisher | undefined;
  /** What one owner's snapshots (paused sessions' included) may take in the store. */
  snapshotBytesPerOwner: number;
  snapshotRetentionMs: number;
  /** Refuses new work during shutdown and past the key's rate (a snapshot counts as an upload does). */
  admitWork(entry: ManagedSession): void;
  /** Runs `work` counted as running work, so a graceful shutdown waits for it. */
  track<T>(work: () => Promise<T>, what: 'snapshot' | 'restore'): Promise<T>;
}

export class SessionSnapshots {
  private retention: NodeJS.Timeout;
  private stopped = false;

  constructor(private readonly host: SessionSnapshotsHost) {
    this.retention = setTimeout(() => void this.expire(), RETENTION_FIRST_MS);
    this.retention.unref();
  }

  /** No more retention runs (a shutdown). */
  stop(): void {
    this.stopped = true;
    clearTimeout(this.retention);
  }

  /**
   * Runs a snapshot's write with the room left in the owner's snapshot quota
   * as its bound; past it, the key's limit answers. Checked as each snapshot
   * starts: two taken at the same moment may each use the room that was left.
   */
  async withinQuota<T>(owner: Owner, write: (maxBytes: number) => Promise<T>): Promise<T> {
    const limit = this.host.snapshotBytesPerOwner;
    const store = await this.host.paused.snapshots();
    const used = (await store.list(owner.id)).reduce(
      (total, manifest) => total + manifest.parts.reduce((sum, part) => sum + part.bytes, 0),
      0,
    );
    const refusal = () => {
      this.host.metrics.rejected.inc({ reason: 'snapshot-quota' });
      return new LimitExceededError(
        'snapshot-bytes',
        `The key's snapshots hold ${formatBytes(used)} of the ${formatBytes(limit)} they may; this one would pass it, so it was not kept.`,
      );
    };
    if (used >= limit) throw refusal();
    try {
      return await write(limit - used);
    } catch (error) {
      throw error instanceof SnapshotTooLargeError ? refusal() : error;
    }
  }

  /** A snapshot of a live session, which runs on (counted against the key's rate, like an upload). */
  async take(entry: ManagedSession, options: { name?: string } = {}): Promise<SnapshotInfo> {
    this.host.admitWork(entry);
    const info = await this.host.track(
      () =>
        this.withinQuota(entry.owner, async (maxBytes) =>
          entry.session.snapshot({
            owner: entry.owner.id,
            sessionId: entry.id,
            snapshots: await this.host.paused.snapshots(),
            maxBytes,
            ...(options.name !== undefined ? { name: options.name } : {}),
          }),
        ),
      'snapshot',
    );
    this.host.logger.info(
      { session: entry.id, owner: entry.owner.label, snapshot: info.id, bytes: info.bytes },
      'snapshot taken',
    );
    return info;
  }

  /** Rolls a live session back to one of the owner's snapshots. */
  async restore(entry: ManagedSession, snapshotId: string): Promise<RestoreReport> {
    this.host.admitWork(entry);
    const snapshots = await this.host.paused.snapshots();
    const report = await this.host.track(
      () => entry.session.restore(snapshotId, { owner: entry.owner.id, snapshots }),
      'restore',
    );
    this.host.logger.info({ session: entry.id, owner: entry.owner.label, snapshot: snapshotId }, 'session restored');
    return report;
  }

  /** The owner's snapshots, newest first (those of paused sessions included). */
  async list(owner: Owner): Promise<SnapshotInfo[]> {
    const store = await this.host.paused.snapshots();
    return (await store.list(owner.id)).flatMap((manifest) => {
      try {
        return [snapshotInfo(manifest)];
      } catch {
        return [];
      }
    });
  }

  /** Deletes one of the owner's snapshots; not one a paused session still needs. */
  async delete(owner: Owner, snapshotId: string): Promise<void> {
    const holder = (await this.host.paused.list(owner.id)).find((record) => record.snapshotId === snapshotId);
    if (holder) {
      throw new InvalidInputError(
        `The snapshot holds the paused session ${holder.id}; delete that session (DELETE /v1/sessions/${holder.id}) to delete it.`,
      );
    }
    const store = await this.host.paused.snapshots();
    await store.delete(owner.id, snapshotId);
  }

  /** Deletes paused sessions and snapshots past the retention, and what unfinished snapshots left. */
  private async expire(): Promise<void> {
    try {
      const expired = await this.host.paused.expire(this.host.snapshotRetentionMs);
      const outputs = (await this.host.publisher?.expire(this.host.snapshotRetentionMs)) ?? 0;
      if (outputs > 0) this.host.logger.info({ outputs }, 'published outputs past their retention deleted');
      if (expired.sessions.length + expired.snapshots.length + expired.orphanParts > 0) {
        this.host.logger.info(
          {
            pausedSessions: expired.sessions.length,
            snapshots: expired.snapshots.length,
            bytes: expired.snapshots.reduce((total, snapshot) => total + snapshot.bytes, 0),
            orphanParts: expired.orphanParts,
            retentionMs: this.host.snapshotRetentionMs,
          },
          'snapshots past their retention deleted',
        );
      }
    } catch (error) {
      this.host.logger.warn({ error: (error as Error).message }, 'snapshot retention failed; it runs again in an hour');
    }
    if (!this.stopped) {
      this.retention = setTimeout(() => void this.expire(), RETENTION_INTERVAL_MS);
      this.retention.unref();
    }
  }
}
