/**
 * Builds an environment's root filesystem: a copy of the runtime's, with the
 * layer script run in it as root through bwrap (its own PID, IPC, UTS and
 * network namespaces; its one way out a gate on the host with the build's
 * allow-list, see build-network.ts). All of it happens under a temporary name
 * that is renamed into place at the end, or removed on failure, so a failed
 * build leaves nothing behind.
 */
import { copyFile, lstat, mkdir, readdir, rename, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { isRoot, which } from '../backends/bubblewrap/host-setup.js';
import { BackendUnavailableError, ImageBuildError } from '../errors.js';
import { type BuildProgress, buildRuntimeRootfs, runProcess } from '../image/rootfs.js';
import { isProcessAlive } from '../internal/process-alive.js';
import { kernelDirectory } from '../kernel/index.js';
import { type BuildGate, buildAllowList, openBuildGate } from './build-network.js';
import type { LoadedDescription } from './description.js';
import type { EnvironmentInputs } from './inputs.js';
import {
  BUILD_FORWARDER_MODULE,
  BUILD_GATE_SOCKET,
  BUILD_NETWORK_DIRECTORY,
  INPUTS_DIRECTORY,
  layerScript,
  STAGING_DIRECTORY,
} from './layer-script.js';

/** Marker inside a finished environment root filesystem: `<name> <hash>`. */
export const ENVIRONMENT_MARKER_FILE = 'etc/sandcell-environment';
/** Lines of the tool's output kept for a failure's message. */
const TAIL_LINES = 30;

export interface RootfsLayerOptions {
  loaded: LoadedDescription;
  inputs: EnvironmentInputs;
  hash: string;
  /** The directory the finished root filesystem is renamed to. */
  target: string;
  mirror?: string;
  /** `--allow-host`: hosts the build may reach beyond its defaults and the description's `network.allow`. */
  allowHosts?: readonly string[];
  onProgress?: (progress: BuildProgress) => void;
  signal?: AbortSignal;
}

/**
 * Capabilities the layer's root does not need to install packages, dropped so that the network
 * namespace and the gate stay its only way out (no new interfaces, raw sockets, mounts or modules).
 */
const DROPPED_CAPABILITIES = [
  'CAP_NET_ADMIN',
  'CAP_NET_RAW',
  'CAP_SYS_ADMIN',
  'CAP_SYS_MODULE',
  'CAP_SYS_PTRACE',
  'CAP_SYS_RAWIO',
  'CAP_SYS_BOOT',
  'CAP_BPF',
];

/** Builds into `<target>.partial-<pid>` and renames it to `target`; returns the size in bytes. */
export async function buildEnvironmentRootfs(options: RootfsLayerOptions): Promise<void> {
  if (!isRoot()) {
    throw new BackendUnavailableError(
      'Building an environment needs root (it installs packages into a copy of the runtime root filesystem). Run `sudo sandcell env build FILE`.',
    );
  }
  const bwrap = which(process.env.SANDCELL_BWRAP ?? 'bwrap');
  if (!bwrap) throw new BackendUnavailableError('bubblewrap is not installed; `apt-get install bubblewrap`.');
  const report = options.onProgress ?? (() => undefined);
  const runtime = await buildRuntimeRootfs({
    mirror: options.mirror,
    onProgress: options.onProgress,
    signal: options.signal,
  });
  await sweepAbandonedPartials(path.dirname(options.target));
  const partial = `${options.target}.partial-${process.pid}`;
  let gate: BuildGate | undefined;
  await rm(partial, { recursive: true, force: true });
  await mkdir(path.dirname(options.target), { recursive: true, mode: 0o755 });
  try {
    report({ stage: 'copying the runtime root filesystem', detail: runtime.directory });
    await runProcess('cp', ['-a', '--reflink=auto', runtime.directory, partial], options.signal, {}, () => undefined);
    const allow = await buildAllowList(options.loaded.description, partial, options.allowHosts);
    await stageInputs(partial, options, allow !== undefined);
    if (allow === undefined) {
      report({ stage: 'building offline', detail: "the description says network: 'none'" });
    } else {
      report({ stage: 'network gate', detail: `the build may reach ${allow.join(', ') || 'nothing'}` });
      gate = await openBuildGate({
        buildId: `build-${options.loaded.description.name}-${options.hash}`,
        allow,
        report: (line) => report({ stage: line }),
      });
    }
    await runLayer(bwrap, partial, options, gate);
    await rm(path.join(partial, STAGING_DIRECTORY.slice(1)), { recursive: true, force: true });
    // The layer ran as root in there: whatever is at the marker's path (a link out of the tree) goes, and the file is made anew.
    const marker = path.join(partial, ENVIRONMENT_MARKER_FILE);
    await rm(marker, { force: true, recursive: true });
    await writeFile(marker, `${options.loaded.description.name} ${options.hash}\n`, { mode: 0o644, flag: 'wx' });
    await rm(options.target, { recursive: true, force: true });
    await rename(partial, options.target);
  } catch (error) {
    await rm(partial, { recursive: true, force: true }).catch(() => undefined);
    throw error;
  } finally {
    await gate?.close();
  }
}

/** Copies the description's files and the layer script under the staging directory of the copy. */
async function stageInputs(root: string, options: RootfsLayerOptions, gate: boolean): Promise<void> {
  const staging = path.join(root, STAGING_DIRECTORY.slice(1));
  // The copy's /var/tmp comes from the runtime; a link there would send the files elsewhere on the host.
  const parent = await lstat(path.dirname(staging));
  if (!parent.isDirectory())
    throw new ImageBuildError(`${path.dirname(staging)} in the runtime copy is not a directory.`);
  await mkdir(path.join(root, INPUTS_DIRECTORY.slice(1)), { recursive: true, mode: 0o755 });
  for (const directory of options.inputs.directories) {
    await mkdir(path.join(root, INPUTS_DIRECTORY.slice(1), directory.name), { recursive: true, mode: 0o755 });
  }
  for (const file of options.inputs.files) {
    const target = path.join(root, INPUTS_DIRECTORY.slice(1), file.name);
    await mkdir(path.dirname(target), { recursive: true, mode: 0o755 });
    await copyFile(file.source, target);
  }
  await writeFile(path.join(staging, 'layer.sh'), layerScript(options.loaded.description, { gate }), {
    mode: 0o700,
  });
  options.onProgress?.({ stage: "staged the description's files", detail: `${options.inputs.files.length} files` });
}

async function runLayer(
  bwrap: string,
  root: string,
  options: RootfsLayerOptions,
  gate: BuildGate | undefined,
): Promise<void> {
  const forwarder = path.join(kernelDirectory, `${BUILD_FORWARDER_MODULE}.py`);
  const network = gate
    ? [
        '--ro-bind',
        forwarder,
        `${BUILD_NETWORK_DIRECTORY}/${BUILD_FORWARDER_MODULE}.py`,
        '--bind',
        gate.socketPath,
        BUILD_GATE_SOCKET,
      ]
    : [];
  const args = [
    '--bind',
    root,
    '/',
    '--proc',
    '/proc',
    '--dev',
    '/dev',
    '--tmpfs',
    '/tmp',
    // Nothing under /run stays in the environment; the gate's socket and the forwarder go there.
    '--tmpfs',
    '/run',
    '--dir',
    BUILD_NETWORK_DIRECTORY,
    ...network,
    '--unshare-net',
    ...DROPPED_CAPABILITIES.flatMap((capability) => ['--cap-drop', capability]),
    '--unshare-pid',
    '--unshare-ipc',
    '--unshare-uts',
    '--die-with-parent',
    '--clearenv',
    '--setenv',
    'PATH',
    '/usr/sbin:/usr/bin:/sbin:/bin',
    '--setenv',
    'HOME',
    '/root',
    '--chdir',
    '/',
    '/bin/sh',
    `${STAGING_DIRECTORY}/layer.sh`,
  ];
  const tail: string[] = [];
  let stage = 'running the layer';
  await runProcess(bwrap, args, options.signal, {}, (line) => {
    if (line.startsWith('sandcell-step: ')) {
      stage = line.slice('sandcell-step: '.length);
      options.onProgress?.({ stage });
      return;
    }
    tail.push(line);
    if (tail.length > TAIL_LINES) tail.shift();
    options.onProgress?.({ stage, detail: line.slice(0, 200) });
  }).catch((error: unknown) => {
    const refusals = gate?.refusals() ?? [];
    const refused = refusals.length > 0 ? `\nThe build's network gate refused:\n  ${refusals.join('\n  ')}` : '';
    throw new ImageBuildError(
      `The environment build failed while ${stage}: ${(error as Error).message}\n${tail.join('\n')}${refused}`,
      { cause: error },
    );
  });
}

/** Partial builds of processes that died mid-build. */
async function sweepAbandonedPartials(directory: string): Promise<void> {
  const entries = await readdir(directory).catch(() => [] as string[]);
  for (const entry of entries) {
    const match = /\.partial-(\d+)$/.exec(entry);
    if (match && Number(match[1]) !== process.pid && !isProcessAlive(Number(match[1]))) {
      await rm(path.join(directory, entry), { recursive: true, force: true });
    }
  }
}

/** Bytes a directory tree holds (du), for `env list` and doctor. */
export async function directoryBytes(directory: string): Promise<number | undefined> {
  let output = '';
  await runProcess('du', ['-sb', directory], undefined, {}, (line) => {
    output = line;
  }).catch(() => undefined);
  const bytes = Number.parseInt(output, 10);
  return Number.isFinite(bytes) ? bytes : undefined;
}
