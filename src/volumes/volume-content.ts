/**
 * A volume's files as the host reads and writes them for a client (the content API, `sandcell
 * volume cp`), while sandboxes may be changing the same tree. Nothing a sandbox planted may take
 * the host anywhere else: a path is opened one directory at a time, each by the descriptor of the
 * one before (`/proc/self/fd/N/name`, openat's meaning) and never through a symlink; a file is
 * written beside its name and renamed over it; what is removed is renamed out of every sandbox's
 * reach first. Writes are held to the owner's quota (volume-shelf.ts).
 */
import { constants } from 'node:fs';
import { chown, type FileHandle, lchown, lstat, mkdir, open, readdir, readlink, rename, rm } from 'node:fs/promises';
import type { Readable } from 'node:stream';
import { FileOperationError, InvalidInputError } from '../errors.js';
import { formatBytes } from '../protocol/format-bytes.js';
import { volumePath } from './volume-paths.js';
import type { VolumeShelf } from './volume-shelf.js';

const DIRECTORY_FLAGS = constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW;
/** The uid and gid the sandbox's user has (E2B's `user`): what a volume's own files show as. */
const SANDBOX_USER_ID = 1000;
const NOBODY_ID = 65534;
/** A listing is at most this deep and this long. */
const MAX_LIST_DEPTH = 16;
const MAX_LIST_ENTRIES = 10_000;

export type VolumeEntryType = 'file' | 'directory' | 'symlink' | 'unknown';

export interface VolumeEntry {
  name: string;
  /** The entry's path from the volume's top, beginning with "/". */
  path: string;
  type: VolumeEntryType;
  size: number;
  mode: number;
  uid: number;
  gid: number;
  atime: string;
  mtime: string;
  ctime: string;
  /** A symlink's target, as written (never followed). */
  target?: string;
}

export interface OwnershipChange {
  uid?: number;
  gid?: number;
  mode?: number;
}

export class VolumeContent {
  constructor(
    private readonly top: string,
    private readonly host: {
      shelf: VolumeShelf;
      /** The uid and gid of the volume's files on disk, when not this process's. */
      fileOwner?: { uid: number; gid: number };
    },
  ) {}

  async stat(given: string): Promise<VolumeEntry> {
    const names = splitPath(given);
    if (names.length === 0) return this.entryOf('', '', this.top);
    return this.within(names.slice(0, -1), given, async (parent) => {
      const name = names.at(-1) as string;
      return this.entryOf(names.join('/'), name, at(parent, name));
    });
  }

  /** The entries of a directory, `depth` levels down (1: its own), never into a symlink. */
  async list(given: string, depth = 1): Promise<VolumeEntry[]> {
    if (!Number.isInteger(depth) || depth < 1 || depth > MAX_LIST_DEPTH) {
      throw new InvalidInputError(`A listing's depth is 1 to ${MAX_LIST_DEPTH}.`);
    }
    const names = splitPath(given);
    return this.within(names, given, async (directory) => {
      const entries: VolumeEntry[] = [];
      await this.listInto(directory, names.join('/'), depth, entries);
      return entries;
    });
  }

  /** The file's bytes as a stream (with its size); a directory or a symlink is refused. */
  async read(given: string): Promise<{ stream: Readable; size: number }> {
    const names = nonEmpty(splitPath(given), given);
    const handle = await this.within(names.slice(0, -1), given, (parent) =>
      openFile(at(parent, names.at(-1) as string), constants.O_RDONLY | constants.O_NOFOLLOW, given),
    );
    try {
      const info = await handle.stat();
      if (info.isDirectory()) throw new FileOperationError('is-a-directory', `${given} is a directory.`);
      if (!info.isFile()) throw new FileOperationError('not-a-file', `${given} is not a regular file.`);
      return { stream: handle.createReadStream({ autoClose: true }), size: info.size };
    } catch (error) {
      await handle.close();
      throw error;
    }
  }

