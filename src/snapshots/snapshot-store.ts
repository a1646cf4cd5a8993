/**
 * Snapshots in an object store: a snapshot is its parts (the session's files,
 * each context's state) and a manifest naming every part's size and SHA-256,
 * signed with an HMAC under the server's secret and the owner it belongs to.
 *
 *   snapshots/<owner digest>/<snapshot id>/<part>
 *   snapshots/<owner digest>/<snapshot id>/manifest.json   (written last)
 *
 * A snapshot exists once its manifest does: parts are written first, the
 * manifest last and whole, so a crash at any moment leaves the snapshot whole
 * or absent (its orphaned parts are pruned). A context's state is code when
 * loaded (a pickle), so nothing is handed on that does not verify: a manifest
 * whose HMAC fails, that names another owner, or a part whose bytes do not hash
 * to what the manifest says is refused, and a reader is told which.
 */
import { createHash, createHmac, randomUUID, timingSafeEqual } from 'node:crypto';
import { listKeys, type ObjectBody, type ObjectStore } from '../store/object-store.js';
import { SnapshotInvalidError, SnapshotNotFoundError } from './snapshot-errors.js';

/** Manifests are small (names, sizes, hashes, a report); a bigger one is not ours. */
const MAX_MANIFEST_BYTES = 1024 * 1024;
const MANIFEST = 'manifest.json';
const PART_NAME = /^[a-z0-9][a-z0-9._-]{0,63}$/;
const SNAPSHOT_ID = /^[0-9a-f]{32}$/;
/** Parts with no manifest this old were left by a snapshot that never finished. */
const ORPHAN_AFTER_MS = 3_600_000;

export interface SnapshotPart {
  name: string;
  bytes: number;
  sha256: string;
}

export interface SnapshotManifest {
  format: 1;
  id: string;
  /** The owner it belongs to, as a digest (never a key). */
  owner: string;
  /** The session it was taken of. */
  sessionId: string;
  createdAt: string;
  parts: SnapshotPart[];
  /** What the layer above keeps with it (the contexts, the environment, what could not be saved). */
  details: Record<string, unknown>;
}

interface SignedManifest {
  manifest: SnapshotManifest;
  hmac: string;
}

/** The digest of an owner's id a snapshot's keys and manifest name. */
export function snapshotOwner(ownerId: string): string {
  return createHash('sha256').update(`sandcell-snapshot-owner:${ownerId}`).digest('hex').slice(0, 32);
}

/** A snapshot retention removed: its owner's digest, id, size and when it was written. */
export interface ExpiredSnapshot {
  owner: string;
  id: string;
  bytes: number;
  createdAt: string;
}

/** A snapshot being written: its parts, then `commit()`; until then it does not exist. */
export interface SnapshotWriter {
  readonly id: string;
  part(name: string, body: ObjectBody): Promise<SnapshotPart>;
  commit(details: Record<string, unknown>): Promise<SnapshotManifest>;
  /** Removes the parts written so far (a snapshot that failed). */
  discard(): Promise<void>;
}

export class SnapshotStore {
  constructor(
    private readonly store: ObjectStore,
    private readonly secret: Uint8Array,
  ) {
    if (secret.byteLength < 32) throw new Error('The snapshot secret must be at least 32 bytes.');
  }

  get location(): string {
    return this.store.location;
  }

  begin(ownerId: string, sessionId: string): SnapshotWriter {
    const owner = snapshotOwner(ownerId);
    const id = randomUUID().replace(/-/g, '');
    const prefix = `snapshots/${owner}/${id}`;
    const parts: SnapshotPart[] = [];
    let committed = false;
    return {
      id,
      part: async (name, body) => {
        if (committed) throw new Error('The snapshot is committed already.');
        if (!PART_NAME.test(name) || name === MANIFEST || parts.some((part) => part.name === name)) {
          throw new Error(`Not a valid or new snapshot part name: ${JSON.stringify(name)}`);
        }
        const { bytes, sha256 } = await this.store.write(`${prefix}/${name}`, body, { digest: true });
        if (sha256 === undefined) throw new Error(`The store wrote ${name} without the digest asked for.`);
        const part = { name, bytes, sha256 };
        parts.push(part);
        return part;
      },
      commit: async (details) => {
        if (committed) throw new Error('The snapshot is committed already.');
        committed = true;
        const manifest: SnapshotManifest = {
          format: 1,
          id,
          owner,
          sessionId,
          createdAt: new Date().toISOString(),
          parts: [...parts],
          details,
        };
        const signed: SignedManifest = { manifest, hmac: this.sign(manifest) };
        await this.store.write(`${prefix}/${MANIFEST}`, Buffer.from(JSON.stringify(signed)));
        return manifest;
      },
      discard: async () => {
        for (const part of parts) await this.store.delete(`${prefix}/${part.name}`);
      },
    };
  }

