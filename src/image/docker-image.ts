/**
 * Builds the runtime as a Docker image, by one of two routes:
 * - `dockerfile`: FROM debian:bookworm-slim + apt-get, for engines that reach a registry;
 * - `debootstrap`: the root filesystem built offline (rootfs.ts), imported as the image.
 * `auto` takes the Dockerfile route when the base image is present or can be
 * pulled, else the offline one, and says which and why.
 */

import { spawn } from 'node:child_process';
import { copyFile, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type Dockerode from 'dockerode';
import { statusOf } from '../backends/docker/engine-errors.js';
import { SANDBOX_GID, SANDBOX_UID } from '../backends/sandbox-environment.js';
import { ImageBuildError } from '../errors.js';
import { formatBytes } from '../protocol/format-bytes.js';
import {
  ACCOUNT_FILE_LINKS,
  DOCKERFILE_BASE_IMAGE,
  RUNTIME_ROOTFS_LABEL,
  RUNTIME_VERSION_LABEL,
  runtimeFiles,
  runtimeImageTag,
  runtimeVersion,
  sandboxPackages,
} from './recipe.js';
import { type BuildProgress, buildRuntimeRootfs, runtimeRootfsBuildId } from './rootfs.js';

export type ImageRoute = 'dockerfile' | 'debootstrap';

export interface DockerImageBuildOptions {
  docker: Dockerode;
  route?: ImageRoute | 'auto';
  force?: boolean;
  mirror?: string;
  /** How long to try pulling the base image before taking the offline route. @default 60000 */
  pullTimeoutMs?: number;
  onProgress?: (progress: BuildProgress) => void;
  signal?: AbortSignal;
}

export interface DockerImageBuildResult {
  tag: string;
  version: string;
  reused: boolean;
  route?: ImageRoute;
  /** Why this route was taken (for `auto`). */
  routeReason?: string;
  imageId?: string;
}

/** The image, or undefined when the engine has none of that name; an engine that cannot be reached (or fails) throws. */
export async function inspectImage(docker: Dockerode, tag: string): Promise<Dockerode.ImageInspectInfo | undefined> {
  return docker
    .getImage(tag)
    .inspect()
    .catch((error: unknown) => {
      if (statusOf(error) === 404) return undefined;
      throw error;
    });
}

/** Whether the engine has the image; an engine that cannot be reached (or fails) throws, it is not "absent". */
export async function runtimeImagePresent(docker: Dockerode, tag = runtimeImageTag()): Promise<boolean> {
  return (await inspectImage(docker, tag)) !== undefined;
}

export async function buildRuntimeImage(options: DockerImageBuildOptions): Promise<DockerImageBuildResult> {
  const { docker } = options;
  const tag = runtimeImageTag();
  const version = runtimeVersion();
  if (!options.force && (await runtimeImagePresent(docker, tag))) return { tag, version, reused: true };
  const { route, reason } = await chooseRoute(options);
  options.onProgress?.({ stage: `route: ${route}`, detail: reason });
  if (route === 'dockerfile') await buildWithDockerfile(options, tag);
  else await importRootfs(options, tag);
  const image = await docker.getImage(tag).inspect();
  return { tag, version, reused: false, route, routeReason: reason, imageId: image.Id };
}

async function chooseRoute(options: DockerImageBuildOptions): Promise<{ route: ImageRoute; reason: string }> {
  const requested = options.route ?? 'auto';
  if (requested !== 'auto') return { route: requested, reason: 'chosen with --route' };
  if (await runtimeImagePresent(options.docker, DOCKERFILE_BASE_IMAGE)) {
    return { route: 'dockerfile', reason: `${DOCKERFILE_BASE_IMAGE} is present in the engine` };
  }
  options.onProgress?.({ stage: `checking for a registry: pulling ${DOCKERFILE_BASE_IMAGE}` });
  try {
    await pull(options.docker, DOCKERFILE_BASE_IMAGE, options.pullTimeoutMs ?? 60_000, options.onProgress);
    return { route: 'dockerfile', reason: `pulled ${DOCKERFILE_BASE_IMAGE} from the registry` };
  } catch (error) {
    return {
      route: 'debootstrap',
      reason: `no registry reachable (${(error as Error).message.split('\n')[0]}); building offline with debootstrap from the Debian archive`,
    };
  }
}

function pull(
  docker: Dockerode,
  image: string,
  timeoutMs: number,
  onProgress?: (progress: BuildProgress) => void,
): Promise<void> {
  const abort = new AbortController();
  const timer = setTimeout(() => abort.abort(), timeoutMs);
  return new Promise<void>((resolve, reject) => {
    abort.signal.addEventListener('abort', () => reject(new Error(`no answer within ${timeoutMs / 1000} s`)));
    docker.pull(image, { abortSignal: abort.signal }, (error: unknown, stream?: NodeJS.ReadableStream) => {
      if (error || !stream) {
        reject(error instanceof Error ? error : new Error(String(error)));
        return;
      }
      docker.modem.followProgress(
        stream,
        (finished: Error | null) => (finished ? reject(finished) : resolve()),
        (event: { status?: string; progress?: string; error?: string }) => {
          if (event.error) reject(new Error(event.error));
          else
            onProgress?.({
              stage: `pulling ${image}`,
              detail: [event.status, event.progress].filter(Boolean).join(' '),
            });
        },
      );
    });
  }).finally(() => clearTimeout(timer));
}

/** The Dockerfile route's recipe: the same packages, account and files as the offline route. */
export function runtimeDockerfile(): string {
  const files = runtimeFiles().map((file) => file.name);
  const accountLinks = Object.entries(ACCOUNT_FILE_LINKS)
    .map(([file, target]) => ` && ln -sf ${target} ${file}`)
    .join('');
  return [
    `FROM ${DOCKERFILE_BASE_IMAGE}`,
    'RUN apt-get update \\',
    ` && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends ${sandboxPackages().join(' ')} \\`,
    ' && rm -rf /var/lib/apt/lists/* /var/cache/apt/archives/*.deb',
    'RUN mkdir -p /mnt/data /opt/sandcell',
    `COPY ${files.join(' ')} /opt/sandcell/`,
    // The kernel writes the accounts at start, for the session's uid (ACCOUNT_FILE_LINKS).
    `RUN echo ${runtimeVersion()} > /etc/sandcell-runtime-version${accountLinks}`,
    `LABEL ${RUNTIME_VERSION_LABEL}=${runtimeVersion()}`,
    `USER ${SANDBOX_UID}:${SANDBOX_GID}`,
    'WORKDIR /mnt/data',
    '',
  ].join('\n');
}

async function buildWithDockerfile(options: DockerImageBuildOptions, tag: string): Promise<void> {
  const context = await mkdtemp(path.join(os.tmpdir(), 'sandcell-image-'));
  try {
    await writeFile(path.join(context, 'Dockerfile'), runtimeDockerfile());
    for (const file of runtimeFiles()) await copyFile(file.source, path.join(context, file.name));
    const stream = await options.docker.buildImage(
      { context, src: ['Dockerfile', ...runtimeFiles().map((file) => file.name)] },
      { t: tag, labels: { [RUNTIME_VERSION_LABEL]: runtimeVersion() }, rm: true, forcerm: true },
    );
    await followBuild(options.docker, stream, (event: { stream?: string; error?: string }) => {
      const line = event.stream?.trim();
      if (line) {
        const step = /^Step (\d+\/\d+)/.exec(line);
        options.onProgress?.({ stage: step ? `docker build: step ${step[1]}` : 'docker build', detail: line });
      }
    });
  } finally {
    await rm(context, { recursive: true, force: true });
  }
}

async function importRootfs(options: DockerImageBuildOptions, tag: string): Promise<void> {
  const rootfs = await buildRuntimeRootfs({
    mirror: options.mirror,
    onProgress: options.onProgress,
    signal: options.signal,
  });
  if (rootfs.reused)
    options.onProgress?.({ stage: 'reusing the root filesystem built before', detail: rootfs.directory });
  await importDirectoryAsImage({
    docker: options.docker,
    directory: rootfs.directory,
    tag,
    labels: {
      [RUNTIME_VERSION_LABEL]: runtimeVersion(),
      [RUNTIME_ROOTFS_LABEL]: await runtimeRootfsBuildId(rootfs.directory),
    },
    onProgress: options.onProgress,
  });
}

export interface DirectoryImportOptions {
  docker: Dockerode;
  /** A root filesystem (the runtime's, or an environment's). */
  directory: string;
  /** `repository:tag`. */
  tag: string;
  labels: Record<string, string>;
  onProgress?: (progress: BuildProgress) => void;
}

/** Imports a root filesystem directory as an image that runs as the sandbox account in /mnt/data. */
export async function importDirectoryAsImage(options: DirectoryImportOptions): Promise<void> {
  const stage = 'importing the root filesystem into Docker';
  options.onProgress?.({ stage, detail: options.directory });
  const tar = spawn('tar', ['--numeric-owner', '--one-file-system', '-C', options.directory, '-c', '.'], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let sent = 0;
  let tarError = '';
  tar.stderr.on('data', (chunk: Buffer) => {
    tarError += chunk.toString();
  });
  tar.stdout.on('data', (chunk: Buffer) => {
    sent += chunk.length;
    options.onProgress?.({ stage, detail: `${formatBytes(sent)} sent` });
  });
  const tarDone = new Promise<void>((resolve, reject) =>
    tar.once('close', (code) => (code === 0 ? resolve() : reject(new ImageBuildError(`tar failed: ${tarError}`)))),
  );
  const separator = options.tag.lastIndexOf(':');
  const stream = await options.docker.importImage(tar.stdout, {
    repo: options.tag.slice(0, separator),
    tag: options.tag.slice(separator + 1),
    changes: [
      `USER ${SANDBOX_UID}:${SANDBOX_GID}`,
      'WORKDIR /mnt/data',
      'ENV LANG=C.UTF-8',
      ...Object.entries(options.labels).map(([name, value]) => `LABEL ${name}=${value}`),
    ],
  });
  await Promise.all([followBuild(options.docker, stream, () => undefined), tarDone]);
}

/** Follows an engine progress stream to its end; an `error` event fails the build. */
export function followBuild<T extends { error?: string }>(
  docker: Dockerode,
  stream: NodeJS.ReadableStream,
  onEvent: (event: T) => void,
): Promise<void> {
  return new Promise((resolve, reject) => {
    let failure: string | undefined;
    docker.modem.followProgress(
      stream,
      (error: Error | null) => {
        if (error) reject(new ImageBuildError(`Docker Engine: ${error.message}`, { cause: error }));
        else if (failure) reject(new ImageBuildError(`Docker Engine: ${failure}`));
        else resolve();
      },
      (event: T) => {
        if (event.error) failure = event.error;
        onEvent(event);
      },
    );
  });
}
