/**
 * Builds an environment's root filesystem: the runtime's, with the layer
 * script run on it as root through bwrap (layer-run.ts: its own PID, IPC, UTS
 * and network namespaces; its one way out a gate on the host with the build's
 * allow-list, see build-network.ts). The layer runs on an overlay of the
 * runtime, and the result is the runtime's files as hard links plus the
 * layer's changes (layer-overlay.ts), so it costs the layer's size; without
 * overlay mounts, a copy of the runtime as before. All of it happens under a
 * temporary name that is renamed into place at the end, or removed on
 * failure, so a failed build leaves nothing behind.
 */
import { lstat, mkdir, readdir, rename, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { isRoot, which } from '../backends/bubblewrap/host-setup.js';
import { BackendUnavailableError, ImageBuildError } from '../errors.js';
import { type BuildProgress, buildRuntimeRootfs, runProcess } from '../image/rootfs.js';
import { isProcessAlive } from '../internal/process-alive.js';
import { hostPackageIndex } from '../network/package-index.js';
import { type BuildGate, buildAllowList, openBuildGate } from './build-network.js';
import { installsPythonPackages, type LoadedDescription } from './description.js';
import type { EnvironmentInputs } from './inputs.js';
import { applyUpper, type LayerOverlay, linkTree, prepareOverlay } from './layer-overlay.js';
import { runLayer } from './layer-run.js';
import { LOCK_FILE, layerScript, STAGING_DIRECTORY, WHEELHOUSE_DIRECTORY } from './layer-script.js';
import type { LockedPackages } from './lock-packages.js';
import { lockRequirements } from './python-lock.js';
import { stagedPath, stageInputFiles } from './stage-inputs.js';
import { stageCachedFiles } from './wheel-cache.js';

/** Marker inside a finished environment root filesystem: `<name> <hash>`. */
export const ENVIRONMENT_MARKER_FILE = 'etc/sandcell-environment';

export interface RootfsLayerOptions {
  loaded: LoadedDescription;
  inputs: EnvironmentInputs;
  hash: string;
  /** The directory the finished root filesystem is renamed to. */
  target: string;
  mirror?: string;
  /** `--allow-host`: hosts the build may reach beyond its defaults and the description's `network.allow`. */
  allowHosts?: readonly string[];
  /** The Python packages from the index, locked and in the cache: the layer installs exactly these. */
  pythonLock?: LockedPackages;
  onProgress?: (progress: BuildProgress) => void;
  signal?: AbortSignal;
}

/** The builds' sizes: their own bytes, and the runtime's they share (counted once, for the runtime). */
export interface EnvironmentRootfsBuild {
  /** Bytes of the environment's own files (all of them when it shares none). */
  sizeBytes: number | undefined;
  /** Whether its unchanged files are the runtime's own (hard links), not copies. */
  sharesRuntimeFiles: boolean;
}

/** Builds into `<target>.partial-<pid>` and renames it to `target`. */
export async function buildEnvironmentRootfs(options: RootfsLayerOptions): Promise<EnvironmentRootfsBuild> {
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
  // The layer's overlay and its staged inputs, beside the build on the same filesystem (renames, not copies).
  const layer = `${options.target}.layer.partial-${process.pid}`;
  const overlay: LayerOverlay = {
    lower: runtime.directory,
    upper: path.join(layer, 'upper'),
    work: path.join(layer, 'work'),
    merged: path.join(layer, 'merged'),
  };
  const staging = path.join(layer, 'staging');
  let gate: BuildGate | undefined;
  await rm(partial, { recursive: true, force: true });
  await rm(layer, { recursive: true, force: true });
  await mkdir(path.dirname(options.target), { recursive: true, mode: 0o755 });
  await mkdir(layer, { mode: 0o700 });
  try {
    // The runtime's /var/tmp holds the inputs' mount point: a link there would send it elsewhere.
    if (!(await lstat(path.join(runtime.directory, path.dirname(STAGING_DIRECTORY).slice(1)))).isDirectory()) {
      throw new ImageBuildError(`${path.dirname(STAGING_DIRECTORY)} in the runtime is not a directory.`);
    }
    const noOverlay = await prepareOverlay(overlay);
    if (noOverlay !== undefined) {
      report({ stage: 'copying the runtime root filesystem', detail: `no overlay mount here (${noOverlay})` });
      await runProcess('cp', ['-a', '--reflink=auto', runtime.directory, partial], options.signal, {}, () => undefined);
    }
    const allow = await buildAllowList(options.loaded.description, runtime.directory, options.allowHosts);
    await stageInputs(staging, options, allow !== undefined);
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
    await runLayer({
      bwrap,
      root: noOverlay === undefined ? overlay.merged : partial,
      ...(noOverlay === undefined ? { overlay } : {}),
      staging,
      description: options.loaded.description,
      ...(gate ? { gate } : {}),
      ...(options.onProgress ? { onProgress: options.onProgress } : {}),
      ...(options.signal ? { signal: options.signal } : {}),
    });
    let sharesRuntimeFiles = false;
    if (noOverlay === undefined) {
      await rm(path.join(overlay.upper, STAGING_DIRECTORY.slice(1)), { recursive: true, force: true });
      report({ stage: "linking the runtime's files", detail: runtime.directory });
      sharesRuntimeFiles = await linkTree(runtime.directory, partial);
      if (!sharesRuntimeFiles) {
        report({ stage: 'copying the runtime root filesystem', detail: 'hard links to it cannot be made from here' });
        await runProcess(
          'cp',
          ['-a', '--reflink=auto', runtime.directory, partial],
          options.signal,
          {},
          () => undefined,
        );
      }
      report({ stage: "applying the layer's changes" });
      await applyUpper(overlay.upper, partial);
    } else {
      await rm(path.join(partial, STAGING_DIRECTORY.slice(1)), { recursive: true, force: true });
    }
    // The layer ran as root in there: whatever is at the marker's path (a link out of the tree) goes, and the file is made anew.
    const marker = path.join(partial, ENVIRONMENT_MARKER_FILE);
    await rm(marker, { force: true, recursive: true });
    await writeFile(marker, `${options.loaded.description.name} ${options.hash}\n`, { mode: 0o644, flag: 'wx' });
    await rm(options.target, { recursive: true, force: true });
    await rename(partial, options.target);
    const sizeBytes = await directoryBytes(options.target, sharesRuntimeFiles ? runtime.directory : undefined);
    return { sizeBytes, sharesRuntimeFiles };
  } catch (error) {
    await rm(partial, { recursive: true, force: true }).catch(() => undefined);
    throw error;
  } finally {
    await gate?.close();
    await rm(layer, { recursive: true, force: true }).catch(() => undefined);
  }
}

/** Copies the description's files, the Python lock's and the layer script into the staging directory, bound in for the run. */
async function stageInputs(staging: string, options: RootfsLayerOptions, gate: boolean): Promise<void> {
  await stageInputFiles(staging, options.inputs, gate);
  const description = options.loaded.description;
  const locked = options.pythonLock;
  if (locked) {
    await stageCachedFiles(locked.cachedPaths, stagedPath(staging, WHEELHOUSE_DIRECTORY));
    await writeFile(stagedPath(staging, LOCK_FILE), lockRequirements(locked.lock.files), {
      mode: 0o644,
    });
  }
  // Packages named without an index come from the index this machine's pip uses, as the gate allows.
  const pipEnvironment =
    gate && installsPythonPackages(description) && description.python.indexUrl === undefined
      ? hostPackageIndex().environment
      : {};
  const network = { gate, pipEnvironment, ...(locked ? { locked: { files: locked.lock.files.length } } : {}) };
  await writeFile(path.join(staging, 'layer.sh'), layerScript(description, network), { mode: 0o700 });
  options.onProgress?.({ stage: "staged the description's files", detail: `${options.inputs.files.length} files` });
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

/**
 * Bytes a directory tree holds (du), for `env list` and doctor; with `besides`, only those it does not
 * share with that tree (du counts a file linked from both once, for the first).
 */
export async function directoryBytes(directory: string, besides?: string): Promise<number | undefined> {
  let output = '';
  const trees = besides === undefined ? [directory] : [besides, directory];
  await runProcess('du', ['-sb', ...trees], undefined, {}, (line) => {
    output = line;
  }).catch(() => undefined);
  const bytes = Number.parseInt(output, 10);
  return Number.isFinite(bytes) ? bytes : undefined;
}