  /** The snapshot's manifest, verified; throws SnapshotNotFoundError or SnapshotInvalidError. */
  async manifest(ownerId: string, id: string): Promise<SnapshotManifest> {
    if (!SNAPSHOT_ID.test(id)) throw new SnapshotNotFoundError(id);
    const owner = snapshotOwner(ownerId);
    const bytes = await this.store.read(`snapshots/${owner}/${id}/${MANIFEST}`, MAX_MANIFEST_BYTES);
    if (bytes === undefined) throw new SnapshotNotFoundError(id);
    return this.verify(bytes, owner, id);
  }

  /**
   * A part's bytes as they stream, checked against the manifest: a part that is
   * missing, longer or shorter, or hashes otherwise throws SnapshotInvalidError at
   * the point it is found out (at its end for a changed byte). A reader must not
   * load what it read before the stream ended without an error.
   */
  async *part(manifest: SnapshotManifest, name: string): AsyncIterable<Uint8Array> {
    const part = manifest.parts.find((candidate) => candidate.name === name);
    if (!part) throw new SnapshotInvalidError(manifest.id, `it has no part ${JSON.stringify(name)}`);
    const stream = await this.store.open(`snapshots/${manifest.owner}/${manifest.id}/${name}`);
    if (!stream) throw new SnapshotInvalidError(manifest.id, `its part ${name} is missing`);
    const hash = createHash('sha256');
    let bytes = 0;
    for await (const chunk of stream) {
      bytes += chunk.byteLength;
      if (bytes > part.bytes) throw new SnapshotInvalidError(manifest.id, `its part ${name} is longer than recorded`);
      hash.update(chunk);
      yield chunk;
    }
    if (bytes !== part.bytes || hash.digest('hex') !== part.sha256) {
      throw new SnapshotInvalidError(manifest.id, `its part ${name} is not what was written`);
    }
  }

  /** Reads every part through its check: a snapshot about to replace a session's state is whole first. */
  async verifyParts(manifest: SnapshotManifest): Promise<void> {
    for (const { name } of manifest.parts) {
      for await (const _chunk of this.part(manifest, name)) {
        // Only the hash matters here.
      }
    }
  }

  /** The owner's snapshots that verify, newest first; one that does not verify is left out. */
  async list(ownerId: string): Promise<SnapshotManifest[]> {
    const owner = snapshotOwner(ownerId);
    const manifests: SnapshotManifest[] = [];
    for (const key of await listKeys(this.store, `snapshots/${owner}/`)) {
      const [, , id, name] = key.split('/');
      if (name !== MANIFEST || id === undefined) continue;
      try {
        manifests.push(await this.manifest(ownerId, id));
      } catch (error) {
        if (!(error instanceof SnapshotInvalidError || error instanceof SnapshotNotFoundError)) throw error;
      }
    }
    return manifests.sort((a, b) => b.createdAt.localeCompare(a.createdAt));
  }

  /** Removes a snapshot: its manifest first (it stops existing), then its parts. */
  async delete(ownerId: string, id: string): Promise<void> {
    const manifest = await this.manifest(ownerId, id);
    const prefix = `snapshots/${manifest.owner}/${manifest.id}`;
    await this.store.delete(`${prefix}/${MANIFEST}`);
    for (const key of await listKeys(this.store, `${prefix}/`)) await this.store.delete(key);
  }

