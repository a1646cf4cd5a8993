/**
 * Volumes: named directory trees that outlive every sandbox, each belonging to one owner (a key; the
 * library's is `local`), kept on this host under one directory (by default the state directory's
 * `volumes`). Each owner has a catalog of its volumes (`owners/<hash>/catalog.json`: id, name,
 * token, when made) and a shelf for their files (volume-shelf.ts: an image of the owner's quota as
 * root, else a directory); `ids/<id>` names the owner of a volume id, for the content API's token.
 *
 * The store also knows which live sessions mount which volume (`hold`), so that a volume in use is
 * not deleted from under them.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { InvalidInputError } from '../errors.js';
import { formatBytes } from '../protocol/format-bytes.js';
import { VolumeContent } from './volume-content.js';
import { VolumeExistsError, VolumeInUseError, VolumeNotFoundError } from './volume-errors.js';
import { checkVolumeName } from './volume-paths.js';
import { VolumeShelf } from './volume-shelf.js';

/** An owner's volumes together hold this much unless configured (`--volume-bytes-per-key`). */
export const DEFAULT_VOLUME_BYTES_PER_OWNER = 10 * 1024 ** 3;
/** An owner has at most this many volumes. */
export const MAX_VOLUMES_PER_OWNER = 100;
/**
 * The uid and gid every volume's files belong to on disk, as root: the last id below sandcell's range of
 * session uids (uid-leases.ts), so no account and no session owns them; a mount shows them as its session's.
 */
export const VOLUME_FILES_ID = 0x75ab_ffff;

export interface VolumeRecord {
  id: string;
  name: string;
  /** The content API's bearer token for this volume alone (E2B's volume token). */
  token: string;
  createdAt: string;
}

export interface VolumeStoreOptions {
  directory: string;
  /** What one owner's volumes may hold together. */
  bytesPerOwner?: number;
  /** An image per owner on a loop device (the quota holds for every writer): as root, unless false. */
  useImages?: boolean;
  /** Eight hex digits every new id begins with after `vol`: a cluster's node tag, so any node knows where a volume is. */
  idTag?: string;
}

/** A live session's mounts of one volume. */
export interface VolumeHold {
  release(): void;
  /** The session is closing (or pausing): `done` settles once its sandboxes have gone. */
  leave(done: Promise<void>): void;
}

interface HolderState {
  count: number;
  leaving?: Promise<void>;
}

/** How long a delete waits for the sessions that are leaving a volume. */
const LEAVING_WAIT_MS = 30_000;

interface Catalog {
  owner: string;
  volumes: VolumeRecord[];
}

export class VolumeStore {
  readonly directory: string;
  readonly bytesPerOwner: number;
  private readonly useImages: boolean;
  private readonly idTag: string;
  private readonly shelves = new Map<string, Promise<VolumeShelf>>();
  /** Each owner's catalog changes one at a time. */
  private readonly catalogQueues = new Map<string, Promise<unknown>>();
  /** Volume id → the live sessions that mount it: how many of each one's mounts do, and whether it is leaving. */
  private readonly holders = new Map<string, Map<string, HolderState>>();

  constructor(options: VolumeStoreOptions) {
    this.directory = path.resolve(options.directory);
    this.bytesPerOwner = options.bytesPerOwner ?? DEFAULT_VOLUME_BYTES_PER_OWNER;
    if (!Number.isSafeInteger(this.bytesPerOwner) || this.bytesPerOwner < 1024 * 1024) {
      throw new InvalidInputError('Volumes need at least 1 MiB per key (`--volume-bytes-per-key`).');
    }
    this.useImages = options.useImages ?? process.getuid?.() === 0;
    this.idTag = options.idTag ?? '';
    if (!/^(?:[0-9a-f]{8})?$/.test(this.idTag)) throw new InvalidInputError('A volume id tag is eight hex digits.');
  }

  /** Who owns the volumes' files on disk, as root (VOLUME_FILES_ID); absent, this process's uid does. */
  readonly fileOwner = process.getuid?.() === 0 ? { uid: VOLUME_FILES_ID, gid: VOLUME_FILES_ID } : undefined;

