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
 * The store is the state directory's (`<state dir>/store`), or the one
 * `--store` names (a directory, an S3 bucket, an Azure container), which
 * several servers may share: any of them resumes a session another paused.
 * A shared store's snapshots are signed with SANDCELL_SNAPSHOT_SECRET, the
 * same on every server. Resuming first claims the snapshot with a conditional
 * write, so of two servers asked for one paused session at once exactly one
 * resumes it. With neither a state directory (`--state-dir none`) nor a
 * store, the store is a temporary directory with a secret in memory: sessions
 * pause and resume while the process lives, and the directory goes with it.
 */
import { createHash, randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { InvalidInputError } from '../../errors.js';
import { SnapshotNotFoundError } from '../../snapshots/snapshot-errors.js';
import { SNAPSHOT_SECRET_VARIABLE, snapshotSecret } from '../../snapshots/snapshot-secret.js';
import { SnapshotStore, snapshotOwner } from '../../snapshots/snapshot-store.js';
import { FsObjectStore } from '../../store/fs-object-store.js';
import { listKeys, type ObjectStore, type StoredObject } from '../../store/object-store.js';
import { openObjectStore } from '../../store/open-object-store.js';
import type { PausedRecord } from './managed-session.js';

export type { PausedRecord } from './managed-session.js';

/** Records are small: ids, names, a reason, and a front door's own data (E2B's metadata, up to 56 KiB). */
const MAX_RECORD_BYTES = 256 * 1024;
const MAX_CONNECTION_BYTES = 16 * 1024;
const connectionKey = (id: string): string => `connections/${id}.json`;
const SESSION_ID = /^[a-z0-9_-]{1,64}$/;

/** Where paused sessions are kept: a state directory's store, or the store `--store` names. */
export interface PausedPlace {
  stateDirectory: string | false;
  /** A store's location (`fs:///DIR`, `s3://BUCKET/PREFIX`, `azure://ACCOUNT/CONTAINER/PREFIX`). */
  store?: string;
  /** Where credentials, SANDCELL_SNAPSHOT_SECRET and SANDCELL_NODE_NAME are read (the process's environment by default). */
  environment?: Record<string, string | undefined>;
  /** This server's node name, when not SANDCELL_NODE_NAME's (or the host's). */
  node?: string;
}

/** A claim on a paused session's snapshot older than this was left by a server that died resuming it. */
const STALE_CLAIM_MS = 10 * 60_000;

export class PausedSessions {
  private opened?: Promise<{ objects: ObjectStore; snapshots: SnapshotStore; secret: Uint8Array; temporary?: string }>;
  private readonly place: PausedPlace;
  /** This process, in the claims it writes. */
  private readonly holder = randomBytes(12).toString('hex');

  /** This server's name among those sharing a store (SANDCELL_NODE_NAME, else the host's name). */
  readonly node: string;

  constructor(place: PausedPlace | string | false) {
    this.place = typeof place === 'object' ? place : { stateDirectory: place };
    this.node = this.place.node ?? ((this.place.environment ?? process.env).SANDCELL_NODE_NAME || os.hostname());
  }

  /** Whether a lost marker (no snapshot) is another server's live session: the store is shared, the node not this one. */
  elsewhere(record: PausedRecord): boolean {
    return record.snapshotId === undefined && record.node !== undefined && record.node !== this.node;
  }

  /** Whether paused sessions outlive this process (a state directory or a store holds them). */
  get durable(): boolean {
    return this.place.store !== undefined || this.place.stateDirectory !== false;
  }

  /**
   * Opens the store and proves it works: a probe object written (conditionally),
   * read back, listed and deleted. Wrong credentials, a missing bucket or a
   * missing secret fail here, at start, with the store's location in the message.
   */
  async check(): Promise<{ location: string; clockSkewMs: number }> {
    const { objects } = await this.open();
    const key = `probes/${randomBytes(8).toString('hex')}`;
    const bytes = randomBytes(32);
    try {
      const before = Date.now();
      if ((await objects.writeIfAbsent(key, bytes)) === undefined)
        throw new Error('a new probe object already existed');
      const after = Date.now();
      const back = await objects.read(key, 1024);
      if (!back || !bytes.equals(Buffer.from(back))) throw new Error('a probe object read back different bytes');
      let listed: StoredObject | undefined;
      for await (const object of objects.list('probes/')) if (object.key === key) listed = object;
      if (!listed) throw new Error('a probe object was not listed');
      await objects.delete(key);
      // The store's clock (its objects' times, whole seconds on S3 and Azure) against this machine's.
      const stored = listed.modifiedAt.getTime();
      const clockSkewMs = stored < before - 1000 ? stored - before + 1000 : stored > after ? stored - after : 0;
      return { location: objects.location, clockSkewMs };
    } catch (error) {
      await objects.delete(key).catch(() => undefined);
      throw new InvalidInputError(`Cannot use the store ${objects.location}: ${storeErrorText(error)}`);
    }
  }

  /**
   * Claims the paused session's snapshot for this process's resume: true when
   * it is this one's to resume, false when another server claimed it first (and
   * is resuming it). A claim left by a server that died resuming goes stale.
   */
  async claim(ownerId: string, record: PausedRecord): Promise<boolean> {
    const holder = this.holder;
    if (record.snapshotId === undefined) return false;
    const { objects } = await this.open();
    const key = claimKey(ownerId, record.snapshotId);
    const body = () => Buffer.from(JSON.stringify({ holder, node: this.node, at: Date.now() }));
    if ((await objects.writeIfAbsent(key, body())) !== undefined) return true;
    const claimed = await objects.read(key, MAX_RECORD_BYTES).catch(() => undefined);
    const other = parseClaim(claimed);
    if (other.holder === holder) return true;
    // An earlier process of this server (its node name) died resuming it; another server's claim goes stale.
    const dead = other.node === this.node || Date.now() - other.at >= STALE_CLAIM_MS;
    if (!dead) return false;
    await objects.delete(key);
    return (await objects.writeIfAbsent(key, body())) !== undefined;
  }

  /** Lets go of a claim (a resume that failed), so another attempt may take it. */
  async release(ownerId: string, snapshotId: string): Promise<void> {
    const { objects } = await this.open();
    await objects.delete(claimKey(ownerId, snapshotId));
  }

  /** The store itself and its secret (published outputs go beside the snapshots). */
  async store(): Promise<{ objects: ObjectStore; secret: Uint8Array }> {
    const { objects, secret } = await this.open();
    return { objects, secret };
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

  /**
   * Takes `name` in `scope` for a new session `id` of the owner's, with a conditional write: of the
   * nodes of a cluster asked for a new name at once, one gets it. Undefined when taken; else the id
   * that holds it. The claim carries its time: until its session's record is written (the session
   * is starting), another node respects it for CLAIM_STALE_MS; a claim older than that whose
   * session has no record (it never started, or is gone) is taken over.
   */
  async claimName(ownerId: string, scope: string, name: string, id: string): Promise<string | undefined> {
    const { objects } = await this.open();
    const key = nameKey(ownerId, scope, name);
    const claim = Buffer.from(JSON.stringify({ id, claimedAt: Date.now() }));
    for (let attempt = 0; attempt < 2; attempt++) {
      if ((await objects.writeIfAbsent(key, claim)) !== undefined) return undefined;
      const bytes = await objects.read(key, MAX_RECORD_BYTES);
      if (bytes === undefined) continue;
      const holder = parseNameEntry(bytes);
      if (holder?.id === id) return undefined;
      if (holder && (await this.find(ownerId, holder.id)) !== undefined) return holder.id;
      // Nodes' clocks differ: a claim that seems to come from the near future is a fresh one.
      const age = Date.now() - (holder?.claimedAt ?? 0);
      if (holder?.claimedAt !== undefined && Math.abs(age) < CLAIM_STALE_MS) return holder.id;
      // Its session's record is gone (deleted, expired), it never started, or the entry is no entry: free.
      await objects.delete(key);
    }
    throw new Error(`the name ${JSON.stringify(name)} is being taken by another node; try again`);
  }

  /** The owner's paused session called `name` in `scope`, if there is one. */
  async findByName(ownerId: string, scope: string, name: string): Promise<PausedRecord | undefined> {
    const { objects } = await this.open();
    const entry = parseNameEntry(await objects.read(nameKey(ownerId, scope, name), MAX_RECORD_BYTES));
    if (entry === undefined) return undefined;
    const record = await this.find(ownerId, entry.id);
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

  /**
   * Keeps what a node needs to take up the MCP connection `id` (its owner, the host it is bound to,
   * the client's name): another node after a drain or a crash of this one, or this one restarted.
   * Its sessions are kept apart, as named sessions of the connection's scope.
   */
  async keepConnection(id: string, record: Uint8Array): Promise<void> {
    if (!SESSION_ID.test(id) || record.length > MAX_CONNECTION_BYTES) throw new Error('not a connection record');
    const { objects } = await this.open();
    await objects.write(connectionKey(id), record);
  }

  /** The record of MCP connection `id`, if one is kept. */
  async findConnection(id: string): Promise<Uint8Array | undefined> {
    if (!SESSION_ID.test(id)) return undefined;
    const { objects } = await this.open();
    return objects.read(connectionKey(id), MAX_CONNECTION_BYTES);
  }

  /** Forgets MCP connection `id` (its client closed it, or it idled out). */
  async forgetConnection(id: string): Promise<void> {
    if (!SESSION_ID.test(id)) return;
    const { objects } = await this.open();
    await objects.delete(connectionKey(id));
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
      await objects.delete(claimKey(ownerId, record.snapshotId));
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
    // A connection no node closed (its node died, or its client never came back).
    for await (const object of objects.list('connections/')) {
      if (!options.dryRun && now - object.modifiedAt.getTime() >= olderThanMs) await objects.delete(object.key);
    }
    // Claims outlive their snapshot only when a resume died between its claim and its end.
    for await (const object of objects.list('claims/')) {
      if (!options.dryRun && now - object.modifiedAt.getTime() >= Math.max(olderThanMs, STALE_CLAIM_MS))
        await objects.delete(object.key);
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
      const { stateDirectory, store, environment = process.env } = this.place;
      if (store !== undefined) {
        const objects = await openObjectStore(store, environment);
        const secret = await storeSecret(store, stateDirectory, environment);
        return { objects, snapshots: new SnapshotStore(objects, secret), secret };
      }
      if (stateDirectory === false) {
        const temporary = await mkdtemp(path.join(os.tmpdir(), 'sandcell-snapshots-'));
        const objects = new FsObjectStore(temporary);
        const secret = randomBytes(32);
        return { objects, snapshots: new SnapshotStore(objects, secret), secret, temporary };
      }
      const objects = new FsObjectStore(path.join(stateDirectory, 'store'));
      const secret = await snapshotSecret(stateDirectory, environment);
      return { objects, snapshots: new SnapshotStore(objects, secret), secret };
    })();
    // A store that could not be opened is tried again by the next call (its error said why).
    this.opened.catch(() => {
      this.opened = undefined;
    });
    return this.opened;
  }
}

/**
 * The secret a named store's snapshots are signed with: SANDCELL_SNAPSHOT_SECRET,
 * which every server sharing the store must have the same; a directory on this
 * machine may instead use the state directory's own secret.
 */
async function storeSecret(
  store: string,
  stateDirectory: string | false,
  environment: Record<string, string | undefined>,
): Promise<Buffer> {
  const given = environment[SNAPSHOT_SECRET_VARIABLE];
  if ((given === undefined || given === '') && !(store.startsWith('fs://') && stateDirectory !== false)) {
    throw new InvalidInputError(
      `The store ${store.split('?')[0]} needs ${SNAPSHOT_SECRET_VARIABLE}: the secret its snapshots are signed with, the same on every server that shares it (e.g. \`openssl rand -hex 32\`, kept where your other secrets are).`,
    );
  }
  return snapshotSecret(stateDirectory === false ? '' : stateDirectory, environment);
}

/** What a store's error says, without what could hold a secret (an SDK's request, headers or URL with a SAS). */
function storeErrorText(error: unknown): string {
  const { name, message, code } = error as { name?: string; message?: string; code?: string };
  const text = (message ?? String(error)).replace(/([?&](?:sig|se|sv|sp|st|sr|skoid|sktid)=)[^&\s]+/gi, '$1…');
  const label = code ?? (name && name !== 'Error' ? name : undefined);
  return label && !text.startsWith(label) ? `${label}: ${text}` : text;
}

function claimKey(ownerId: string, snapshotId: string): string {
  return `claims/${snapshotOwner(ownerId)}/${snapshotId}`;
}

function parseClaim(bytes: Uint8Array | undefined): { holder?: string; node?: string; at: number } {
  try {
    const claim = JSON.parse(Buffer.from(bytes ?? []).toString('utf8')) as {
      holder?: unknown;
      node?: unknown;
      at?: unknown;
    };
    return {
      ...(typeof claim.holder === 'string' ? { holder: claim.holder } : {}),
      ...(typeof claim.node === 'string' ? { node: claim.node } : {}),
      at: typeof claim.at === 'number' ? claim.at : 0,
    };
  } catch {
    return { at: 0 };
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

/** How long a name claimed for a session that is still starting (no record yet) is respected. */
export const CLAIM_STALE_MS = 120_000;

/**
 * A name's entry: the id of the session recorded under it (plain text), or a claim for one still
 * starting (`{"id", "claimedAt"}`). Undefined when there is none or it is not one of these.
 */
function parseNameEntry(bytes: Uint8Array | undefined): { id: string; claimedAt?: number } | undefined {
  if (bytes === undefined) return undefined;
  const text = Buffer.from(bytes).toString('utf8');
  if (!text.startsWith('{')) return text.length > 0 ? { id: text } : undefined;
  try {
    const parsed = JSON.parse(text) as { id?: unknown; claimedAt?: unknown };
    if (typeof parsed.id !== 'string') return undefined;
    return typeof parsed.claimedAt === 'number' ? { id: parsed.id, claimedAt: parsed.claimedAt } : { id: parsed.id };
  } catch {
    return undefined;
  }
}
