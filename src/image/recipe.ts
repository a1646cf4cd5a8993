/**
 * The runtime: one pinned Debian userland with Python, IPython, the data
 * packages and the kernel, shared by both backends (a Docker image, or a root
 * filesystem directory for bubblewrap). Its version is a hash of everything
 * that goes into it, so a changed kernel or package list means a new build and
 * an unchanged one is reused.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { SANDBOX_GID, SANDBOX_UID } from '../backends/sandbox-environment.js';
import { kernelDirectory, kernelFiles, SECCOMP_SCRIPT } from '../kernel/index.js';

/** Bump when the build steps change in a way the inputs below do not show. */
const RECIPE_REVISION = 2;

export const DEBIAN_SUITE = 'bookworm';
export const DEFAULT_DEBIAN_MIRROR = 'http://deb.debian.org/debian';
export const RUNTIME_IMAGE_REPOSITORY = 'sandcell-runtime';
/** Docker images of built environments: `sandcell-env-<name>:<hash>` (src/environments/). */
export const ENVIRONMENT_IMAGE_REPOSITORY_PREFIX = 'sandcell-env-';
/** The base image of the Dockerfile route. */
export const DOCKERFILE_BASE_IMAGE = `debian:${DEBIAN_SUITE}-slim`;
/** Labels on the image: which recipe version it is. */
export const RUNTIME_VERSION_LABEL = 'org.sandcell.runtime-version';
/** On a runtime image imported from the root filesystem: that tree's build id (rootfs.ts runtimeRootfsBuildId). */
export const RUNTIME_ROOTFS_LABEL = 'org.sandcell.runtime-rootfs';

interface PackageLists {
  sandbox: string[];
  host: string[];
}

let packageLists: PackageLists | undefined;

/** The Debian packages of the sandbox (also installed on the host by `npm run setup`). */
export function sandboxPackages(): string[] {
  packageLists ??= JSON.parse(
    readFileSync(path.join(path.dirname(fileURLToPath(import.meta.url)), 'debian-packages.json'), 'utf8'),
  ) as PackageLists;
  return [...packageLists.sandbox];
}

/** Files copied into /opt/sandcell of the runtime: the supervisor, the kernels, and the seccomp filter containers load. */
export function runtimeFiles(): { name: string; source: string }[] {
  return [
    ...kernelFiles().map((name) => ({ name, source: path.join(kernelDirectory, name) })),
    { name: path.basename(SECCOMP_SCRIPT), source: SECCOMP_SCRIPT },
  ];
}

let version: string | undefined;

/** Content version of the runtime: 12 hex digits of a hash over every input of the build. */
export function runtimeVersion(): string {
  if (version) return version;
  const hash = createHash('sha256');
  hash.update(JSON.stringify({ RECIPE_REVISION, DEBIAN_SUITE, packages: sandboxPackages(), SANDBOX_UID, SANDBOX_GID }));
  for (const file of runtimeFiles()) {
    hash.update(`\0${file.name}\0`);
    hash.update(readFileSync(file.source));
  }
  version = hash.digest('hex').slice(0, 12);
  return version;
}

/** `sandcell-runtime:<version>`. */
export function runtimeImageTag(): string {
  return `${RUNTIME_IMAGE_REPOSITORY}:${runtimeVersion()}`;
}

/** Where root filesystems are kept: readable by the sandbox account, so not under a home directory. */
export function runtimeStoreDirectory(): string {
  if (process.env.SANDCELL_IMAGE_DIR) return path.resolve(process.env.SANDCELL_IMAGE_DIR);
  if (process.getuid?.() === 0) return '/var/lib/sandcell';
  const dataHome = process.env.XDG_DATA_HOME ?? path.join(os.homedir(), '.local', 'share');
  return path.join(dataHome, 'sandcell');
}

/** The runtime root filesystem of this version (it may not be built yet). */
export function runtimeRootfsDirectory(): string {
  return path.join(runtimeStoreDirectory(), 'rootfs', runtimeVersion());
}

/**
 * Where the runtime's /etc/passwd and /etc/group point. Docker runs each
 * session as its own leased host uid, which no image can know, so these are
 * links into /tmp and the kernel writes them at start (that uid named
 * `sandbox`, home /tmp). bubblewrap binds its own synthetic files instead.
 */
export const ACCOUNT_FILE_LINKS = {
  '/etc/passwd': '/tmp/.sandcell/passwd',
  '/etc/group': '/tmp/.sandcell/group',
} as const;
