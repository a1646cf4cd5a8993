/**
 * `sandcell image prune`: the runtime is content-addressed, so every sandcell version that changed
 * it left a root filesystem (~2 GB) and a Docker image (~1.7 GB) behind. This removes the builds of
 * other versions that nothing stands on: a root filesystem some process has as its /usr (a
 * sandbox of an older sandcell still running) is kept, and so is an image a container uses (the
 * engine refuses to remove it). Environments are left to `sandcell env remove`; an environment's
 * root filesystem is a copy and its image keeps the layers it shares, so neither needs the runtime
 * build it started from.
 */
import { lstat, readdir, rename, rm } from 'node:fs/promises';
import path from 'node:path';
import type Dockerode from 'dockerode';
import { directoryBytes } from '../environments/build-rootfs.js';
import { processesOnRootfs } from '../environments/in-use.js';
import { isProcessAlive } from '../internal/process-alive.js';
import { RUNTIME_IMAGE_REPOSITORY, runtimeStoreDirectory, runtimeVersion } from './recipe.js';

export interface PrunedBuild {
  backend: 'bubblewrap' | 'docker';
  /** The root filesystem's directory, or the image's tag. */
  name: string;
  /** What it held (an image's size counts layers it may share with others). */
  bytes?: number;
  /** Removed (or, with dryRun, would be); otherwise `kept` says why not. */
  removed: boolean;
  kept?: string;
}

export interface PruneOptions {
  /** Say what would be removed, remove nothing. */
  dryRun?: boolean;
  /** Told of each build as it is removed or kept (a removal takes seconds). */
  onPruned?: (build: PrunedBuild) => void;
}

const VERSION_NAME = /^[0-9a-f]{12}$/;
const PARTIAL_NAME = /^[0-9a-f]{12}\.partial-(\d+)$/;

/** Root filesystems of other versions in the store, by name (nothing measured): for doctor. */
export async function olderRootfsVersions(store = runtimeStoreDirectory()): Promise<string[]> {
  const directory = path.join(store, 'rootfs');
  const older: string[] = [];
  for (const entry of (await readdir(directory).catch(() => [] as string[])).sort()) {
    if (!VERSION_NAME.test(entry) || entry === runtimeVersion()) continue;
    if ((await lstat(path.join(directory, entry)).catch(() => undefined))?.isDirectory()) older.push(entry);
  }
  return older;
}

/** `sandcell-runtime` tags of other versions in the engine: for doctor. */
export async function olderRuntimeTags(docker: Dockerode): Promise<string[]> {
  return (await olderImages(docker, RUNTIME_IMAGE_REPOSITORY)).flatMap(({ tags }) => tags).sort();
}

/** The repository's images that have tags of other versions than this one, with those tags. */
async function olderImages(
  docker: Dockerode,
  repository: string,
): Promise<{ image: Dockerode.ImageInfo; tags: string[] }[]> {
  const current = `${repository}:${runtimeVersion()}`;
  const images = await docker.listImages({ filters: JSON.stringify({ reference: [repository] }) });
  return images
    .map((image) => ({
      image,
      tags: (image.RepoTags ?? []).filter((tag) => tag.startsWith(`${repository}:`) && tag !== current).sort(),
    }))
    .filter(({ tags }) => tags.length > 0);
}

/** Root filesystems of other runtime versions, and partial builds of processes that died. */
export async function pruneRootfsBuilds(options: PruneOptions & { store?: string } = {}): Promise<PrunedBuild[]> {
  const directory = path.join(options.store ?? runtimeStoreDirectory(), 'rootfs');
  const current = runtimeVersion();
  const pruned: PrunedBuild[] = [];
  const record = recorder(pruned, options);
  for (const entry of (await readdir(directory).catch(() => [] as string[])).sort()) {
    const partial = PARTIAL_NAME.exec(entry);
    const abandoned = partial !== null && !isProcessAlive(Number(partial[1]));
    if (!abandoned && (!VERSION_NAME.test(entry) || entry === current)) continue;
    const build = path.join(directory, entry);
    if (!(await lstat(build).catch(() => undefined))?.isDirectory()) continue;
    const bytes = await directoryBytes(build);
    const result: Omit<PrunedBuild, 'removed'> = {
      backend: 'bubblewrap',
      name: build,
      ...(bytes !== undefined ? { bytes } : {}),
    };
    const users = abandoned ? [] : await processesOnRootfs(build);
    if (users.length > 0) {
      record({ ...result, removed: false, kept: `in use by ${users.length} process(es), e.g. pid ${users[0]}` });
      continue;
    }
    if (!options.dryRun) {
      // Renamed first: a half-removed tree never stands under a version's name. Gone meanwhile: another prune's.
      const removing = abandoned ? build : `${build}.partial-${process.pid}`;
      const taken = removing === build || (await rename(build, removing).then(() => true, ignoreGone));
      if (!taken) continue;
      await rm(removing, { recursive: true, force: true });
      // The tree's build id (rootfs.ts) goes with it.
      if (!abandoned) await rm(`${build}.build-id`, { force: true });
    }
    record({ ...result, removed: true });
  }
  return pruned;
}

/** `sandcell-runtime` images (or `repository`'s) of other versions that no container uses. */
export async function pruneRuntimeImages(
  docker: Dockerode,
  options: PruneOptions & { repository?: string } = {},
): Promise<PrunedBuild[]> {
  const pruned: PrunedBuild[] = [];
  const record = recorder(pruned, options);
  for (const { image, tags } of await olderImages(docker, options.repository ?? RUNTIME_IMAGE_REPOSITORY)) {
    // Removing a tag that is not the image's last only untags it: nothing is freed.
    let tagsLeft = (image.RepoTags ?? []).length;
    for (const tag of tags) {
      const result: Omit<PrunedBuild, 'removed'> = {
        backend: 'docker',
        name: tag,
        bytes: tagsLeft > 1 ? 0 : image.Size,
      };
      if (options.dryRun) {
        const users = await docker.listContainers({ all: true, filters: JSON.stringify({ ancestor: [image.Id] }) });
        record(
          users.length > 0 && tagsLeft === 1
            ? { ...result, removed: false, kept: `in use by ${users.length} container(s)` }
            : { ...result, removed: true },
        );
        tagsLeft -= 1;
        continue;
      }
      try {
        await docker.getImage(tag).remove();
        tagsLeft -= 1;
        record({ ...result, removed: true });
      } catch (error) {
        // 409: a container uses the image (the engine removes a tag only when other tags keep the image).
        if ((error as { statusCode?: number }).statusCode !== 409) throw error;
        record({ ...result, removed: false, kept: 'in use by a container' });
      }
    }
  }
  return pruned;
}

function ignoreGone(error: NodeJS.ErrnoException): false {
  if (error.code === 'ENOENT') return false;
  throw error;
}

function recorder(pruned: PrunedBuild[], options: PruneOptions): (build: PrunedBuild) => void {
  return (build) => {
    pruned.push(build);
    options.onPruned?.(build);
  };
}
