/**
 * Builds sandcell itself as a Docker image (`sandcell image build --server`):
 * the runtime image (its Debian, Python and the data packages, which the
 * sandboxes use as their system) with bubblewrap and tini from Debian, this
 * Node.js, and this sandcell with its production dependencies. Offline: the
 * two Debian packages come from the host's apt (the host and the image share
 * the Debian suite) and everything else from this machine; no registry.
 *
 * In the container, `sandcell serve` runs bubblewrap sandboxes. What the
 * container needs for that, and no more, is written down in
 * deploy/kubernetes (the pod's security context) and docs/kubernetes.md.
 */
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { copyFile, cp, mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import type Dockerode from 'dockerode';
import { ImageBuildError } from '../errors.js';
import { buildRuntimeImage, followBuild, runtimeImagePresent } from './docker-image.js';
import { DEBIAN_SUITE } from './recipe.js';
import type { BuildProgress } from './rootfs.js';

const execFileAsync = promisify(execFile);

export const SERVER_IMAGE_REPOSITORY = 'sandcell';
/** Labels on the image: which build of sandcell it is. */
export const SERVER_VERSION_LABEL = 'org.sandcell.server-version';
/** Debian packages the server needs beside the runtime's: the sandbox, and an init that reaps orphans. */
export const SERVER_PACKAGES = ['bubblewrap', 'tini'] as const;
/** Where this Node.js and sandcell go in the image. */
export const SERVER_NODE = '/usr/local/lib/sandcell/bin/node';
export const SERVER_APP = '/usr/local/lib/sandcell/app';
/** The image's port (`sandcell serve`'s default). */
export const SERVER_PORT = 8080;

/**
 * The entrypoint. Container runtimes mount the container's own cgroups
 * read-only; with CAP_SYS_ADMIN the container may make them writable, so
 * each session gets its memory budget (else sandcell falls back to rlimits,
 * and `sandcell doctor` says so). On cgroup v2 a cgroup that hands
 * controllers to children holds no processes: the server moves to a leaf
 * and sandcell makes its session cgroups beside it.
 */
const ENTRYPOINT = `#!/bin/sh
# sandcell's container entrypoint: writable cgroups when the container may have them, then tini.
if [ "$(id -u)" = 0 ]; then
  for mountpoint in $(awk '$9 == "cgroup" || $9 == "cgroup2" { print $5 }' /proc/self/mountinfo); do
    mount -o remount,bind,rw "$mountpoint" 2>/dev/null || true
  done
  if [ -f /sys/fs/cgroup/cgroup.controllers ] && [ "$(cat /proc/self/cgroup)" = "0::/" ] \\
    && mkdir -p /sys/fs/cgroup/sandcell-server 2>/dev/null \\
    && echo $$ > /sys/fs/cgroup/sandcell-server/cgroup.procs 2>/dev/null; then
    export SANDCELL_CGROUP_PARENT=/sys/fs/cgroup
  fi
fi
exec /usr/bin/tini -s -- "$@"
`;

const COMMAND = `#!/bin/sh
exec ${SERVER_NODE} ${SERVER_APP}/bin/sandcell.js "$@"
`;

export interface ServerImageBuildOptions {
  docker: Dockerode;
  force?: boolean;
  mirror?: string;
  onProgress?: (progress: BuildProgress) => void;
  signal?: AbortSignal;
}

export interface ServerImageBuildResult {
  tag: string;
  version: string;
  reused: boolean;
  runtimeTag: string;
  imageId?: string;
}

/** The package's root: where bin/, dist/ and node_modules/ are. */
function packageRoot(): string {
  return path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
}

export async function buildServerImage(options: ServerImageBuildOptions): Promise<ServerImageBuildResult> {
  const { docker, onProgress } = options;
  const runtime = await buildRuntimeImage({ docker, mirror: options.mirror, onProgress, signal: options.signal });
  const context = await mkdtemp(path.join(os.tmpdir(), 'sandcell-server-image-'));
  try {
    onProgress?.({ stage: 'collecting sandcell and its production dependencies' });
    const files = await stageApplication(path.join(context, 'app'));
    const version = await serverVersion(runtime.tag, files, path.join(context, 'app'));
    const tag = `${SERVER_IMAGE_REPOSITORY}:${version}`;
    if (!options.force && (await runtimeImagePresent(docker, tag))) {
      await tagLatest(docker, tag);
      return { tag, version, reused: true, runtimeTag: runtime.tag };
    }
    onProgress?.({ stage: `downloading ${SERVER_PACKAGES.join(', ')} from Debian` });
    const packages = await downloadDebianPackages(path.join(context, 'debs'), options.signal);
    await copyFile(process.execPath, path.join(context, 'node'));
    await writeFile(path.join(context, 'entrypoint'), ENTRYPOINT, { mode: 0o755 });
    await writeFile(path.join(context, 'sandcell'), COMMAND, { mode: 0o755 });
    await writeFile(path.join(context, 'Dockerfile'), serverDockerfile(runtime.tag, version));
    onProgress?.({ stage: 'docker build', detail: tag });
    const stream = await docker.buildImage(
      {
        context,
        src: ['Dockerfile', 'node', 'entrypoint', 'sandcell', 'app', ...packages.map((file) => `debs/${file}`)],
      },
      { t: tag, labels: { [SERVER_VERSION_LABEL]: version }, rm: true, forcerm: true },
    );
    await followBuild(docker, stream, (event: { stream?: string; error?: string }) => {
      const line = event.stream?.trim();
      if (line) onProgress?.({ stage: 'docker build', detail: line });
    });
    await tagLatest(docker, tag);
    const image = await docker.getImage(tag).inspect();
    return { tag, version, reused: false, runtimeTag: runtime.tag, imageId: image.Id };
  } finally {
    await rm(context, { recursive: true, force: true });
  }
}

async function tagLatest(docker: Dockerode, tag: string): Promise<void> {
  await docker.getImage(tag).tag({ repo: SERVER_IMAGE_REPOSITORY, tag: 'latest' });
}

/** The Dockerfile: the runtime image, then the server's part of it. */
export function serverDockerfile(runtimeTag: string, version: string): string {
  return [
    `FROM ${runtimeTag}`,
    'USER 0:0',
    'COPY debs/ /tmp/sandcell-debs/',
    'RUN dpkg -i /tmp/sandcell-debs/*.deb && rm -rf /tmp/sandcell-debs',
    `COPY node ${SERVER_NODE}`,
    // A Node.js the image's libc cannot run fails the build here, not at the first start.
    `RUN ${SERVER_NODE} --version`,
    `COPY app ${SERVER_APP}`,
    'COPY entrypoint /usr/local/bin/sandcell-entrypoint',
    'COPY sandcell /usr/local/bin/sandcell',
    'RUN mkdir -p /var/lib/sandcell /run/sandcell',
    // Sandboxes are bubblewrap's in the container; state, caches and the home are under /var/lib/sandcell.
    'ENV SANDCELL_BACKEND=bubblewrap HOME=/var/lib/sandcell XDG_CACHE_HOME=/var/lib/sandcell/cache SANDCELL_STATE_DIR=/var/lib/sandcell/state LANG=C.UTF-8',
    `ENV SANDCELL_HOST=0.0.0.0 SANDCELL_PORT=${SERVER_PORT}`,
    `LABEL ${SERVER_VERSION_LABEL}=${version}`,
    'WORKDIR /var/lib/sandcell',
    `EXPOSE ${SERVER_PORT}`,
    'ENTRYPOINT ["/usr/local/bin/sandcell-entrypoint"]',
    'CMD ["sandcell", "serve"]',
    '',
  ].join('\n');
}

/**
 * Copies package.json, bin/, dist/ and the production dependencies (as npm
 * lists them) into `target`; returns the copied files, relative, sorted.
 */
async function stageApplication(target: string): Promise<string[]> {
  const root = packageRoot();
  await mkdir(target, { recursive: true });
  await copyFile(path.join(root, 'package.json'), path.join(target, 'package.json'));
  for (const directory of ['bin', 'dist']) {
    await cp(path.join(root, directory), path.join(target, directory), { recursive: true });
  }
  const { stdout } = await execFileAsync('npm', ['ls', '--omit=dev', '--parseable', '--all'], {
    cwd: root,
    maxBuffer: 16 * 1024 * 1024,
  }).catch((error: unknown) => {
    throw new ImageBuildError(
      `\`npm ls --omit=dev\` failed in ${root}: ${(error as Error).message}. Run \`npm ci\` there first.`,
      { cause: error },
    );
  });
  for (const directory of stdout.split('\n').filter((line) => line && line !== root)) {
    const relative = path.relative(root, directory);
    if (relative.startsWith('..') || !relative.startsWith('node_modules')) continue;
    // Each package alone: its own nested node_modules are listed (or not, when they are dev-only) on their own.
    await cp(directory, path.join(target, relative), {
      recursive: true,
      filter: (source) =>
        source === directory || !path.relative(directory, source).split(path.sep).includes('node_modules'),
    });
  }
  return listFiles(target);
}

async function listFiles(root: string, relative = ''): Promise<string[]> {
  const files: string[] = [];
  for (const entry of await readdir(path.join(root, relative), { withFileTypes: true })) {
    const name = path.join(relative, entry.name);
    if (entry.isDirectory()) files.push(...(await listFiles(root, name)));
    else files.push(name);
  }
  return files.sort();
}

/** 12 hex digits over the runtime, this Node.js and every file of the application. */
async function serverVersion(runtimeTag: string, files: string[], appDirectory: string): Promise<string> {
  const hash = createHash('sha256');
  hash.update(JSON.stringify({ runtimeTag, node: process.version, packages: SERVER_PACKAGES, ENTRYPOINT, COMMAND }));
  hash.update(serverDockerfile(runtimeTag, ''));
  for (const file of files) {
    const full = path.join(appDirectory, file);
    hash.update(`\0${file}\0${(await stat(full)).mode & 0o111 ? 'x' : '-'}\0`);
    hash.update(await readFile(full));
  }
  return hash.digest('hex').slice(0, 12);
}

/** `apt-get download` on this host, which must be a Debian of the image's suite. */
async function downloadDebianPackages(directory: string, signal?: AbortSignal): Promise<string[]> {
  const release = await readFile('/etc/os-release', 'utf8').catch(() => '');
  const codename = /^VERSION_CODENAME=(.*)$/m.exec(release)?.[1]?.replace(/"/g, '');
  if (!/^ID=("?)debian\1$/m.test(release) || codename !== DEBIAN_SUITE) {
    throw new ImageBuildError(
      `Building sandcell's image takes ${SERVER_PACKAGES.join(' and ')} from this host's apt, which must be Debian ${DEBIAN_SUITE} like the image (this host: ${codename ?? 'not Debian'}).`,
    );
  }
  await mkdir(directory, { recursive: true });
  await execFileAsync('apt-get', ['download', ...SERVER_PACKAGES], { cwd: directory, signal }).catch(
    (error: unknown) => {
      throw new ImageBuildError(
        `\`apt-get download ${SERVER_PACKAGES.join(' ')}\` failed: ${(error as Error).message.trim()}. Run \`apt-get update\` and try again.`,
        { cause: error },
      );
    },
  );
  const files = (await readdir(directory)).filter((file) => file.endsWith('.deb')).sort();
  if (files.length !== SERVER_PACKAGES.length) {
    throw new ImageBuildError(`\`apt-get download\` left ${files.join(', ') || 'nothing'} in ${directory}.`);
  }
  return files;
}
