/**
 * The server's paused sessions: each is a snapshot (snapshot-store.ts) and a
 * small record saying which session it was, kept in the object store beside
 * the snapshots, so a restarted server (or, with a shared store, another one)
 * finds them at the session's next request.
 *
 *   paused/<owner digest>/<session id>.json   { id, source, name?, scope?, snapshotId, ... }
 *   paused-names/<owner digest>/<digest of scope and name>   the id of a named one
 *
 * A record only points at a snapshot; the snapshot itself is verified (its
 * HMAC, its owner) before anything of it is loaded, so a changed record can at
 * most point at another snapshot of the same owner. A session whose pause
 * failed has a record that says so (`lost`), and its next request is told
 * (410 session-lost), never answered by a fresh sandbox under its id.
 *
 * With no state directory (`--state-dir none`) the store is a temporary
 * directory with a secret in memory: sessions pause and resume while the
 * process lives, and the directory goes with it.
 */
import { createHash, randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { openSnapshotStore } from '../../snapshots/local-snapshots.js';
import { SnapshotNotFoundError } from '../../snapshots/snapshot-errors.js';
import { SnapshotStore, snapshotOwner } from '../../snapshots/snapshot-store.js';
import { FsObjectStore } from '../../store/fs-object-store.js';
import { listKeys, type ObjectStore } from '../../store/object-store.js';
import type { PausedRecord } from './managed-session.js';

export type { PausedRecord } from './managed-session.js';

/** Records are small: ids, names, a reason, and a front door's own data (E2B's metadata, up to 56 KiB). */
const MAX_RECORD_BYTES = 256 * 1024;
const SESSION_ID = /^[a-z0-9_-]{1,64}$/;

export class PausedSessions {
  private opened?: Promise<{ objects: ObjectStore; snapshots: SnapshotStore; temporary?: string }>;

  constructor(private readonly stateDirectory: string | false) {}

  /** Whether paused sessions outlive this process (a state directory holds them). */
  get durable(): boolean {
    return this.stateDirectory !== false;
  }

  /** The snapshot store the server's sessions pause into. */
  async snapshots(): Promise<SnapshotStore> {
    return (await this.open()).snapshots;
  }

  async record(ownerId: string, record: PausedRecord): Promise<void> {
    const { objects } = await this.open();
    await objects.write(recordKey(ownerId, record.id), Buffer.from(JSON.stringify(record)));
    // A named session (an Azure identifier, an MCP session name) is found again by its name.
    if (record.name !== undefined) {
      await objects.write(nameKey(ownerId, record.scope ?? record.source, record.name), Buffer.from(record.id));
    }
  }

  /** The owner's paused session called `name` in `scope`, if there is one. */
  async findByName(ownerId: string, scope: string, name: string): Promise<PausedRecord | undefined> {
    const { objects } = await this.open();
    const id = await objects.read(nameKey(ownerId, scope, name), MAX_RECORD_BYTES);
    if (id === undefined) return undefined;
    const record = await this.find(ownerId, Buffer.from(id).toString('utf8'));
    return record?.name === name && (record.scope ?? record.source) === scope ? record : undefined;
  }

  /** The owner's paused session with this id, if there is one (another owner's is none). */
  async find(ownerId: string, id: string): Promise<PausedRecord | undefined> {
    if (!SESSION_ID.test(id)) return undefined;
    const { objects } = await this.open();
    const bytes = await objects.read(recordKey(ownerId, id), MAX_RECORD_BYTES);
    if (bytes === undefined) return undefined;
    const record = parseRecord(bytes);
    return record?.id === id ? record : undefined;
  }

  async list(ownerId: string): Promise<PausedRecord[]> {
    const { objects } = await this.open();
    const records: PausedRecord[] = [];
    for (const key of await listKeys(objects, `paused/${snapshotOwner(ownerId)}/`)) {
      // One record that cannot be read (over the bound, say) costs only itself.
      const bytes = await objects.read(key, MAX_RECORD_BYTES).catch(() => undefined);
      const record = bytes && parseRecord(bytes);
      if (record) records.push(record);
    }
    return records.sort((a, b) => b.pausedAt.localeCompare(a.pausedAt));
  }

  /** Forgets a paused session, and deletes its snapshot unless `keepSnapshot`. */
  async remove(
    ownerId: string,
    record: Pick<PausedRecord, 'id' | 'source' | 'name' | 'scope' | 'snapshotId'>,
    options: { keepSnapshot?: boolean } = {},
  ): Promise<void> {
    const { objects, snapshots } = await this.open();
    await objects.delete(recordKey(ownerId, record.id));
    if (record.name !== undefined) await objects.delete(nameKey(ownerId, record.scope ?? record.source, record.name));
    if (record.snapshotId && !options.keepSnapshot) {
      await snapshots.delete(ownerId, record.snapshotId).catch((error) => {
        if (!(error instanceof SnapshotNotFoundError)) throw error;
      });
    }
  }

  /**
   * Retention: paused sessions paused more than `olderThanMs` ago are
   * forgotten (their records and names), and every snapshot written that long
   * ago is deleted (those of paused sessions with them), as are the parts of
   * snapshots that never finished. Says how many of each.
   */
  async expire(olderThanMs: number, options: { now?: number; dryRun?: boolean } = {}) {
    const now = options.now ?? Date.now();
    const { objects, snapshots } = await this.open();
    const sessions: { owner: string; id: string }[] = [];
    for await (const object of objects.list('paused/')) {
      if (now - object.modifiedAt.getTime() < olderThanMs) continue;
      const [, owner] = object.key.split('/');
      const bytes = await objects.read(object.key, MAX_RECORD_BYTES).catch(() => undefined);
      const record = bytes && parseRecord(bytes);
      sessions.push({ owner: owner ?? '', id: record ? record.id : object.key });
      if (options.dryRun) continue;
      await objects.delete(object.key);
      if (record?.name !== undefined && owner !== undefined) {
        await objects.delete(`paused-names/${owner}/${nameDigest(record.scope ?? record.source, record.name)}`);
      }
    }
    const expired = await snapshots.expire(olderThanMs, { now, ...(options.dryRun ? { dryRun: true } : {}) });
    const orphans = options.dryRun ? 0 : await snapshots.pruneOrphans(now);
    return { sessions, snapshots: expired, orphanParts: orphans };
  }

  /** Every paused session of every owner (the operator's view). */
  async listAll(): Promise<(PausedRecord & { owner: string })[]> {
    const { objects } = await this.open();
    const records: (PausedRecord & { owner: string })[] = [];
    for await (const object of objects.list('paused/')) {
      const bytes = await objects.read(object.key, MAX_RECORD_BYTES).catch(() => undefined);
      const record = bytes && parseRecord(bytes);
      if (record) records.push({ ...record, owner: object.key.split('/')[1] ?? '' });
    }
    return records;
  }

  /** Removes the temporary store of a server without a state directory. */
  async close(): Promise<void> {
    const opened = await this.opened?.catch(() => undefined);
    if (opened?.temporary) await rm(opened.temporary, { recursive: true, force: true });
  }

  private open() {
    this.opened ??= (async () => {
      if (this.stateDirectory === false) {
        const temporary = await mkdtemp(path.join(os.tmpdir(), 'sandcell-snapshots-'));
        const objects = new FsObjectStore(temporary);
        return { objects, snapshots: new SnapshotStore(objects, randomBytes(32)), temporary };
      }
      const snapshots = await openSnapshotStore(this.stateDirectory);
      return { objects: new FsObjectStore(path.join(this.stateDirectory, 'store')), snapshots };
    })();
    return this.opened;
  }
}

function nameKey(ownerId: string, scope: string, name: string): string {
  return `paused-names/${snapshotOwner(ownerId)}/${nameDigest(scope, name)}`;
}

function nameDigest(scope: string, name: string): string {
  return createHash('sha256').update(`${scope}\u0000${name}`).digest('hex').slice(0, 40);
}

function recordKey(ownerId: string, id: string): string {
  return `paused/${snapshotOwner(ownerId)}/${id}.json`;
}

function parseRecord(bytes: Uint8Array): PausedRecord | undefined {
  try {
    const record = JSON.parse(Buffer.from(bytes).toString('utf8')) as PausedRecord;
    if (typeof record?.id !== 'string' || !SESSION_ID.test(record.id) || typeof record.source !== 'string')
      return undefined;
    return record;
  } catch {
    return undefined;
  }
}
