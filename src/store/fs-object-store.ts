/**
 * The object store in a directory on this machine (`fs://DIR`, the default:
 * `<state dir>/store`). An object is a file; it is written beside its place
 * under a temporary name, flushed to disk, then renamed (or, for
 * `writeIfAbsent`, hard-linked, which fails when the name is taken) into
 * place, and the directory flushed: after a crash at any moment the key holds
 * the old object whole, the new one whole, or nothing. Temporary files a crash
 * left behind are never listed, and are removed when a listing finds them
 * an hour old (a write still going on is younger). Directories are
 * 0700 and files 0600: objects hold what sessions computed.
 */
import { createHash, randomBytes } from 'node:crypto';
import type { Dirent } from 'node:fs';
import {
  type FileHandle,
  link,
  mkdir,
  open,
  readdir,
  readFile,
  rename,
  rm,
  rmdir,
  stat,
  unlink,
} from 'node:fs/promises';
import path from 'node:path';
import {
  checkKey,
  type ObjectBody,
  type ObjectStore,
  ObjectTooLargeError,
  type StoredObject,
  type WriteOptions,
  type WrittenObject,
} from './object-store.js';

const DIRECTORY_MODE = 0o700;
const FILE_MODE = 0o600;
/** Temporary names carry this mark, which no key's word can (keys never start with a dot). */
const TEMPORARY = '.partial-';
const ABANDONED_AFTER_MS = 3_600_000;
const FLUSH_EVERY_BYTES = 16 << 20;
/** What a read of an object gives at once: large objects (snapshots) move in few chunks. */
const READ_CHUNK_BYTES = 1 << 20;

export class FsObjectStore implements ObjectStore {
  readonly location: string;

  constructor(private readonly root: string) {
    this.root = path.resolve(root);
    this.location = `fs://${this.root}`;
  }

  async write(key: string, body: ObjectBody, options?: WriteOptions): Promise<WrittenObject> {
    const file = this.file(key);
    const { temporary, written } = await this.writeTemporary(file, body, options);
    try {
      await rename(temporary, file);
    } catch (error) {
      await rm(temporary, { force: true });
      throw error;
    }
    await syncDirectory(path.dirname(file));
    return written;
  }

