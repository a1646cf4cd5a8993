/** Validation of paths under /mnt/data, shared by every file API. */
import { InvalidPathError } from '../errors.js';

export const DATA_MOUNT = '/mnt/data';
/** The longest file name (one path component) Linux file systems take, in bytes (NAME_MAX). */
export const MAX_NAME_BYTES = 255;

/**
 * Normalises `path` to a relative path under /mnt/data ('' is the directory
 * itself). Accepts `name`, `dir/name` and `/mnt/data/name`; refuses NUL bytes,
 * `..`, any other absolute path, and names the file system would refuse as too
 * long (so a client's mistake is a 400 before anything is written).
 */
export function normalizeDataPath(path: string, options: { allowRoot?: boolean } = {}): string {
  if (typeof path !== 'string') throw new InvalidPathError('A file path must be a string.');
  if (path.includes('\0')) throw new InvalidPathError('A file path must not contain NUL bytes.');
  let relative = path;
  if (relative === DATA_MOUNT || relative.startsWith(`${DATA_MOUNT}/`)) relative = relative.slice(DATA_MOUNT.length);
  else if (relative.startsWith('/')) {
    throw new InvalidPathError(`${JSON.stringify(path)} is outside /mnt/data; give a path relative to /mnt/data.`);
  }
  const parts = relative.split('/').filter((part) => part !== '' && part !== '.');
  if (parts.includes('..')) {
    throw new InvalidPathError(`${JSON.stringify(path)} contains "..": paths must stay inside /mnt/data.`);
  }
  if (parts.length === 0 && !options.allowRoot) {
    throw new InvalidPathError('A file path must name a file inside /mnt/data.');
  }
  if (relative.length > 4096) throw new InvalidPathError('A file path must be at most 4096 characters.');
  const tooLong = parts.find((part) => Buffer.byteLength(part, 'utf8') > MAX_NAME_BYTES);
  if (tooLong !== undefined) {
    throw new InvalidPathError(
      `The name ${JSON.stringify(`${tooLong.slice(0, 40)}…`)} is ${Buffer.byteLength(tooLong, 'utf8')} bytes; a file or directory name may be at most ${MAX_NAME_BYTES} bytes (UTF-8).`,
    );
  }
  return parts.join('/');
}

/** The sandbox's scratch directory: its files API reaches it too, as absolute paths under it. */
export const SCRATCH_MOUNT = '/tmp';

/**
 * A path for the session's file requests: one under /mnt/data, as normalizeDataPath gives it
 * (relative), or one under the sandbox's scratch /tmp, kept absolute (`/tmp/name`, `/tmp` itself
 * with allowRoot) so the sandbox's supervisor knows which. The same checks apply below /tmp.
 */
export function normalizeSessionPath(path: string, options: { allowRoot?: boolean } = {}): string {
  if (typeof path === 'string' && (path === SCRATCH_MOUNT || path.startsWith(`${SCRATCH_MOUNT}/`))) {
    const below = normalizeDataPath(path.slice(SCRATCH_MOUNT.length).replace(/^\/+/, ''), options);
    return below === '' ? SCRATCH_MOUNT : `${SCRATCH_MOUNT}/${below}`;
  }
  return normalizeDataPath(path, options);
}
