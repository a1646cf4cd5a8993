/**
 * `sandcell env build FILE`: describe → hash → reuse or build → record → make
 * current. A build for bubblewrap is a root filesystem; for Docker it is that
 * root filesystem as `sandcell-env-<name>:<hash>`, the runtime image plus the
 * environment's changes (build-docker-image.ts), so both backends get the same
 * bytes. The record is
 * written only after the build is whole, and the name moves to it last.
 */
import { access, rm } from 'node:fs/promises';
import path from 'node:path';
import type Dockerode from 'dockerode';
import { runtimeImagePresent } from '../image/docker-image.js';
import { runtimeVersion } from '../image/recipe.js';
import type { BuildProgress } from '../image/rootfs.js';
import { buildEnvironmentImage } from './build-docker-image.js';
import { acquireBuildLock } from './build-lock.js';
import { buildEnvironmentRootfs, ENVIRONMENT_MARKER_FILE } from './build-rootfs.js';
import { type LoadedDescription, loadDescription } from './description.js';
import { environmentHash } from './environment-version.js';
import { collectInputs, type EnvironmentInputs } from './inputs.js';
import { type LockedPackages, lockPythonPackages } from './lock-packages.js';
import { refuseOfflineFetches } from './offline-build.js';
import {
  buildDirectory,
  defaultEnvironmentStore,
  type EnvironmentBuildRecord,
  environmentImageTag,
  makeCurrent,
  readRecord,
  writeRecord,
} from './store.js';
import type { EnvironmentBackendName } from './types.js';
import { defaultWheelCache } from './wheel-cache.js';

/** Label on environment images: `<name>:<hash>`. */
export const ENVIRONMENT_LABEL = 'org.sandcell.environment';

export interface EnvironmentBuildOptions {
  /** The description file (`sandcell.env.json`). */
  file: string;
  backend: EnvironmentBackendName;
  /** A Docker client, for `backend: 'docker'`. */
  docker?: Dockerode;
  /** Rebuild even when this hash is built. */
  force?: boolean;
  /** Debian mirror for the runtime, when it has to be built first. */
  mirror?: string;
  /**
   * Hosts the build may reach beyond its defaults and the description's `network.allow`
   * (`--allow-host`). Not part of the content hash: it says where the build may fetch from, as
   * `mirror` does, not what is built (a build it was missing for fails, leaving nothing).
   */
  allowHosts?: readonly string[];
  storeDirectory?: string;
  /** Where the files the Python lock pins are kept (`--wheel-cache`); the store's `.wheels` by default. */
  wheelCache?: string;
  /** Resolve the Python packages again, whatever the lock beside the description says (`--relock`). */
  relock?: boolean;
  onProgress?: (progress: BuildProgress) => void;
  signal?: AbortSignal;
}

export interface EnvironmentBuildResult {
  name: string;
  hash: string;
  backend: EnvironmentBackendName;
  backendRef: string;
  /** The build was there already: nothing was done. */
  reused: boolean;
  /** Older builds of the name removed now (the one just replaced is kept for sessions still on it). */
  removedBuilds: string[];
  /** The Python lock beside the description, when the environment takes packages from an index. */
  pythonLock?: { file: string; files: number; written: boolean };
}

export async function buildEnvironment(options: EnvironmentBuildOptions): Promise<EnvironmentBuildResult> {
  const store = options.storeDirectory ?? defaultEnvironmentStore();
  const loaded = await loadDescription(options.file);
  const inputs = await collectInputs(loaded);
  const { name } = loaded.description;
  const lock = await acquireBuildLock({
    store,
    name,
    signal: options.signal,
    onWait: (pid) =>
      options.onProgress?.({
        stage: `waiting for another build of ${name}`,
        detail: `process ${pid} is building it; this build goes on when it ends`,
      }),
  });
  try {
    const pythonLock = await lockPythonPackages({
      loaded,
      inputs,
      workDirectory: store,
      wheelCache: options.wheelCache ?? defaultWheelCache(store),
      ...(options.relock ? { relock: true } : {}),
      ...(options.mirror ? { mirror: options.mirror } : {}),
      ...(options.allowHosts ? { allowHosts: options.allowHosts } : {}),
      ...(options.onProgress ? { onProgress: options.onProgress } : {}),
      ...(options.signal ? { signal: options.signal } : {}),
    });
    // Before anything is built: an offline build that would have to fetch fails now, saying why.
    refuseOfflineFetches(loaded.description, inputs, options.allowHosts, pythonLock !== undefined);
    const hash = await environmentHash(loaded.description, inputs, undefined, pythonLock?.lock);
    options.onProgress?.({ stage: `environment ${name}`, detail: `content hash ${hash}` });
    const result = await buildLocked(options, { store, loaded, inputs, hash, pythonLock });
    return pythonLock
      ? {
          ...result,
          pythonLock: { file: pythonLock.file, files: pythonLock.lock.files.length, written: pythonLock.written },
        }
      : result;
  } finally {
    await lock.release();
  }
}

