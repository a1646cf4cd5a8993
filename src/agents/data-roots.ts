/**
 * The host files an agent may read: only regular files under the data roots
 * the user named. Everything the model asks for is checked here: no absolute
 * paths, no `..`, no symlink leading out of a root, no device, FIFO or
 * socket, nothing over the size cap. The file is opened without following
 * links and checked again on the open descriptor, so a swap between check and
 * read is caught.
 */
import { constants } from 'node:fs';
import { lstat, open, realpath, stat } from 'node:fs/promises';
import path from 'node:path';
import { InvalidInputError, InvalidPathError } from '../errors.js';
import { formatBytes } from '../protocol/format-bytes.js';

export const DEFAULT_MAX_FILE_BYTES = 64 * 1024 * 1024;

export interface DataRoot {
  /** As the user gave it. */
  given: string;
  /** The real path, links resolved. */
  real: string;
  kind: 'file' | 'directory';
}

export interface DataFile {
  /** The real host path. */
  hostPath: string;
  /** The name under /mnt/data: the file name for a file root, the path inside the root for a directory root. */
  name: string;
  bytes: Buffer;
}

/** Checks that each root exists and is a regular file or a directory. */
export async function resolveDataRoots(paths: readonly string[]): Promise<DataRoot[]> {
  const roots: DataRoot[] = [];
  for (const given of paths) {
    let real: string;
    try {
      real = await realpath(given);
    } catch (error) {
      throw new InvalidInputError(
        `Data path ${given} cannot be read: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}.`,
      );
    }
    const info = await stat(real);
    if (!info.isFile() && !info.isDirectory()) {
      throw new InvalidInputError(`Data path ${given} is neither a regular file nor a directory.`);
    }
    roots.push({ given, real, kind: info.isFile() ? 'file' : 'directory' });
  }
  return roots;
}

function describeRoots(roots: readonly DataRoot[]): string {
  return roots
    .map((root) => (root.kind === 'file' ? path.basename(root.real) : `${path.basename(root.real)}/…`))
    .join(', ');
}

function inside(root: DataRoot, real: string): boolean {
  return root.kind === 'file' ? real === root.real : real.startsWith(`${root.real}${path.sep}`);
}

/**
 * Finds a file a model asked for: a name relative to a root (for a file root,
 * its own name). Throws InvalidPathError, which tools hand back to the model.
 */
export async function locateForModel(
  roots: readonly DataRoot[],
  requested: string,
): Promise<{ root: DataRoot; candidate: string; name: string }> {
  if (typeof requested !== 'string' || requested.trim() === '')
    throw new InvalidPathError('Give the name of a data file.');
  if (requested.includes('\0') || requested.length > 4096)
    throw new InvalidPathError('That is not a usable file name.');
  if (roots.length === 0) throw new InvalidPathError('No data files or folders were shared with sandcell (--data).');
  if (path.isAbsolute(requested) || /^[A-Za-z]:[\\/]/.test(requested) || requested.startsWith('~')) {
    throw new InvalidPathError(
      `Refused ${JSON.stringify(requested)}: absolute paths are not allowed. Name a file relative to the shared data: ${describeRoots(roots)}.`,
    );
  }
  const parts = requested.split(/[\\/]+/).filter((part) => part !== '' && part !== '.');
  if (parts.includes('..')) {
    throw new InvalidPathError(
      `Refused ${JSON.stringify(requested)}: ".." is not allowed. Shared data: ${describeRoots(roots)}.`,
    );
  }
  const relative = parts.join('/');
  for (const root of roots) {
    if (root.kind === 'file') {
      if (relative === path.basename(root.real) || relative === path.basename(root.given)) {
        return { root, candidate: root.real, name: path.basename(root.given) };
      }
      continue;
    }
    const candidate = path.join(root.real, relative);
    if (
      await lstat(candidate).then(
        () => true,
        () => false,
      )
    )
      return { root, candidate, name: relative };
  }
  throw new InvalidPathError(`No data file ${JSON.stringify(requested)}. Shared data: ${describeRoots(roots)}.`);
}

/** Finds a host path the user gave (absolute or relative to the working directory); it must be under a root. */
export function locateForUser(
  roots: readonly DataRoot[],
  given: string,
): { root: DataRoot; candidate: string; name: string } {
  const absolute = path.resolve(given);
  for (const root of roots) {
    if (root.kind === 'file' && (absolute === path.resolve(root.given) || absolute === root.real)) {
      return { root, candidate: root.real, name: path.basename(root.given) };
    }
    for (const base of [path.resolve(root.given), root.real]) {
      if (root.kind === 'directory' && absolute.startsWith(`${base}${path.sep}`)) {
        return {
          root,
          candidate: path.join(root.real, path.relative(base, absolute)),
          name: path.relative(base, absolute).split(path.sep).join('/'),
        };
      }
    }
  }
  throw new InvalidPathError(`${given} is not under a data root (--data).`);
}

/** Reads a located file, refusing anything that is not a regular file inside its root or is over the cap. */
export async function readDataFile(
  located: { root: DataRoot; candidate: string; name: string },
  maxBytes: number = DEFAULT_MAX_FILE_BYTES,
): Promise<DataFile> {
  const { root, candidate, name } = located;
  let real: string;
  try {
    real = await realpath(candidate);
  } catch (error) {
    throw new InvalidPathError(
      `Cannot read ${name}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}.`,
    );
  }
  if (!inside(root, real)) {
    throw new InvalidPathError(`Refused ${name}: it is a link that points outside the shared data.`);
  }
  const info = await stat(real);
  if (!info.isFile()) {
    const kind = info.isDirectory()
      ? 'a directory'
      : info.isFIFO()
        ? 'a FIFO'
        : info.isSocket()
          ? 'a socket'
          : 'a device';
    throw new InvalidPathError(`Refused ${name}: it is ${kind}, not a regular file.`);
  }
  if (info.size > maxBytes) {
    throw new InvalidPathError(
      `Refused ${name}: it is ${formatBytes(info.size)}; the limit is ${formatBytes(maxBytes)}.`,
    );
  }
  const handle = await open(
    real,
    constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK | constants.O_NOCTTY,
  );
  try {
    const opened = await handle.stat();
    if (!opened.isFile() || opened.ino !== info.ino || opened.dev !== info.dev) {
      throw new InvalidPathError(`Refused ${name}: it changed while being opened.`);
    }
    if (opened.size > maxBytes) {
      throw new InvalidPathError(
        `Refused ${name}: it is ${formatBytes(opened.size)}; the limit is ${formatBytes(maxBytes)}.`,
      );
    }
    const buffer = Buffer.alloc(Math.min(opened.size, maxBytes) + 1);
    let length = 0;
    while (length < buffer.length) {
      const { bytesRead } = await handle.read(buffer, length, buffer.length - length, length);
      if (bytesRead === 0) break;
      length += bytesRead;
    }
    if (length > maxBytes)
      throw new InvalidPathError(`Refused ${name}: it grew past the limit of ${formatBytes(maxBytes)}.`);
    return { hostPath: real, name, bytes: buffer.subarray(0, length) };
  } finally {
    await handle.close();
  }
}