  /**
   * Writes the file from `body` (parents made as needed): beside its name, then renamed over it, so a
   * reader sees the old bytes or the new, and a write past the quota leaves the old file as it was.
   */
  async write(
    given: string,
    body: AsyncIterable<Uint8Array>,
    change: OwnershipChange & { maxBytes?: number } = {},
  ): Promise<VolumeEntry> {
    const names = nonEmpty(splitPath(given), given);
    const room = await this.room();
    return this.within(
      names.slice(0, -1),
      given,
      async (parent) => {
        const name = names.at(-1) as string;
        const temporary = `.sandcell-write-${process.pid}-${Math.random().toString(36).slice(2, 10)}`;
        const mode = change.mode === undefined ? 0o644 : checkMode(change.mode);
        const handle = await openFile(
          at(parent, temporary),
          constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW,
          given,
          mode,
        );
        let written = 0;
        try {
          for await (const chunk of body) {
            written += chunk.byteLength;
            if (change.maxBytes !== undefined && written > change.maxBytes) {
              throw new FileOperationError(
                'too-large',
                `${given} is larger than the ${formatBytes(change.maxBytes)} one upload may be; nothing was written.`,
              );
            }
            if (room !== undefined && written > room) throw this.full(given);
            await handle.write(chunk);
          }
          await handle.chmod(mode);
          const owner = this.diskOwner(change);
          if (owner) await handle.chown(owner.uid, owner.gid);
          await handle.close();
          await rename(at(parent, temporary), at(parent, name)).catch((error: NodeJS.ErrnoException) => {
            throw error.code === 'EISDIR' || error.code === 'ENOTEMPTY' || error.code === 'EEXIST'
              ? new FileOperationError('is-a-directory', `${given} is a directory.`)
              : error;
          });
        } catch (error) {
          await handle.close().catch(() => undefined);
          await rm(at(parent, temporary), { force: true }).catch(() => undefined);
          throw (error as NodeJS.ErrnoException).code === 'ENOSPC' || (error as NodeJS.ErrnoException).code === 'EDQUOT'
            ? this.full(given)
            : error;
        }
        return this.entryOf(names.join('/'), name, at(parent, name));
      },
      { make: true },
    );
  }

  /** Makes the directory (and, with `parents`, those above it); one there already is answered as it is. */
  async makeDirectory(given: string, options: OwnershipChange & { parents?: boolean } = {}): Promise<VolumeEntry> {
    const names = nonEmpty(splitPath(given), given);
    const mode = options.mode === undefined ? 0o755 : checkMode(options.mode);
    return this.within(
      names.slice(0, -1),
      given,
      async (parent) => {
        const name = names.at(-1) as string;
        await this.makeIn(parent, name, given, mode, options);
        const info = await lstatOrFail(at(parent, name), given);
        if (!info.isDirectory())
          throw new FileOperationError('not-a-directory', `${given} exists and is not a directory.`);
        return this.entryOf(names.join('/'), name, at(parent, name));
      },
      { make: options.parents === true },
    );
  }

  /** Changes a file's or directory's mode, uid or gid (a symlink's uid and gid only). */
  async change(given: string, change: OwnershipChange): Promise<VolumeEntry> {
    const names = nonEmpty(splitPath(given), given);
    return this.within(names.slice(0, -1), given, async (parent) => {
      const name = names.at(-1) as string;
      const info = await lstatOrFail(at(parent, name), given);
      const owner = change.uid !== undefined || change.gid !== undefined ? this.diskOwner(change, info) : undefined;
      if (change.mode !== undefined) {
        if (info.isSymbolicLink())
          throw new FileOperationError('symlink', `${given} is a symlink: its mode cannot change.`);
        const handle = await openFile(at(parent, name), constants.O_RDONLY | constants.O_NOFOLLOW, given);
        try {
          await handle.chmod(checkMode(change.mode));
        } finally {
          await handle.close();
        }
      }
      // lchown: a symlink's own owner, never what it points to.
      if (owner) await lchown(at(parent, name), owner.uid, owner.gid);
      return this.entryOf(names.join('/'), name, at(parent, name));
    });
  }

  /** Removes a file, a symlink (not what it points to) or a directory with everything in it. */
  async remove(given: string): Promise<void> {
    const names = nonEmpty(splitPath(given), given);
    await this.within(names.slice(0, -1), given, async (parent) => {
      const name = names.at(-1) as string;
      await lstatOrFail(at(parent, name), given);
      const trashed = this.host.shelf.trashPath();
      await rename(at(parent, name), trashed).catch((error: NodeJS.ErrnoException) => {
        throw translate(error, given);
      });
      await rm(trashed, { recursive: true, force: true });
    });
  }