interface BuildInputs {
  store: string;
  loaded: LoadedDescription;
  inputs: EnvironmentInputs;
  hash: string;
  pythonLock: LockedPackages | undefined;
}

/** The build itself, under the name's lock: what is built is looked at only once no one else is building it. */
async function buildLocked(
  options: EnvironmentBuildOptions,
  { store, loaded, inputs, hash, pythonLock }: BuildInputs,
): Promise<EnvironmentBuildResult> {
  const { name } = loaded.description;
  const directory = buildDirectory(store, name, hash);
  const rootfs = path.join(directory, 'rootfs');
  const existing = await readRecord(store, name, hash);
  const rootfsBuilt =
    existing?.builds.bubblewrap !== undefined && (await exists(path.join(rootfs, ENVIRONMENT_MARKER_FILE)));
  const imageTag = environmentImageTag(name, hash);
  const built =
    options.backend === 'bubblewrap'
      ? rootfsBuilt
      : existing?.builds.docker !== undefined && (await runtimeImagePresent(requireDocker(options), imageTag));
  if (built && !options.force) {
    const removedBuilds = await makeCurrent(store, name, hash);
    const backendRef = options.backend === 'bubblewrap' ? rootfs : imageTag;
    return { name, hash, backend: options.backend, backendRef, reused: true, removedBuilds };
  }
  const record: EnvironmentBuildRecord = existing ?? {
    name,
    hash,
    runtimeVersion: runtimeVersion(),
    description: loaded.description,
    builds: {},
  };
  try {
    const builtAt = new Date().toISOString();
    if (!rootfsBuilt || options.force) {
      const build = await buildEnvironmentRootfs({
        loaded,
        inputs,
        hash,
        target: rootfs,
        mirror: options.mirror,
        ...(options.allowHosts ? { allowHosts: options.allowHosts } : {}),
        ...(pythonLock ? { pythonLock } : {}),
        onProgress: options.onProgress,
        signal: options.signal,
      });
      record.builds.bubblewrap = { backendRef: rootfs, builtAt, sizeBytes: build.sizeBytes };
    }
    if (options.backend === 'docker') {
      const docker = requireDocker(options);
      await buildEnvironmentImage({
        docker,
        directory: rootfs,
        tag: imageTag,
        labels: { [ENVIRONMENT_LABEL]: `${name}:${hash}` },
        onProgress: options.onProgress,
      });
      const image = await docker.getImage(imageTag).inspect();
      record.builds.docker = { backendRef: imageTag, builtAt, sizeBytes: image.Size };
    }
  } catch (error) {
    // Nothing half-built: the hash's directory goes unless an earlier, whole build is recorded in it.
    if (!existing) await rm(directory, { recursive: true, force: true });
    throw error;
  }
  await writeRecord(store, record);
  const removedBuilds = await makeCurrent(store, name, hash);
  if (options.docker) await removeImages(options.docker, name, removedBuilds);
  const backendRef = options.backend === 'bubblewrap' ? rootfs : imageTag;
  return { name, hash, backend: options.backend, backendRef, reused: false, removedBuilds };
}

/** Removes the images of builds no longer kept; one still used by a container stays (the engine refuses). */
export async function removeImages(docker: Dockerode, name: string, hashes: string[]): Promise<string[]> {
  const removed: string[] = [];
  for (const hash of hashes) {
    const tag = environmentImageTag(name, hash);
    await docker
      .getImage(tag)
      .remove()
      .then(
        () => removed.push(tag),
        () => undefined,
      );
  }
  return removed;
}

function requireDocker(options: EnvironmentBuildOptions): Dockerode {
  if (!options.docker) throw new Error('buildEnvironment for docker needs a Docker client (options.docker).');
  return options.docker;
}

async function exists(file: string): Promise<boolean> {
  return access(file).then(
    () => true,
    () => false,
  );
}
