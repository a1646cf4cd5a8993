/**
 * An environment built for Docker: its root filesystem (the runtime's files as links plus the
 * layer's own) becomes `sandcell-env-<name>:<hash>`. Where the engine's runtime image was imported
 * from this very runtime tree, the image is that runtime image plus the environment's changes
 * (image/docker-layer.ts), so both backends still get the same bytes and the engine stores only the
 * layer. Otherwise (a runtime image built by its Dockerfile, an older import, a tree of copies) the
 * whole tree is imported, and the build says why.
 */
import path from 'node:path';
import type Dockerode from 'dockerode';
import { statusOf } from '../backends/docker/engine-errors.js';
import { importDirectoryAsImage } from '../image/docker-image.js';
import { buildLayerImage } from '../image/docker-layer.js';
import { RUNTIME_ROOTFS_LABEL, runtimeImageTag, runtimeRootfsDirectory } from '../image/recipe.js';
import { type BuildProgress, runtimeRootfsBuildId } from '../image/rootfs.js';
import { sharesFilesWith, treeChanges } from '../image/tree-changes.js';

/** A file of the runtime's that every environment's tree links: whether the tree is links at all. */
const SHARED_PROBE = 'etc/sandcell-runtime-version';

export interface EnvironmentImageOptions {
  docker: Dockerode;
  /** The environment's root filesystem. */
  rootfs: string;
  tag: string;
  labels: Record<string, string>;
  onProgress?: (progress: BuildProgress) => void;
}

export async function buildEnvironmentImage(options: EnvironmentImageOptions): Promise<void> {
  const base = await layerBase(options.docker, options.rootfs);
  if (typeof base === 'string') {
    options.onProgress?.({ stage: 'importing the whole root filesystem', detail: base });
    await importDirectoryAsImage({ ...options, directory: options.rootfs });
    return;
  }
  const changes = await treeChanges(base.directory, options.rootfs);
  await buildLayerImage({
    ...options,
    base: base.tag,
    directory: options.rootfs,
    changes,
    scratch: path.dirname(options.rootfs),
  });
}

/** The runtime image and tree the environment can be layered on, or why it cannot. */
async function layerBase(docker: Dockerode, rootfs: string): Promise<{ tag: string; directory: string } | string> {
  const tag = runtimeImageTag();
  const directory = runtimeRootfsDirectory();
  const image = await docker
    .getImage(tag)
    .inspect()
    .catch((error: unknown) => {
      if (statusOf(error) === 404) return undefined;
      throw error;
    });
  if (!image) return `${tag} is not in the engine`;
  const label = image.Config?.Labels?.[RUNTIME_ROOTFS_LABEL];
  if (label === undefined || label !== (await runtimeRootfsBuildId(directory))) {
    return `${tag} was not imported from this machine's runtime root filesystem (built from its Dockerfile, or from an earlier build)`;
  }
  if (!(await sharesFilesWith(directory, rootfs, SHARED_PROBE))) {
    return "the environment's files are copies, not links to the runtime's";
  }
  return { tag, directory };
}
