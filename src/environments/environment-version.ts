/**
 * An environment's content hash: the description, the runtime's version and
 * the bytes of every file the description names, and the files its Python lock pins. Two builds with the same
 * hash are the same build, so `env build` of an unchanged description is a
 * no-op, and a new sandcell (a new runtime) makes a new build.
 */
import { createHash } from 'node:crypto';
import { runtimeVersion } from '../image/recipe.js';
import type { EnvironmentDescription } from './description.js';
import { type EnvironmentInputs, hashFileInto } from './inputs.js';
import { type PythonLock, sortedFiles } from './python-lock.js';

/** Bump when the layer's build steps change in a way the inputs do not show. */
export const ENVIRONMENT_RECIPE_REVISION = 1;

export async function environmentHash(
  description: EnvironmentDescription,
  inputs: EnvironmentInputs,
  runtime = runtimeVersion(),
  lock?: PythonLock,
): Promise<string> {
  const hash = createHash('sha256');
  // `description` (the free text) does not change what is built.
  const { description: _text, ...built } = description;
  hash.update(JSON.stringify({ revision: ENVIRONMENT_RECIPE_REVISION, runtime, built }));
  for (const directory of inputs.directories) hash.update(`\0dir\0${directory.name}\0`);
  for (const file of inputs.files) {
    hash.update(`\0file\0${file.name}\0${file.executable ? 'x' : '-'}\0${file.sizeBytes}\0`);
    await hashFileInto(hash, file.source);
  }
  // The files a lock pins are what the index gives: another lock is another build.
  for (const file of sortedFiles(lock?.files ?? []))
    hash.update(`\0locked\0${file.name}\0${file.version}\0${file.sha256}\0`);
  return hash.digest('hex').slice(0, 12);
}