  async create(owner: string, name: string): Promise<VolumeRecord> {
    checkVolumeName(name);
    const shelf = await this.shelf(owner);
    return this.changeCatalog(owner, async (catalog) => {
      if (catalog.volumes.some((volume) => volume.name === name)) throw new VolumeExistsError(name);
      if (catalog.volumes.length >= MAX_VOLUMES_PER_OWNER) {
        throw new InvalidInputError(`A key has at most ${MAX_VOLUMES_PER_OWNER} volumes; delete one first.`);
      }
      const record: VolumeRecord = {
        id: `vol${this.idTag}${randomBytes(10 - this.idTag.length / 2).toString('hex')}`,
        name,
        token: `svt_${randomBytes(32).toString('base64url')}`,
        createdAt: new Date().toISOString(),
      };
      await mkdir(path.join(this.directory, 'ids'), { recursive: true, mode: 0o700 });
      await writeAtomically(path.join(this.directory, 'ids', record.id), ownerHash(owner));
      await shelf.createDirectory(record.id);
      catalog.volumes.push(record);
      return record;
    });
  }

  async list(owner: string): Promise<VolumeRecord[]> {
    return [...(await this.readCatalog(owner)).volumes];
  }

  /** The owner's volume of this name or id; another owner's is not found. */
  async get(owner: string, nameOrId: string): Promise<VolumeRecord> {
    const record = (await this.readCatalog(owner)).volumes.find(
      (volume) => volume.id === nameOrId || volume.name === nameOrId,
    );
    if (!record) throw new VolumeNotFoundError(nameOrId);
    return record;
  }

  /** Deletes the volume and its files; refused while a live session mounts it. */
  async delete(
    owner: string,
    nameOrId: string,
    options: { nameOf?: (sessionId: string) => string } = {},
  ): Promise<VolumeRecord> {
    const shelf = await this.shelf(owner);
    return this.changeCatalog(owner, async (catalog) => {
      const record = catalog.volumes.find((volume) => volume.id === nameOrId || volume.name === nameOrId);
      if (!record) throw new VolumeNotFoundError(nameOrId);
      await this.leavingsSettled(record.id);
      const sessions = this.holdersOf(record.id);
      if (sessions.length > 0) {
        throw new VolumeInUseError(record.name, sessions, options.nameOf ? sessions.map(options.nameOf) : undefined);
      }
      catalog.volumes = catalog.volumes.filter((volume) => volume !== record);
      await shelf.removeDirectory(record.id);
      await rm(path.join(this.directory, 'ids', record.id), { force: true });
      return record;
    });
  }

  /** The owner and record of the volume this token opens (the content API's own credential), if it does. */
  async byToken(volumeId: string, token: string): Promise<{ owner: string; record: VolumeRecord } | undefined> {
    if (!/^vol[0-9a-f]{20}$/.test(volumeId)) return undefined;
    const hash = await readFile(path.join(this.directory, 'ids', volumeId), 'utf8').catch(() => undefined);
    if (!hash) return undefined;
    const catalog = await readCatalogFile(this.catalogFile(hash)).catch(() => undefined);
    const record = catalog?.volumes.find((volume) => volume.id === volumeId);
    if (!catalog || !record || !sameSecret(record.token, token)) return undefined;
    return { owner: catalog.owner, record };
  }

  /** The volume's files, through paths that never leave it (volume-content.ts). */
  async content(owner: string, record: VolumeRecord): Promise<VolumeContent> {
    const shelf = await this.shelf(owner);
    return new VolumeContent(shelf.directoryOf(record.id), {
      shelf,
      ...(this.fileOwner ? { fileOwner: this.fileOwner } : {}),
    });
  }

  /** The host directory of the volume's files, and whether the quota holds there for every writer. */
  async location(owner: string, record: VolumeRecord): Promise<{ directory: string; bounded: boolean }> {
    const shelf = await this.shelf(owner);
    return { directory: shelf.directoryOf(record.id), bounded: shelf.bounded };
  }

  async usage(owner: string): Promise<{ usedBytes: number; quotaBytes: number; bounded: boolean }> {
    const shelf = await this.shelf(owner);
    return { ...(await shelf.usage()), bounded: shelf.bounded };
  }

  /**
   * Marks the volume as mounted by a live session until the hold is released. A session on its way out
   * says so (`leave`, with the promise of its end): a delete waits for it rather than refusing.
   */
  hold(volumeId: string, sessionId: string): VolumeHold {
    const sessions = this.holders.get(volumeId) ?? new Map<string, HolderState>();
    this.holders.set(volumeId, sessions);
    const state = sessions.get(sessionId) ?? { count: 0 };
    state.count++;
    sessions.set(sessionId, state);
    let released = false;
    return {
      release: () => {
        if (released) return;
        released = true;
        state.count--;
        if (state.count > 0) return;
        sessions.delete(sessionId);
        if (sessions.size === 0) this.holders.delete(volumeId);
      },
      leave: (done) => {
        state.leaving = done;
      },
    };
  }

