/**
 * The files an environment's description names, walked once: the build copies
 * exactly these, and the content hash covers their bytes, so changing a wheel
 * or a copied file makes a new build while an unchanged description is reused.
 */
import type { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { lstat, readdir } from 'node:fs/promises';
import path from 'node:path';
import { InvalidInputError } from '../errors.js';
import type { LoadedDescription } from './description.js';

/** Most files and bytes an environment may bring in (copied files, wheels, requirements). */
export const MAX_INPUT_FILES = 100_000;
export const MAX_INPUT_BYTES = 8 * 1024 ** 3;

export interface InputFile {
  /** Where it is on the host (absolute). */
  source: string;
  /** The path the hash and the build know it by: relative to the description's directory, `/`-separated. */
  name: string;
  /** Executable bits matter to setup scripts; the rest of the mode does not. */
  executable: boolean;
  sizeBytes: number;
}

export interface InputDirectory {
  source: string;
  name: string;
}

export interface EnvironmentInputs {
  files: InputFile[];
  directories: InputDirectory[];
  totalBytes: number;
}

/** Every file and directory the description names, in a stable order; symlinks and special files are refused. */
export async function collectInputs(loaded: LoadedDescription): Promise<EnvironmentInputs> {
  const { description, baseDirectory } = loaded;
  const roots = [
    ...(description.python.requirements ? [description.python.requirements] : []),
    ...description.python.wheels,
    ...description.files.map((file) => file.source),
  ];
  const inputs: EnvironmentInputs = { files: [], directories: [], totalBytes: 0 };
  const seen = new Set<string>();
  for (const root of roots) await walk(baseDirectory, root, inputs, seen);
  inputs.files.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  inputs.directories.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  return inputs;
}

async function walk(baseDirectory: string, relative: string, inputs: EnvironmentInputs, seen: Set<string>) {
  const source = path.resolve(baseDirectory, relative);
  const name = path.relative(baseDirectory, source).split(path.sep).join('/');
  if (name === '' || name.startsWith('../') || name === '..' || path.isAbsolute(name)) {
    throw new InvalidInputError(
      `${relative} is outside the description's directory (${baseDirectory}); copy it there.`,
    );
  }
  if (seen.has(name)) return;
  seen.add(name);
  const info = await lstat(source).catch((error: unknown) => {
    throw new InvalidInputError(`${relative} (named in the description) cannot be read: ${(error as Error).message}`);
  });
  if (info.isSymbolicLink()) {
    throw new InvalidInputError(
      `${name} is a symbolic link; an environment copies regular files and directories only.`,
    );
  }
  if (info.isDirectory()) {
    inputs.directories.push({ source, name });
    const entries = (await readdir(source)).sort();
    for (const entry of entries) await walk(baseDirectory, path.join(relative, entry), inputs, seen);
    return;
  }
  if (!info.isFile()) throw new InvalidInputError(`${name} is not a regular file or a directory.`);
  inputs.files.push({ source, name, executable: (info.mode & 0o111) !== 0, sizeBytes: info.size });
  inputs.totalBytes += info.size;
  if (inputs.files.length > MAX_INPUT_FILES || inputs.totalBytes > MAX_INPUT_BYTES) {
    throw new InvalidInputError(
      `The description names more than ${MAX_INPUT_FILES} files or ${MAX_INPUT_BYTES / 1024 ** 3} GiB; an environment layer is meant to be small.`,
    );
  }
}

/** Streams a file's bytes into a hash. */
export function hashFileInto(hash: ReturnType<typeof createHash>, file: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const stream = createReadStream(file);
    stream.on('data', (chunk) => hash.update(chunk));
    stream.once('error', reject);
    stream.once('end', () => resolve());
  });
}
