/**
 * Builds the runtime root filesystem with debootstrap: a minimal Debian with
 * the sandbox packages, the sandbox account and the kernel. Fully offline
 * from any container registry (it needs only a Debian mirror), so it is the
 * route CI takes; the Docker image is then imported from this directory, and
 * bubblewrap can run on it directly.
 */
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { access, copyFile, mkdir, readFile, rename, rm, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { isRoot, which } from '../backends/bubblewrap/host-setup.js';
import { BackendUnavailableError, ImageBuildError } from '../errors.js';
import {
  ACCOUNT_FILE_LINKS,
  DEBIAN_SUITE,
  DEFAULT_DEBIAN_MIRROR,
  runtimeFiles,
  runtimeRootfsDirectory,
  runtimeVersion,
  sandboxPackages,
} from './recipe.js';

/** A step of a long build, for a progress display. */
export interface BuildProgress {
  stage: string;
  detail?: string;
  /** A line of a command's own output that the user should see as it comes (an environment's setup commands). */
  output?: string;
}

export interface RootfsBuildOptions {
  /** Debian mirror. @default env SANDCELL_DEBIAN_MIRROR or deb.debian.org */
  mirror?: string;
  /** Rebuild even when this version exists. */
  force?: boolean;
  onProgress?: (progress: BuildProgress) => void;
  signal?: AbortSignal;
}

export interface RootfsBuildResult {
  directory: string;
  version: string;
  reused: boolean;
}

/** Marker file inside a finished root filesystem. */
const VERSION_FILE = 'etc/sandcell-runtime-version';

export async function rootfsIsBuilt(directory = runtimeRootfsDirectory()): Promise<boolean> {
  const marker = await readFile(path.join(directory, VERSION_FILE), 'utf8').catch(() => '');
  return marker.trim() === runtimeVersion();
}

export async function buildRuntimeRootfs(options: RootfsBuildOptions = {}): Promise<RootfsBuildResult> {
  const directory = runtimeRootfsDirectory();
  const version = runtimeVersion();
  if (!options.force && (await rootfsIsBuilt(directory))) return { directory, version, reused: true };
  if (!isRoot()) {
    throw new BackendUnavailableError(
      'Building the runtime root filesystem needs root (debootstrap creates device nodes and runs package scripts). Run `sudo npx sandcell image build`.',
    );
  }
  await ensureDebootstrap(options);
  const partial = `${directory}.partial-${process.pid}`;
  await rm(partial, { recursive: true, force: true });
  await mkdir(path.dirname(directory), { recursive: true, mode: 0o755 });
  try {
    await debootstrap(partial, options);
    options.onProgress?.({ stage: 'installing the kernel and the sandbox account' });
    await finishRootfs(partial, version);
    // The old tree's identity goes before the tree does: no image imported from it can match the new one.
    await rm(buildIdFile(directory), { force: true });
    await rm(directory, { recursive: true, force: true });
    await rename(partial, directory);
    await writeBuildId(directory);
  } catch (error) {
    await rm(partial, { recursive: true, force: true }).catch(() => undefined);
    throw error;
  }
  return { directory, version, reused: false };
}

/**
 * Which build of the root filesystem this is: a fresh id per build, kept beside the tree (not in it,
 * where a session would see it). An image imported from the tree carries it as a label
 * (RUNTIME_ROOTFS_LABEL), so an environment's files can be layered on that image only when the image
 * holds exactly this tree. A tree built before ids were kept gets one the first time it is asked for.
 */
export async function runtimeRootfsBuildId(directory = runtimeRootfsDirectory()): Promise<string> {
  const current = await readFile(buildIdFile(directory), 'utf8').catch(() => '');
  if (current.trim()) return current.trim();
  return writeBuildId(directory);
}

function buildIdFile(directory: string): string {
  return `${directory}.build-id`;
}

async function writeBuildId(directory: string): Promise<string> {
  const id = randomUUID();
  await writeFile(buildIdFile(directory), `${id}\n`, { mode: 0o644 });
  return id;
}

async function ensureDebootstrap(options: RootfsBuildOptions): Promise<void> {
  if (which('debootstrap')) return;
  if (!which('apt-get')) {
    throw new BackendUnavailableError('debootstrap is not installed, and this is not a Debian-based system.');
  }
  options.onProgress?.({ stage: 'installing debootstrap', detail: 'apt-get install debootstrap' });
  await runQuietly('apt-get', ['install', '-y', '-qq', '--no-install-recommends', 'debootstrap'], options.signal, {
    DEBIAN_FRONTEND: 'noninteractive',
  });
}

/** debootstrap's own lines ("I: Retrieving …", "I: Configuring …") become progress. */
async function debootstrap(target: string, options: RootfsBuildOptions): Promise<void> {
  const mirror = options.mirror ?? process.env.SANDCELL_DEBIAN_MIRROR ?? DEFAULT_DEBIAN_MIRROR;
  const args = ['--variant=minbase', `--include=${sandboxPackages().join(',')}`, DEBIAN_SUITE, target, mirror];
  const stages: Record<string, string> = {
    Retrieving: 'downloading packages',
    Validating: 'checking packages',
    Extracting: 'extracting packages',
    Unpacking: 'unpacking packages',
    Configuring: 'configuring packages',
  };
  const counts = new Map<string, number>();
  options.onProgress?.({ stage: 'debootstrap', detail: `${DEBIAN_SUITE} from ${mirror}` });
  const tail: string[] = [];
  await runProcess('debootstrap', args, options.signal, {}, (line) => {
    tail.push(line);
    if (tail.length > 20) tail.shift();
    // Per-package lines: "I: Retrieving adduser 3.134", "I: Unpacking libc6:amd64..."; others name a stage.
    const match = /^I: (Retrieving|Validating|Extracting|Unpacking|Configuring) (\S+?)(?:\.\.\.| \d\S*)$/.exec(line);
    if (match) {
      const stage = stages[match[1] as string] as string;
      const count = (counts.get(stage) ?? 0) + 1;
      counts.set(stage, count);
      options.onProgress?.({ stage: `${stage} (${count})`, detail: match[2] });
    } else if (line.startsWith('I: ')) {
      options.onProgress?.({ stage: line.slice(3).replace(/\.\.\.$/, '') });
    }
  }).catch((error: unknown) => {
    throw new ImageBuildError(`debootstrap failed: ${(error as Error).message}\n${tail.join('\n')}`, { cause: error });
  });
}

async function finishRootfs(root: string, version: string): Promise<void> {
  // Package caches are not part of the runtime.
  await rm(path.join(root, 'var/cache/apt/archives'), { recursive: true, force: true });
  await mkdir(path.join(root, 'var/cache/apt/archives/partial'), { recursive: true });
  await rm(path.join(root, 'var/lib/apt/lists'), { recursive: true, force: true });
  await mkdir(path.join(root, 'var/lib/apt/lists'), { recursive: true });
  // The accounts are written by the kernel at start (see ACCOUNT_FILE_LINKS).
  for (const [file, target] of Object.entries(ACCOUNT_FILE_LINKS)) {
    await rm(path.join(root, file), { force: true });
    await symlink(target, path.join(root, file));
  }
  await mkdir(path.join(root, 'mnt/data'), { recursive: true, mode: 0o755 });
  await mkdir(path.join(root, 'opt/sandcell'), { recursive: true, mode: 0o755 });
  for (const file of runtimeFiles()) {
    const target = path.join(root, 'opt/sandcell', file.name);
    await copyFile(file.source, target);
  }
  await access(path.join(root, 'usr/bin/python3'));
  await writeFile(path.join(root, VERSION_FILE), `${version}\n`, { mode: 0o644 });
}

function runQuietly(command: string, args: string[], signal?: AbortSignal, env: Record<string, string> = {}) {
  const output: string[] = [];
  return runProcess(command, args, signal, env, (line) => output.push(line)).catch((error: unknown) => {
    throw new ImageBuildError(`${command} failed: ${(error as Error).message}\n${output.slice(-20).join('\n')}`, {
      cause: error,
    });
  });
}

/** Runs a command, handing each line of its output (stdout and stderr) to `onLine`. */
export function runProcess(
  command: string,
  args: string[],
  signal: AbortSignal | undefined,
  env: Record<string, string>,
  onLine: (line: string) => void,
): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, ...env },
      signal,
    });
    for (const stream of [child.stdout, child.stderr]) createInterface({ input: stream }).on('line', onLine);
    child.once('error', reject);
    child.once('close', (code, killedBy) => {
      if (code === 0) resolve();
      else reject(new Error(`\`${command}\` exited with ${code ?? killedBy}`));
    });
  });
}
