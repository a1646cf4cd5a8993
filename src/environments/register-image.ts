/**
 * `sandcell env add NAME --image repo:tag`: an existing Docker image becomes
 * an environment without being modified. It is checked (image-check.ts),
 * tagged `sandcell-env-<name>:<hash>` where the hash is the first 12 hex
 * digits of its content id (a re-tagged image with new content is a new
 * build; the tag also keeps that content from being pruned while the
 * environment names it), and recorded in the store like a built environment.
 * Sessions in it get sandcell's kernel files mounted in (docker/mounted-kernel.ts).
 */
import type Dockerode from 'dockerode';
import { InvalidInputError } from '../errors.js';
import { runtimeImagePresent } from '../image/docker-image.js';
import { runtimeVersion } from '../image/recipe.js';
import type { BuildProgress } from '../image/rootfs.js';
import { type EnvironmentBuildResult, removeImages } from './build.js';
import { parseDescription } from './description.js';
import { checkImage } from './image-check.js';
import {
  defaultEnvironmentStore,
  type EnvironmentBuildRecord,
  environmentImageTag,
  type ImageEnvironmentFacts,
  makeCurrent,
  readRecord,
  writeRecord,
} from './store.js';
import { ENVIRONMENT_NAME_PATTERN } from './types.js';

export interface RegisterImageOptions {
  name: string;
  /** `repo:tag` or an image id, present in the engine. */
  image: string;
  docker: Dockerode;
  /** Where it came from, for listings: the image as named (default) or a Dockerfile. */
  origin?: { kind: 'image' | 'dockerfile'; source: string };
  storeDirectory?: string;
  onProgress?: (progress: BuildProgress) => void;
}

export async function registerImageEnvironment(options: RegisterImageOptions): Promise<EnvironmentBuildResult> {
  const { name, docker } = options;
  if (!ENVIRONMENT_NAME_PATTERN.test(name)) {
    throw new InvalidInputError(
      `${JSON.stringify(name.slice(0, 80))} is not an environment name: lower-case letters, digits and -, starting with a letter, at most 40.`,
    );
  }
  const store = options.storeDirectory ?? defaultEnvironmentStore();
  options.onProgress?.({ stage: `checking ${options.image}`, detail: 'python3, IPython, the other languages' });
  const facts = await checkImage(docker, options.image);
  const hash = facts.id.replace(/^sha256:/, '').slice(0, 12);
  const tag = environmentImageTag(name, hash);
  const existing = await readRecord(store, name, hash);
  const reused = existing?.builds.docker !== undefined && (await runtimeImagePresent(docker, tag));
  if (!reused) {
    const separator = tag.lastIndexOf(':');
    await docker.getImage(facts.id).tag({ repo: tag.slice(0, separator), tag: tag.slice(separator + 1) });
    const origin = options.origin ?? { kind: 'image', source: options.image };
    const image: ImageEnvironmentFacts = {
      source: origin.source,
      kind: origin.kind,
      id: facts.id,
      python: facts.python,
      pythonVersion: facts.pythonVersion,
      ipythonVersion: facts.ipythonVersion,
      matplotlibInline: facts.matplotlibInline,
      languages: facts.languages,
    };
    const record: EnvironmentBuildRecord = {
      name,
      hash,
      runtimeVersion: runtimeVersion(),
      description: parseDescription({ name }),
      builds: { docker: { backendRef: tag, builtAt: new Date().toISOString(), sizeBytes: facts.sizeBytes } },
      image,
    };
    await writeRecord(store, record);
  }
  const removedBuilds = await makeCurrent(store, name, hash);
  await removeImages(docker, name, removedBuilds);
  return { name, hash, backend: 'docker', backendRef: tag, reused, removedBuilds };
}
