/**
 * Before an environment is hashed and built: its Python packages from the index, locked and in the
 * wheel cache. A lock beside the description that holds for its Python inputs is used as it is;
 * otherwise (none yet, inputs changed, `--relock`) pip's resolver is asked what the description
 * needs beside what the runtime and its Debian packages have installed, on a throwaway overlay of
 * the runtime with the build's own gate, and every file it names is downloaded, hashed, kept in the
 * cache and written to a new lock. Files of a lock the cache lacks (another machine, a cleared
 * cache) are fetched from the index and checked against the lock's hashes. Offline
 * (`"network": "none"`) a lock is used only when the cache holds all its files; without one, the
 * build installs from its own wheels as before.
 */
import { mkdir, readlink, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { which } from '../backends/bubblewrap/host-setup.js';
import { BackendUnavailableError, ImageBuildError, InvalidInputError } from '../errors.js';
import { type BuildProgress, buildRuntimeRootfs, runProcess } from '../image/rootfs.js';
import { hostPackageIndex } from '../network/package-index.js';
import { type BuildGate, buildAllowList, openBuildGate } from './build-network.js';
import { installsPythonPackages, type LoadedDescription } from './description.js';
import type { EnvironmentInputs } from './inputs.js';
import { type LayerOverlay, prepareOverlay } from './layer-overlay.js';
import { runLayer } from './layer-run.js';
import {
  fetchScript,
  type LayerNetwork,
  LOCK_FILE,
  REPORT_FILE,
  resolveScript,
  WHEELHOUSE_DIRECTORY,
} from './layer-script.js';
import { readReport } from './pip-report.js';
import {
  type LockedFile,
  lockFilePath,
  lockRequirements,
  type PythonLock,
  pythonLockInputs,
  readLock,
  sortedFiles,
  writeLock,
} from './python-lock.js';
import { stagedPath, stageInputFiles } from './stage-inputs.js';
import { addToCache, cachedFile, downloadedFiles, sha256OfFile } from './wheel-cache.js';

export interface LockPackagesOptions {
  loaded: LoadedDescription;
  inputs: EnvironmentInputs;
  /** Where the step's throwaway files go (the environment store: renames stay on one filesystem). */
  workDirectory: string;
  wheelCache: string;
  /** Resolve again even when the lock holds. */
  relock?: boolean;
  mirror?: string;
  allowHosts?: readonly string[];
  onProgress?: (progress: BuildProgress) => void;
  signal?: AbortSignal;
}

export interface LockedPackages {
  lock: PythonLock;
  /** The lock file beside the description. */
  file: string;
  /** Whether this build wrote it (resolved anew). */
  written: boolean;
  /** The lock's files in the cache, checked, to stage for the build. */
  cachedPaths: string[];
}

export async function lockPythonPackages(options: LockPackagesOptions): Promise<LockedPackages | undefined> {
  const { loaded } = options;
  if (!installsPythonPackages(loaded.description)) return undefined;
  const report = options.onProgress ?? (() => undefined);
  const file = lockFilePath(loaded.file);
  const offline = loaded.description.network === 'none';
  const existing = options.relock ? undefined : await readLock(loaded.file);
  // An offline build with no lock cannot resolve: refused (by the caller) before the runtime is built or checked.
  if (offline && !existing) return undefined;
  const runtime = await buildRuntimeRootfs({
    ...(options.mirror ? { mirror: options.mirror } : {}),
    ...(options.onProgress ? { onProgress: options.onProgress } : {}),
    ...(options.signal ? { signal: options.signal } : {}),
  });
  const interpreter = path.basename(
    await readlink(path.join(runtime.directory, 'usr/bin/python3')).catch(() => 'python3'),
  );
  const inputsDigest = await pythonLockInputs(loaded, options.inputs, interpreter);
  const holds = existing !== undefined && existing.inputs === inputsDigest;
  if (!holds && offline) {
    if (existing) {
      report({ stage: 'Python lock', detail: `${file} is for other Python inputs; an offline build cannot resolve` });
    }
    return undefined;
  }
  let lock: PythonLock;
  let written = false;
  if (holds) {
    lock = existing;
    report({ stage: 'Python lock', detail: `${lock.files.length} files pinned in ${file}` });
  } else {
    report({
      stage: 'resolving Python packages',
      detail: existing ? `${file} is for other Python inputs` : options.relock ? '--relock' : `no ${file} yet`,
    });
    lock = { inputs: inputsDigest, files: sortedFiles(await resolve(options, runtime.directory)) };
    await writeLock(loaded.file, lock);
    written = true;
    report({ stage: 'Python lock', detail: `wrote ${file}: ${lock.files.length} files pinned` });
  }
  const cachedPaths: string[] = [];
  const missing: LockedFile[] = [];
  for (const locked of lock.files) {
    const cached = await cachedFile(options.wheelCache, locked);
    if (cached) cachedPaths.push(cached);
    else missing.push(locked);
  }
  if (missing.length > 0) {
    if (offline) {
      throw new InvalidInputError(
        `The description says "network": "none", and the wheel cache (${options.wheelCache}) lacks ${missing.length} of the files ${file} pins (${missing
          .slice(0, 3)
          .map((entry) => entry.filename)
          .join(
            ', ',
          )}${missing.length > 3 ? ', …' : ''}): build once with the network, or give this machine that cache (--wheel-cache DIR).`,
      );
    }
    report({ stage: 'fetching locked Python packages', detail: `${missing.length} not in ${options.wheelCache}` });
    await fetchMissing(options, runtime.directory, missing);
    for (const locked of missing) {
      const cached = await cachedFile(options.wheelCache, locked);
      if (!cached) throw new ImageBuildError(`The wheel cache did not keep ${locked.filename}.`);
      cachedPaths.push(cached);
    }
  }
  return { lock, file, written, cachedPaths };
}

/** Asks pip's resolver on a throwaway overlay; every index file it names is downloaded, hashed and cached. */
async function resolve(options: LockPackagesOptions, runtime: string): Promise<LockedFile[]> {
  return inThrowawayRuntime(options, runtime, 'lock', resolveScript, async (staging) => {
    const items = await readReport(stagedPath(staging, REPORT_FILE));
    const downloaded = await downloadedFiles(stagedPath(staging, WHEELHOUSE_DIRECTORY));
    const files: LockedFile[] = [];
    for (const item of items) {
      const source = downloaded.get(item.filename);
      if (!source) {
        throw new ImageBuildError(
          `pip resolved ${item.name} ${item.version} to ${item.filename}, and did not download it.`,
        );
      }
      const sha256 = await sha256OfFile(source);
      if (item.sha256 !== undefined && item.sha256 !== sha256) {
        throw new ImageBuildError(
          `${item.filename} from the index does not match the hash the index gave for it (${item.sha256}): it was not kept.`,
        );
      }
      const locked = { name: item.name, version: item.version, sha256, filename: item.filename };
      await addToCache(options.wheelCache, source, locked);
      files.push(locked);
    }
    return files;
  });
}

/** Downloads a lock's files the cache lacks; pip checks them against the lock's hashes, and so does this. */
async function fetchMissing(options: LockPackagesOptions, runtime: string, missing: LockedFile[]): Promise<void> {
  await inThrowawayRuntime(
    options,
    runtime,
    'fetch',
    fetchScript,
    async (staging) => {
      const downloaded = await downloadedFiles(stagedPath(staging, WHEELHOUSE_DIRECTORY));
      const byHash = new Map<string, string>();
      for (const source of downloaded.values()) byHash.set(await sha256OfFile(source), source);
      for (const locked of missing) {
        const source = byHash.get(locked.sha256);
        if (!source) {
          throw new ImageBuildError(
            `The index has no file of ${locked.name} ${locked.version} with the sha256 the lock pins (${locked.filename}).`,
          );
        }
        await addToCache(options.wheelCache, source, locked);
      }
    },
    lockRequirements(missing),
  );
}

/**
 * Runs a script on an overlay of the runtime whose changes are thrown away, with the build's gate,
 * the description's inputs staged; `read` looks at what it left in the staging directory.
 */
async function inThrowawayRuntime<T>(
  options: LockPackagesOptions,
  runtime: string,
  kind: 'lock' | 'fetch',
  script: (description: LoadedDescription['description'], network: LayerNetwork) => string,
  read: (staging: string) => Promise<T>,
  lockText?: string,
): Promise<T> {
  const bwrap = which(process.env.SANDCELL_BWRAP ?? 'bwrap');
  if (!bwrap) throw new BackendUnavailableError('bubblewrap is not installed; `apt-get install bubblewrap`.');
  const description = options.loaded.description;
  const work = path.join(options.workDirectory, `.${kind}-${description.name}.partial-${process.pid}`);
  const overlay: LayerOverlay = {
    lower: runtime,
    upper: path.join(work, 'upper'),
    work: path.join(work, 'work'),
    merged: path.join(work, 'merged'),
  };
  const staging = path.join(work, 'staging');
  const copy = path.join(work, 'root');
  let gate: BuildGate | undefined;
  await rm(work, { recursive: true, force: true });
  await mkdir(work, { recursive: true, mode: 0o700 });
  try {
    const noOverlay = await prepareOverlay(overlay);
    if (noOverlay !== undefined) {
      options.onProgress?.({
        stage: 'copying the runtime root filesystem',
        detail: `no overlay mount here (${noOverlay})`,
      });
      await runProcess('cp', ['-a', '--reflink=auto', runtime, copy], options.signal, {}, () => undefined);
    }
    const allow = (await buildAllowList(description, runtime, options.allowHosts)) ?? [];
    await stageInputFiles(staging, options.inputs, true);
    const pipEnvironment = description.python.indexUrl === undefined ? hostPackageIndex().environment : {};
    await writeFile(path.join(staging, 'layer.sh'), script(description, { gate: true, pipEnvironment }), {
      mode: 0o700,
    });
    if (lockText !== undefined) {
      await writeFile(stagedPath(staging, LOCK_FILE), lockText, { mode: 0o644 });
    }
    gate = await openBuildGate({
      buildId: `${kind}-${description.name}`,
      allow,
      report: (line) => options.onProgress?.({ stage: line }),
    });
    await runLayer({
      bwrap,
      root: noOverlay === undefined ? overlay.merged : copy,
      ...(noOverlay === undefined ? { overlay } : {}),
      staging,
      description,
      gate,
      ...(options.onProgress ? { onProgress: options.onProgress } : {}),
      ...(options.signal ? { signal: options.signal } : {}),
    });
    return await read(staging);
  } finally {
    await gate?.close();
    await rm(work, { recursive: true, force: true }).catch(() => undefined);
  }
}
