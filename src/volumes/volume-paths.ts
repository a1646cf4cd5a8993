/**
 * The shapes a volume's names and paths must have, checked before anything is touched: a volume's
 * name, where it is mounted in a sandbox, the sub-path of it that is mounted, and a path inside it
 * (the content API's). None may climb out with `..`; where a path is resolved on the host, symlinks
 * are never followed (volume-content.ts, sandcell_mounter.py).
 */
import path from 'node:path';
import { InvalidInputError, InvalidPathError } from '../errors.js';

const VOLUME_NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$/;
const MOUNT_PATH_BYTES = 256;
const VOLUME_PATH_BYTES = 4096;
const VOLUME_PATH_DEPTH = 64;
/** Control characters and backslashes have no place in a path a sandbox or a client names. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: refusing control characters is the point.
const UNSAFE_CHARACTERS = /[\u0000-\u001f\u007f\\]/;

/** Trees of the sandbox's own system, which no volume may cover. */
const SYSTEM_TREES = [
  '/usr',
  '/bin',
  '/sbin',
  '/lib',
  '/lib64',
  '/proc',
  '/dev',
  '/sys',
  '/etc',
  '/run',
  '/opt/sandcell',
];
/** Directories a volume may be mounted below, not over: the session's files are there, and /tmp. */
const WHOLE_DIRECTORIES = [
  '/',
  '/mnt',
  '/mnt/data',
  '/home',
  '/home/user',
  '/workspace',
  '/tmp',
  '/opt',
  '/var',
  '/root',
];

export function checkVolumeName(name: unknown): string {
  if (typeof name !== 'string' || !VOLUME_NAME.test(name)) {
    throw new InvalidInputError(
      `A volume's name is 1 to 63 letters, digits, ".", "_" or "-", starting with a letter or a digit (not ${JSON.stringify(name)}).`,
    );
  }
  return name;
}

/** Where a volume is mounted in a sandbox: an absolute, normal path outside the sandbox's system. */
export function checkMountPath(mountPath: unknown): string {
  if (typeof mountPath !== 'string' || !mountPath.startsWith('/') || UNSAFE_CHARACTERS.test(mountPath)) {
    throw new InvalidPathError(`A volume is mounted at an absolute path (not ${JSON.stringify(mountPath)}).`);
  }
  if (Buffer.byteLength(mountPath) > MOUNT_PATH_BYTES) {
    throw new InvalidPathError(`A volume's mount path is at most ${MOUNT_PATH_BYTES} bytes.`);
  }
  if (path.posix.normalize(mountPath) !== mountPath || mountPath.endsWith('/') || mountPath.split('/').includes('..')) {
    throw new InvalidPathError(
      `A volume's mount path is written without "..", "." or doubled and trailing slashes (not ${mountPath}).`,
    );
  }
  if (SYSTEM_TREES.some((tree) => mountPath === tree || mountPath.startsWith(`${tree}/`))) {
    throw new InvalidPathError(
      `${mountPath} is the sandbox's own system: mount the volume elsewhere (under /mnt, say).`,
    );
  }
  if (mountPath.startsWith('/mnt/data/')) {
    throw new InvalidPathError(
      `${mountPath} is inside /mnt/data, which a snapshot takes whole: mount the volume at /mnt/NAME or /home/user/NAME.`,
    );
  }
  if (WHOLE_DIRECTORIES.includes(mountPath)) {
    throw new InvalidPathError(
      `A volume is mounted below ${mountPath}, not over it (at ${mountPath === '/' ? '' : mountPath}/NAME, say).`,
    );
  }
  return mountPath;
}

/** The part of a volume mounted: a relative path inside it ('' for all of it). */
export function checkSubPath(subPath: unknown): string {
  if (subPath === undefined || subPath === '' || subPath === '.' || subPath === '/') return '';
  if (typeof subPath !== 'string') throw new InvalidPathError('A sub-path is a string.');
  return volumePath(subPath);
}

/**
 * A path inside a volume as the content API and a sub-path name it, relative to its top ('' is the
 * top): a leading "/" is the volume's top, never the host's; "..", "." and empty names are refused.
 */
export function volumePath(given: unknown): string {
  if (typeof given !== 'string' || UNSAFE_CHARACTERS.test(given)) {
    throw new InvalidPathError(`Not a path inside a volume: ${JSON.stringify(given)}.`);
  }
  if (Buffer.byteLength(given) > VOLUME_PATH_BYTES)
    throw new InvalidPathError(`A path inside a volume is at most ${VOLUME_PATH_BYTES} bytes.`);
  const trimmed = given.replace(/^\//, '').replace(/\/$/, '');
  const names = trimmed === '' ? [] : trimmed.split('/');
  if (names.includes(''))
    throw new InvalidPathError(`A path inside a volume has no empty names: ${JSON.stringify(given)}.`);
  if (names.some((name) => name === '..' || name === '.')) {
    throw new InvalidPathError(`A path inside a volume may not hold "." or "..": ${JSON.stringify(given)}.`);
  }
  if (names.length > VOLUME_PATH_DEPTH)
    throw new InvalidPathError(`A path inside a volume is at most ${VOLUME_PATH_DEPTH} names deep.`);
  return names.join('/');
}

export interface VolumeMountRequest {
  /** The volume's name (or id). */
  volume: string;
  /** Where it appears in the sandbox. */
  path: string;
  readOnly?: boolean;
  /** The directory of the volume mounted there; all of it when absent. */
  subPath?: string;
}

/** The mounts asked for, each checked, none at a path another covers (a mount inside a mount would hide it). */
export function checkMountRequests(mounts: unknown, limit = 16): VolumeMountRequest[] {
  if (mounts === undefined) return [];
  if (!Array.isArray(mounts))
    throw new InvalidInputError('Mounts are a list of { volume, path, readOnly?, subPath? }.');
  if (mounts.length > limit) throw new InvalidInputError(`A session mounts at most ${limit} volumes.`);
  const checked = mounts.map((mount: unknown): VolumeMountRequest => {
    if (typeof mount !== 'object' || mount === null)
      throw new InvalidInputError('A mount is { volume, path, readOnly?, subPath? }.');
    const { volume, path: mountPath, readOnly, subPath } = mount as Record<string, unknown>;
    if (typeof volume !== 'string' || volume === '')
      throw new InvalidInputError('A mount names its volume (`volume`).');
    if (readOnly !== undefined && typeof readOnly !== 'boolean')
      throw new InvalidInputError("A mount's `readOnly` is true or false.");
    const sub = checkSubPath(subPath);
    return {
      volume,
      path: checkMountPath(mountPath),
      ...(readOnly ? { readOnly } : {}),
      ...(sub ? { subPath: sub } : {}),
    };
  });
  for (const mount of checked) {
    const covering = checked.find(
      (other) => other !== mount && (other.path === mount.path || mount.path.startsWith(`${other.path}/`)),
    );
    if (covering)
      throw new InvalidPathError(`Two mounts at ${mount.path} (${covering.path} covers it): give each its own path.`);
  }
  return checked;
}
