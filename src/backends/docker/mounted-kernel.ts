/**
 * sandcell's kernel files for images sandcell did not build (an environment
 * registered from an existing image or a Dockerfile): the image is never
 * modified, so the files are staged once in a directory on the host and
 * bound read-only over /opt/sandcell of each kernel container, where the
 * image's own python3 runs them.
 *
 * Such an image need not have python3-seccomp, so sandcell's seccomp filter is
 * compiled on the host (as bubblewrap's is) and loaded in the container by
 * seccomp_loader.py, which uses the standard library alone.
 */
import { chmod, copyFile, mkdir, readdir, rename, rm } from 'node:fs/promises';
import path from 'node:path';
import type Dockerode from 'dockerode';
import { runtimeVersion } from '../../image/recipe.js';
import {
  kernelDirectory,
  kernelFiles,
  SECCOMP_LOADER,
  SUPERVISOR_PYTHON_FLAGS,
  SUPERVISOR_SCRIPT,
} from '../../kernel/index.js';
import { defaultCacheDirectory, ensureSeccompFilter } from '../bubblewrap/host-setup.js';
import { KERNEL_MOUNT } from '../sandbox-environment.js';

/** The loader beside the kernel files: it is not a kernel file, so it is not part of the runtime's version. */
export { SECCOMP_LOADER };

const FILTER_FILE = 'seccomp.bpf';

let staged: Promise<string> | undefined;

/**
 * The host directory bound at /opt/sandcell: the kernel files, the loader and
 * the compiled filter, world-readable (the session's uid reads them), made
 * once per sandcell version and reused.
 */
export function stagedKernelDirectory(cacheDirectory = defaultCacheDirectory()): Promise<string> {
  staged ??= stage(cacheDirectory).catch((error: unknown) => {
    staged = undefined;
    throw error;
  });
  return staged;
}

async function stage(cacheDirectory: string): Promise<string> {
  const target = path.join(cacheDirectory, `docker-kernel-${runtimeVersion()}`);
  const expected = [...kernelFiles(), SECCOMP_LOADER, FILTER_FILE].sort();
  const present = await readdir(target).catch(() => [] as string[]);
  if (present.sort().join('\n') === expected.join('\n')) return target;
  const filter = await ensureSeccompFilter(cacheDirectory);
  const partial = `${target}.partial-${process.pid}`;
  await rm(partial, { recursive: true, force: true });
  await mkdir(partial, { recursive: true, mode: 0o755 });
  for (const name of [...kernelFiles(), SECCOMP_LOADER]) {
    await copyFile(path.join(kernelDirectory, name), path.join(partial, name));
  }
  await copyFile(filter, path.join(partial, FILTER_FILE));
  for (const name of expected) await chmod(path.join(partial, name), 0o644);
  await chmod(partial, 0o755);
  await rm(target, { recursive: true, force: true });
  await rename(partial, target);
  return target;
}

/** The entrypoint: the image's python loads the filter, then execs the supervisor under it. */
export function mountedKernelCommand(python: string): string[] {
  return [
    python,
    '-I',
    '-B',
    `${KERNEL_MOUNT}/${SECCOMP_LOADER}`,
    `${KERNEL_MOUNT}/${FILTER_FILE}`,
    python,
    ...SUPERVISOR_PYTHON_FLAGS,
    `${KERNEL_MOUNT}/${SUPERVISOR_SCRIPT}`,
  ];
}

/** The staged directory over /opt/sandcell, read-only. */
export function kernelMount(directory: string): Dockerode.MountSettings {
  return { Type: 'bind', Source: directory, Target: KERNEL_MOUNT, ReadOnly: true };
}