  /** What a write may still add: undefined where the filesystem itself holds the quota. */
  private async room(): Promise<number | undefined> {
    if (this.host.shelf.bounded) return undefined;
    const { usedBytes, quotaBytes } = await this.host.shelf.usage();
    return Math.max(0, quotaBytes - usedBytes);
  }

  private full(given: string): FileOperationError {
    return new FileOperationError(
      'no-space',
      `The key's volumes are full (at most ${formatBytes(this.host.shelf.quotaBytes)} together): ${given} was not written, ` +
        'and what was there is as it was. Remove files from a volume, or delete one.',
    );
  }

  /** Makes the directory `name` in `parent`, owned as the volume's files are; false when one was there. */
  private async makeIn(
    parent: FileHandle,
    name: string,
    given: string,
    mode = 0o755,
    change: OwnershipChange = {},
  ): Promise<boolean> {
    const made = await mkdir(at(parent, name), { mode }).then(
      () => true,
      (error: NodeJS.ErrnoException) => {
        if (error.code === 'EEXIST') return false;
        if (error.code === 'ENOSPC' || error.code === 'EDQUOT') throw this.full(given);
        throw translate(error, given);
      },
    );
    const owner = made ? this.diskOwner(change) : undefined;
    if (owner) await chown(at(parent, name), owner.uid, owner.gid);
    return made;
  }

  /**
   * Runs `step` with the directory `names` leads to, opened without following a symlink anywhere;
   * with `make`, each directory on the way is made when missing.
   */
  private async within<T>(
    names: string[],
    given: string,
    step: (directory: FileHandle) => Promise<T>,
    { make = false }: { make?: boolean } = {},
  ): Promise<T> {
    let current = await open(this.top, DIRECTORY_FLAGS);
    try {
      for (const name of names) {
        if (make) await this.makeIn(current, name, given);
        const next = await open(at(current, name), DIRECTORY_FLAGS).catch((error: NodeJS.ErrnoException) => {
          throw translate(error, given);
        });
        await current.close();
        current = next;
      }
      return await step(current);
    } catch (error) {
      throw translate(error as NodeJS.ErrnoException, given);
    } finally {
      await current.close().catch(() => undefined);
    }
  }

  private async listInto(
    directory: FileHandle,
    relative: string,
    depth: number,
    entries: VolumeEntry[],
  ): Promise<void> {
    const children = await readdir(`/proc/self/fd/${directory.fd}`);
    children.sort();
    for (const name of children) {
      if (entries.length >= MAX_LIST_ENTRIES) {
        throw new InvalidInputError(
          `The listing would pass ${MAX_LIST_ENTRIES} entries: list a directory further down.`,
        );
      }
      if (relative === '' && name === 'lost+found') continue;
      const childPath = relative ? `${relative}/${name}` : name;
      const info = await lstat(at(directory, name)).catch(() => undefined);
      if (!info) continue;
      entries.push(await this.entryOf(childPath, name, at(directory, name)));
      if (depth > 1 && info.isDirectory()) {
        const child = await open(at(directory, name), DIRECTORY_FLAGS).catch(() => undefined);
        if (!child) continue;
        try {
          await this.listInto(child, childPath, depth - 1, entries);
        } finally {
          await child.close();
        }
      }
    }
  }

  /** The entry at `location` (a path through a held directory, so a readlink follows nothing). */
  private async entryOf(relative: string, name: string, location: string): Promise<VolumeEntry> {
    const info = await lstatOrFail(location, `/${relative}`);
    const type: VolumeEntryType = info.isSymbolicLink()
      ? 'symlink'
      : info.isDirectory()
        ? 'directory'
        : info.isFile()
          ? 'file'
          : 'unknown';
    let target: string | undefined;
    if (type === 'symlink') target = await readlink(location).catch(() => undefined);
    return {
      name: relative === '' ? '' : name,
      path: `/${relative}`,
      type,
      size: info.size,
      mode: info.mode & 0o7777,
      uid: this.shownId(info.uid, 'uid'),
      gid: this.shownId(info.gid, 'gid'),
      atime: info.atime.toISOString(),
      mtime: info.mtime.toISOString(),
      ctime: info.ctime.toISOString(),
      ...(target !== undefined ? { target } : {}),
    };
  }