  /**
   * Every snapshot in the store, of every owner, that verifies (the operator's
   * view: `sandcell snapshots list`); those that do not are counted apart.
   */
  async listAll(): Promise<{ manifests: SnapshotManifest[]; unverified: number }> {
    const manifests: SnapshotManifest[] = [];
    let unverified = 0;
    for await (const object of this.store.list('snapshots/')) {
      const [, owner, id, name] = object.key.split('/');
      if (name !== MANIFEST || owner === undefined || id === undefined) continue;
      const bytes = await this.store.read(object.key, MAX_MANIFEST_BYTES).catch(() => undefined);
      try {
        if (bytes === undefined) throw new SnapshotNotFoundError(id);
        manifests.push(this.verify(bytes, owner, id));
      } catch {
        unverified++;
      }
    }
    return { manifests: manifests.sort((a, b) => b.createdAt.localeCompare(a.createdAt)), unverified };
  }

  /**
   * Removes every snapshot written more than `olderThanMs` ago (retention), of
   * every owner, verified or not: its manifest first, then its parts.
   * `dryRun` only says which.
   */
  async expire(olderThanMs: number, options: { now?: number; dryRun?: boolean } = {}): Promise<ExpiredSnapshot[]> {
    const now = options.now ?? Date.now();
    const expired: ExpiredSnapshot[] = [];
    for await (const object of this.store.list('snapshots/')) {
      const [, owner, id, name] = object.key.split('/');
      if (name !== MANIFEST || owner === undefined || id === undefined) continue;
      if (now - object.modifiedAt.getTime() < olderThanMs) continue;
      const prefix = `snapshots/${owner}/${id}`;
      let bytes = 0;
      for await (const part of this.store.list(`${prefix}/`)) bytes += part.bytes;
      expired.push({ owner, id, bytes, createdAt: object.modifiedAt.toISOString() });
      if (options.dryRun) continue;
      await this.store.delete(`${prefix}/${MANIFEST}`);
      for (const key of await listKeys(this.store, `${prefix}/`)) await this.store.delete(key);
    }
    return expired;
  }

  /** Removes parts no manifest names that are older than an hour: what crashed snapshots left. */
  async pruneOrphans(now = Date.now()): Promise<number> {
    const byPrefix = new Map<string, { hasManifest: boolean; keys: { key: string; modifiedAt: Date }[] }>();
    for await (const object of this.store.list('snapshots/')) {
      const [, owner, id, name] = object.key.split('/');
      if (owner === undefined || id === undefined || name === undefined) continue;
      const prefix = `snapshots/${owner}/${id}`;
      const entry = byPrefix.get(prefix) ?? { hasManifest: false, keys: [] };
      if (name === MANIFEST) entry.hasManifest = true;
      else entry.keys.push({ key: object.key, modifiedAt: object.modifiedAt });
      byPrefix.set(prefix, entry);
    }
    let removed = 0;
    for (const { hasManifest, keys } of byPrefix.values()) {
      if (hasManifest) continue;
      for (const { key, modifiedAt } of keys) {
        if (now - modifiedAt.getTime() < ORPHAN_AFTER_MS) continue;
        await this.store.delete(key);
        removed++;
      }
    }
    return removed;
  }

  private sign(manifest: SnapshotManifest): string {
    return createHmac('sha256', this.secret).update(JSON.stringify(manifest)).digest('hex');
  }

  private verify(bytes: Uint8Array, owner: string, id: string): SnapshotManifest {
    let signed: SignedManifest;
    try {
      signed = JSON.parse(Buffer.from(bytes).toString('utf8')) as SignedManifest;
    } catch {
      throw new SnapshotInvalidError(id, 'its manifest is not JSON');
    }
    const manifest = signed?.manifest;
    if (typeof signed?.hmac !== 'string' || typeof manifest !== 'object' || manifest === null) {
      throw new SnapshotInvalidError(id, 'its manifest is not a signed manifest');
    }
    const given = Buffer.from(signed.hmac, 'hex');
    const wanted = Buffer.from(this.sign(manifest), 'hex');
    if (given.length !== wanted.length || !timingSafeEqual(given, wanted)) {
      throw new SnapshotInvalidError(
        id,
        'its signature does not verify (it was changed, or written by another server)',
      );
    }
    // Signed by us: the fields are ours. A manifest moved under another owner or id still names its own.
    if (manifest.owner !== owner || manifest.id !== id) {
      throw new SnapshotInvalidError(id, 'it belongs to another key');
    }
    return manifest;
  }
}