  holdersOf(volumeId: string): string[] {
    return [...(this.holders.get(volumeId)?.keys() ?? [])];
  }

  /** Waits (a while) for the sessions leaving the volume to have gone. */
  private async leavingsSettled(volumeId: string): Promise<void> {
    const leaving = [...(this.holders.get(volumeId)?.values() ?? [])]
      .map((state) => state.leaving)
      .filter((done): done is Promise<void> => done !== undefined);
    if (leaving.length === 0) return;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      Promise.allSettled(leaving),
      new Promise((resolve) => {
        timer = setTimeout(resolve, LEAVING_WAIT_MS);
      }),
    ]);
    clearTimeout(timer);
  }

  /** Unmounts the owners' images; their files stay for the next process. */
  async close(): Promise<void> {
    const shelves = [...this.shelves.values()];
    this.shelves.clear();
    await Promise.all(shelves.map(async (shelf) => (await shelf.catch(() => undefined))?.close()));
  }

  /** A sentence for errors and doctor: how the quota holds here. */
  async describeQuota(owner: string): Promise<string> {
    const { usedBytes, quotaBytes, bounded } = await this.usage(owner);
    return `${formatBytes(usedBytes)} of ${formatBytes(quotaBytes)} used${bounded ? '' : " (measured, not enforced on the sandboxes' own writes: run as root for a hard bound)"}`;
  }

  private async shelf(owner: string): Promise<VolumeShelf> {
    const shelf = await this.openShelf(owner);
    await shelf.ensureMounted();
    return shelf;
  }

  private openShelf(owner: string): Promise<VolumeShelf> {
    const hash = ownerHash(owner);
    let shelf = this.shelves.get(hash);
    if (!shelf) {
      shelf = VolumeShelf.open({
        directory: path.join(this.directory, 'owners', hash),
        quotaBytes: this.bytesPerOwner,
        useImage: this.useImages,
        ...(this.fileOwner ? { fileOwner: this.fileOwner } : {}),
      });
      // A shelf that failed to open is tried again by the next request.
      shelf.catch(() => this.shelves.delete(hash));
      this.shelves.set(hash, shelf);
    }
    return shelf;
  }

  private catalogFile(hash: string): string {
    return path.join(this.directory, 'owners', hash, 'catalog.json');
  }

  private async readCatalog(owner: string): Promise<Catalog> {
    const catalog = await readCatalogFile(this.catalogFile(ownerHash(owner))).catch((error: NodeJS.ErrnoException) => {
      if (error.code === 'ENOENT') return { owner, volumes: [] };
      throw error;
    });
    return catalog;
  }

  private changeCatalog<T>(owner: string, change: (catalog: Catalog) => Promise<T>): Promise<T> {
    const hash = ownerHash(owner);
    const previous = this.catalogQueues.get(hash) ?? Promise.resolve();
    const next = previous
      .catch(() => undefined)
      .then(async () => {
        const catalog = await this.readCatalog(owner);
        const result = await change(catalog);
        await mkdir(path.dirname(this.catalogFile(hash)), { recursive: true, mode: 0o700 });
        await writeAtomically(this.catalogFile(hash), `${JSON.stringify(catalog, null, 2)}\n`);
        return result;
      });
    this.catalogQueues.set(hash, next);
    return next;
  }
}

export function ownerHash(owner: string): string {
  return createHash('sha256').update(`sandcell-volume-owner:${owner}`).digest('hex').slice(0, 32);
}

async function readCatalogFile(file: string): Promise<Catalog> {
  const parsed = JSON.parse(await readFile(file, 'utf8')) as Catalog;
  if (typeof parsed.owner !== 'string' || !Array.isArray(parsed.volumes))
    throw new Error(`${file} is not a volume catalog`);
  return parsed;
}

function sameSecret(expected: string, given: string): boolean {
  const a = Buffer.from(expected);
  const b = Buffer.from(given);
  return a.length === b.length && timingSafeEqual(a, b);
}

async function writeAtomically(file: string, content: string): Promise<void> {
  const temporary = `${file}.${process.pid}.${randomBytes(4).toString('hex')}`;
  await writeFile(temporary, content, { mode: 0o600 });
  await rename(temporary, file);
}