  /** A disk id as the sandbox shows it: the volume's own files are the sandbox user's, root's are root's. */
  private shownId(id: number, kind: 'uid' | 'gid'): number {
    const own = this.host.fileOwner?.[kind] ?? (kind === 'uid' ? process.getuid?.() : process.getgid?.());
    if (id === own) return SANDBOX_USER_ID;
    return id === 0 ? 0 : NOBODY_ID;
  }

  /** The disk owner for a change: the sandbox user (1000) is the volume's own, root (0) is root (as root). */
  private diskOwner(
    change: OwnershipChange,
    current?: { uid: number; gid: number },
  ): { uid: number; gid: number } | undefined {
    const own = this.host.fileOwner;
    const mapped = (id: number | undefined, kind: 'uid' | 'gid'): number | undefined => {
      if (id === undefined) return undefined;
      if (id === SANDBOX_USER_ID) return own?.[kind] ?? (kind === 'uid' ? process.getuid?.() : process.getgid?.());
      if (id === 0 && own) return 0;
      throw new InvalidInputError(
        `A volume's files belong to the sandbox's user (${SANDBOX_USER_ID})${own ? ' or to root (0)' : ''}, not ${id}.`,
      );
    };
    const uid = mapped(change.uid, 'uid');
    const gid = mapped(change.gid, 'gid');
    if (!own && uid === undefined && gid === undefined) return undefined;
    const base = current ?? own;
    if (!base) return undefined;
    return { uid: uid ?? (current ? current.uid : base.uid), gid: gid ?? (current ? current.gid : base.gid) };
  }
}

/** The path of `name` in the directory `handle` holds, resolved by the kernel as openat would. */
function at(handle: FileHandle, name: string): string {
  return `/proc/self/fd/${handle.fd}/${name}`;
}

function splitPath(given: string): string[] {
  const relative = volumePath(given);
  return relative === '' ? [] : relative.split('/');
}

function nonEmpty(names: string[], given: string): string[] {
  if (names.length === 0)
    throw new FileOperationError('is-a-directory', `${given || '/'} is the volume's top directory.`);
  return names;
}

function checkMode(mode: number): number {
  if (!Number.isInteger(mode) || mode < 0 || mode > 0o7777) throw new InvalidInputError(`Not a file mode: ${mode}.`);
  // No setuid or setgid files: the volume is mounted nosuid anyway.
  return mode & 0o1777;
}

async function lstatOrFail(target: string, given: string): Promise<import('node:fs').Stats> {
  return lstat(target).catch((error: NodeJS.ErrnoException) => {
    throw translate(error, given);
  });
}

async function openFile(target: string, flags: number, given: string, mode?: number): Promise<FileHandle> {
  return open(target, flags, mode).catch((error: NodeJS.ErrnoException) => {
    throw translate(error, given);
  });
}

/** An operating-system error as the reason a client reads. */
function translate(error: NodeJS.ErrnoException, given: string): Error {
  if (!(error instanceof Error) || error instanceof FileOperationError || !error.code) return error;
  switch (error.code) {
    case 'ENOENT':
      return new FileOperationError('not-found', `${given} is not in the volume.`);
    case 'ELOOP':
      return new FileOperationError(
        'symlink',
        `${given} goes through a symlink, which the host never follows in a volume.`,
      );
    case 'ENOTDIR':
      return new FileOperationError(
        'not-a-directory',
        `A part of ${given} is not a directory (or is a symlink, never followed).`,
      );
    case 'EISDIR':
      return new FileOperationError('is-a-directory', `${given} is a directory.`);
    case 'EACCES':
    case 'EPERM':
      return new FileOperationError('permission-denied', `${given}: permission denied.`);
    case 'ENAMETOOLONG':
      return new FileOperationError('name-too-long', `${given}: a name is too long.`);
    case 'ENOSPC':
    case 'EDQUOT':
      return new FileOperationError('no-space', `The key's volumes are full: ${given} was not written.`);
    default:
      return new FileOperationError('io', `${given}: ${error.message}`);
  }
}
