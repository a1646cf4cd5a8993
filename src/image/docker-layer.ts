/**
 * An image made of another image plus one tree's changes to that image's root filesystem
 * (tree-changes.ts): `docker build` FROM the base, removing what the tree deleted, then adding a tar
 * of what it changed. The engine keeps the base's layers as they are, so an environment that adds a
 * package costs that package's bytes, not a second import of the whole runtime. Offline: the build's
 * one RUN (the removals) has no network.
 */
import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type Dockerode from 'dockerode';
import { SANDBOX_GID, SANDBOX_UID } from '../backends/sandbox-environment.js';
import { ImageBuildError } from '../errors.js';
import { followBuild } from './docker-image.js';
import type { BuildProgress } from './rootfs.js';
import type { TreeChanges } from './tree-changes.js';

export interface LayerImageOptions {
  docker: Dockerode;
  /** The image the tree was made from (its root filesystem is the tree's base). */
  base: string;
  /** The tree. */
  directory: string;
  changes: TreeChanges;
  /** `repository:tag`. */
  tag: string;
  labels: Record<string, string>;
  /** Where the build context is written (and removed after): beside the tree, on its filesystem. */
  scratch: string;
  onProgress?: (progress: BuildProgress) => void;
}

/** Where the list of removals lies in the image while they are made; it goes in the same step. */
const REMOVALS_FILE = '/.sandcell-removals';

export function layerDockerfile(base: string, removals: boolean): string {
  return [
    `FROM ${base}`,
    'USER 0:0',
    ...(removals
      ? [`COPY removals ${REMOVALS_FILE}`, `RUN xargs -0 -r rm -rf -- < ${REMOVALS_FILE} && rm -f ${REMOVALS_FILE}`]
      : []),
    'ADD layer.tar /',
    `USER ${SANDBOX_UID}:${SANDBOX_GID}`,
    'WORKDIR /mnt/data',
    '',
  ].join('\n');
}

export async function buildLayerImage(options: LayerImageOptions): Promise<void> {
  const context = await mkdtemp(path.join(options.scratch, '.docker-layer-'));
  try {
    const removals = options.changes.deleted.length > 0;
    options.onProgress?.({
      stage: `layering the environment on ${options.base}`,
      detail: `${options.changes.changed.length} paths changed, ${options.changes.deleted.length} removed`,
    });
    await writeFile(path.join(context, 'Dockerfile'), layerDockerfile(options.base, removals));
    if (removals) {
      await writeFile(path.join(context, 'removals'), options.changes.deleted.map((entry) => `/${entry}\0`).join(''));
    }
    await tarPaths(options.directory, options.changes.changed, path.join(context, 'layer.tar'));
    const stream = await options.docker.buildImage(
      { context, src: ['Dockerfile', 'layer.tar', ...(removals ? ['removals'] : [])] },
      { t: options.tag, labels: options.labels, rm: true, forcerm: true, networkmode: 'none' },
    );
    await followBuild(options.docker, stream, (event: { stream?: string; error?: string }) => {
      const line = event.stream?.trim();
      if (line) options.onProgress?.({ stage: 'docker build', detail: line });
    });
  } finally {
    await rm(context, { recursive: true, force: true });
  }
}

/** A tar of exactly these paths (no recursion: the list names each one), owners as numbers. */
function tarPaths(directory: string, paths: string[], target: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const tar = spawn(
      'tar',
      // -C before -T: tar reads the list's names relative to the directory given before it.
      [
        '--numeric-owner',
        '--no-recursion',
        '-cf',
        target,
        '-C',
        directory,
        '--null',
        '--verbatim-files-from',
        '-T',
        '-',
      ],
      { stdio: ['pipe', 'ignore', 'pipe'] },
    );
    let error = '';
    tar.stderr.on('data', (chunk: Buffer) => {
      if (error.length < 4096) error += chunk.toString();
    });
    tar.once('error', reject);
    tar.once('close', (code) =>
      code === 0 ? resolve() : reject(new ImageBuildError(`tar of the environment's changes failed: ${error}`)),
    );
    tar.stdin.end(paths.map((entry) => `${entry}\0`).join(''));
  });
}
