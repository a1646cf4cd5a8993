/**
 * The lock of an environment's Python packages: what its build takes from the package index,
 * pinned to exact versions and to the sha256 of each file, written beside the description
 * (`sandcell.env.json` → `sandcell.env.lock`) for the user to keep with it, as npm's
 * package-lock.json is kept. It is a pip requirements file (`name==version --hash=sha256:…`, one
 * per line), so `pip install --require-hashes -r` reads it as it is.
 *
 * A lock holds for the Python inputs it was made from: the description's `python` section, the
 * bytes of its requirements file, its wheels and the package archives among its files, and the
 * runtime's Python (`python3.11`: what wheels it takes). Its header keeps their digest; when they
 * change, the build resolves again and writes a new lock. Nothing else (Debian packages, files,
 * setup, network, a new sandcell with the same Python) makes a new lock, so a lock kept with a
 * project stays as it is.
 */
import { createHash } from 'node:crypto';
import { readFile, rename, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { InvalidInputError } from '../errors.js';
import type { LoadedDescription } from './description.js';
import { type EnvironmentInputs, hashFileInto } from './inputs.js';

/** Largest lock read. */
export const MAX_LOCK_BYTES = 1024 * 1024;
/** Most files a lock names. */
export const MAX_LOCKED_FILES = 2000;
const INPUTS_LINE = '# sandcell-lock-inputs: ';
/** What a package index's file is called: a wheel or a source archive, no path. */
export const PACKAGE_FILE_NAME = /^[A-Za-z0-9][A-Za-z0-9._+!-]*\.(whl|tar\.gz|zip|tar\.bz2|tgz)$/;
/** Archives among the inputs that pip finds by name (`--find-links` on the inputs' top). */
export const INPUT_ARCHIVE = /^[^/]+\.(whl|tar\.gz|zip|tar\.bz2)$/;
const PROJECT_NAME = /^[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?$/;
const VERSION = /^[A-Za-z0-9.+!_-]{1,100}$/;
const SHA256 = /^[0-9a-f]{64}$/;

export interface LockedFile {
  /** The project's name as the index gives it. */
  name: string;
  version: string;
  /** Hex sha256 of the file's bytes. */
  sha256: string;
  /** The file's name on the index (a wheel's name says what it is built for). */
  filename: string;
}

export interface PythonLock {
  /** The digest of the Python inputs it was resolved from (pythonLockInputs). */
  inputs: string;
  files: LockedFile[];
}

/** Where a description's lock lives: beside it, `.json` replaced by `.lock`. */
export function lockFilePath(descriptionFile: string): string {
  const base = path.basename(descriptionFile).replace(/\.json$/i, '');
  return path.join(path.dirname(descriptionFile), `${base}.lock`);
}

/** The digest of what a lock is resolved from; a lock with another digest is stale. */
export async function pythonLockInputs(
  loaded: LoadedDescription,
  inputs: EnvironmentInputs,
  /** The runtime's Python, as its `python3` names it (`python3.11`). */
  interpreter: string,
): Promise<string> {
  const python = loaded.description.python;
  const hash = createHash('sha256');
  hash.update(JSON.stringify({ interpreter, python }));
  const named = new Set([...(python.requirements ? [python.requirements] : []), ...python.wheels]);
  for (const file of inputs.files) {
    if (!named.has(file.name) && !INPUT_ARCHIVE.test(file.name)) continue;
    hash.update(`\0file\0${file.name}\0${file.sizeBytes}\0`);
    await hashFileInto(hash, file.source);
  }
  return hash.digest('hex');
}

export function formatLock(lock: PythonLock, descriptionFile: string): string {
  const lines = [
    `# ${path.basename(lockFilePath(descriptionFile))}: the Python packages \`sandcell env build\` takes from the package`,
    `# index for ${path.basename(descriptionFile)}, each pinned to one file by its sha256. Builds install exactly these`,
    '# files, from the wheel cache when it has them; the build resolves again (and rewrites this file) when the',
    "# description's Python packages, requirements or wheels change, or with `--relock`. Keep it with the description.",
    `${INPUTS_LINE}${lock.inputs}`,
    ...sortedFiles(lock.files).map(
      (file) => `${file.name}==${file.version} --hash=sha256:${file.sha256}  # ${file.filename}`,
    ),
  ];
  return `${lines.join('\n')}\n`;
}

/** A lock's files in its one order, by name: the order the file has and the content hash reads. */
export function sortedFiles(files: readonly LockedFile[]): LockedFile[] {
  return [...files].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

/** Reads a lock as formatLock writes it; anything else is refused, naming the line. */
export function parseLock(text: string, origin: string): PythonLock {
  let inputs: string | undefined;
  const files: LockedFile[] = [];
  text.split('\n').forEach((raw, index) => {
    const line = raw.trim();
    if (line.startsWith(INPUTS_LINE.trim())) {
      inputs = line.slice(INPUTS_LINE.trim().length).trim();
      return;
    }
    if (line === '' || line.startsWith('#')) return;
    const match = /^([^=\s]+)==(\S+) --hash=sha256:(\S+)\s+# (\S+)$/.exec(line);
    const [, name = '', version = '', sha256 = '', filename = ''] = match ?? [];
    if (
      !match ||
      !PROJECT_NAME.test(name) ||
      !VERSION.test(version) ||
      !SHA256.test(sha256) ||
      !PACKAGE_FILE_NAME.test(filename)
    ) {
      throw new InvalidInputError(
        `${origin}, line ${index + 1}, is not a lock entry (NAME==VERSION --hash=sha256:HEX  # FILE): ${line.slice(0, 200)}. Delete the file, or build with --relock, to resolve again.`,
      );
    }
    files.push({ name, version, sha256, filename });
  });
  if (inputs === undefined || !SHA256.test(inputs)) {
    throw new InvalidInputError(`${origin} has no \`${INPUTS_LINE.trim()}\` line: it is not a lock sandcell wrote.`);
  }
  if (files.length > MAX_LOCKED_FILES) {
    throw new InvalidInputError(`${origin} names ${files.length} files; a lock names at most ${MAX_LOCKED_FILES}.`);
  }
  return { inputs, files: sortedFiles(files) };
}

/** The lock beside a description, if there is one. */
export async function readLock(descriptionFile: string): Promise<PythonLock | undefined> {
  const file = lockFilePath(descriptionFile);
  const info = await stat(file).catch(() => undefined);
  if (!info) return undefined;
  if (!info.isFile() || info.size > MAX_LOCK_BYTES) {
    throw new InvalidInputError(`${file} is not a lock file of at most ${MAX_LOCK_BYTES} bytes.`);
  }
  return parseLock(await readFile(file, 'utf8'), file);
}

/** Writes the lock beside the description, whole or not at all. */
export async function writeLock(descriptionFile: string, lock: PythonLock): Promise<string> {
  const file = lockFilePath(descriptionFile);
  const partial = `${file}.partial-${process.pid}`;
  await writeFile(partial, formatLock(lock, descriptionFile), { mode: 0o644 });
  await rename(partial, file);
  return file;
}

/** The lock's entries as pip reads them (for a subset to fetch). */
export function lockRequirements(files: readonly LockedFile[]): string {
  return files.map((file) => `${file.name}==${file.version} --hash=sha256:${file.sha256}\n`).join('');
}
