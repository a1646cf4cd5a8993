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
import { type DirectoryImportOptions, importDirectoryAsImage, inspectImage } from '../image/docker-image.js';
import { buildLayerImage } from '../image/docker-layer.js';
import { RUNTIME_ROOTFS_LABEL, runtimeImageTag, runtimeRootfsDirectory } from '../image/recipe.js';
import { runtimeRootfsBuildId } from '../image/rootfs.js';
import { sharesFilesWith, treeChanges } from '../image/tree-changes.js';

/** A file of the runtime's that every environment's tree links: whether the tree is links at all. */
const SHARED_PROBE = 'etc/sandcell-runtime-version';

/** `options.directory` is the environment's root filesystem. */
export async function buildEnvironmentImage(options: DirectoryImportOptions): Promise<void> {
  const base = await layerBase(options.docker, options.directory);
  if (typeof base === 'string') {
    options.onProgress?.({ stage: 'importing the whole root filesystem', detail: base });
    await importDirectoryAsImage(options);
    return;
  }
  const changes = await treeChanges(base.directory, options.directory);
  await buildLayerImage({ ...options, base: base.tag, changes, scratch: path.dirname(options.directory) });
}

/** The runtime image and tree the environment can be layered on, or why it cannot. */
async function layerBase(docker: Dockerode, rootfs: string): Promise<{ tag: string; directory: string } | string> {
  const tag = runtimeImageTag();
  const directory = runtimeRootfsDirectory();
  const image = await inspectImage(docker, tag);
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