  async writeIfAbsent(key: string, body: ObjectBody): Promise<WrittenObject | undefined> {
    const file = this.file(key);
    const { temporary, written } = await this.writeTemporary(file, body);
    try {
      await link(temporary, file);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'EEXIST') return undefined;
      throw error;
    } finally {
      await rm(temporary, { force: true });
    }
    await syncDirectory(path.dirname(file));
    return written;
  }

  async read(key: string, maxBytes: number): Promise<Uint8Array | undefined> {
    const file = this.file(key);
    try {
      const { size } = await stat(file);
      if (size > maxBytes) throw new ObjectTooLargeError(key, size, maxBytes);
      return new Uint8Array(await readFile(file));
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw error;
    }
  }

  async open(key: string): Promise<AsyncIterable<Uint8Array> | undefined> {
    const file = this.file(key);
    try {
      const handle = await open(file, 'r');
      return handle.createReadStream({ highWaterMark: READ_CHUNK_BYTES });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw error;
    }
  }

  async *list(prefix: string): AsyncIterable<StoredObject> {
    // The prefix's whole words name a directory to start from; its last, partial word filters.
    const cut = prefix.lastIndexOf('/');
    const directory = cut < 0 ? '' : prefix.slice(0, cut);
    if (directory !== '') checkKey(directory);
    yield* this.walk(directory, prefix);
  }

  async delete(key: string): Promise<void> {
    const file = this.file(key);
    await rm(file, { force: true });
    await this.removeIfEmpty(path.dirname(file));
  }

  /** Removes a key's directory once nothing is left in it (what deleted or abandoned objects leave). */
  private async removeIfEmpty(directory: string): Promise<void> {
    if (directory === this.root) return;
    await rmdir(directory).catch(() => undefined); // not empty, or gone: either way nothing to do
  }

  private file(key: string): string {
    return path.join(this.root, ...checkKey(key).split('/'));
  }

  private async *walk(directory: string, prefix: string): AsyncIterable<StoredObject> {
    let entries: Dirent[];
    try {
      entries = await readdir(path.join(this.root, directory), { withFileTypes: true });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return;
      throw error;
    }
    for (const entry of entries) {
      const key = directory === '' ? entry.name : `${directory}/${entry.name}`;
      if (entry.name.startsWith(TEMPORARY)) {
        await removeIfAbandoned(path.join(this.root, key));
        continue;
      }
      if (entry.isDirectory()) {
        if (prefix.startsWith(`${key}/`) || key.startsWith(prefix)) yield* this.walk(key, prefix);
      } else if (entry.isFile() && key.startsWith(prefix)) {
        try {
          const { size, mtime } = await stat(path.join(this.root, key));
          yield { key, bytes: size, modifiedAt: mtime };
        } catch (error) {
          // Deleted while listing: it is simply not there.
          if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
        }
      }
    }
  }

  private async writeTemporary(
    file: string,
    body: ObjectBody,
    { digest = true }: WriteOptions = {},
  ): Promise<{ temporary: string; written: WrittenObject }> {
    const temporary = path.join(path.dirname(file), `${TEMPORARY}${randomBytes(6).toString('hex')}`);
    let handle: FileHandle;
    try {
      await mkdir(path.dirname(file), { recursive: true, mode: DIRECTORY_MODE });
      handle = await open(temporary, 'wx', FILE_MODE);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
      // A delete removed the directory as it emptied, between the mkdir and the open: make it again.
      await mkdir(path.dirname(file), { recursive: true, mode: DIRECTORY_MODE });
      handle = await open(temporary, 'wx', FILE_MODE);
    }
    const hash = digest ? createHash('sha256') : undefined;
    let bytes = 0;
    // A large object goes to disk as it is written, not all at the final flush:
    // a flush of what is written so far runs beside the writing, one at a time.
    let flushing: Promise<void> | undefined;
    let flushFailure: { error: unknown } | undefined;
    let unflushed = 0;
    try {
      for await (const chunk of body instanceof Uint8Array ? [body] : body) {
        hash?.update(chunk);
        bytes += chunk.byteLength;
        let offset = 0;
        while (offset < chunk.byteLength) {
          const { bytesWritten } = await handle.write(chunk, offset);
          offset += bytesWritten;
        }
        unflushed += chunk.byteLength;
        if (flushFailure) throw flushFailure.error;
        if (unflushed >= FLUSH_EVERY_BYTES && !flushing) {
          unflushed = 0;
          flushing = handle.datasync().then(
            () => {
              flushing = undefined;
            },
            (error: unknown) => {
              flushFailure = { error };
              flushing = undefined;
            },
          );
        }
      }
      await flushing;
      if (flushFailure) throw flushFailure.error;
      await handle.sync();
    } catch (error) {
      await flushing;
      await handle.close();
      await unlink(temporary).catch(() => {});
      await this.removeIfEmpty(path.dirname(file));
      throw error;
    }
    await handle.close();
    return { temporary, written: hash ? { bytes, sha256: hash.digest('hex') } : { bytes } };
  }
}

/** Removes a temporary file no write has touched for an hour: a crash left it. */
async function removeIfAbandoned(file: string): Promise<void> {
  try {
    const { mtimeMs } = await stat(file);
    if (Date.now() - mtimeMs > ABANDONED_AFTER_MS) await rm(file, { force: true });
  } catch {
    // Gone already, or unreadable: a later listing tries again.
  }
}

/** Flushes a directory, so a rename or link in it survives a crash of the machine. */
async function syncDirectory(directory: string): Promise<void> {
  const handle = await open(directory, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}
