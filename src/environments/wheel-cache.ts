/**
 * The wheel cache: every file an environment build took from the package index, kept by its
 * sha256 (`<cache>/sha256/<hex>/<file name>`), so a rebuild, or another machine given the same
 * directory, installs a lock's files without the network. `--wheel-cache DIR` /
 * `SANDCELL_WHEEL_CACHE` name it (a directory every node mounts makes it shared); the default is
 * `.wheels` in the environment store. A file is checked against its hash each time it is taken, and
 * one that no longer matches is dropped and fetched again.
 */
import { createHash } from 'node:crypto';
import { copyFile, link, mkdir, readdir, rename, rm } from 'node:fs/promises';
import path from 'node:path';
import { hashFileInto } from './inputs.js';
import { type LockedFile, PACKAGE_FILE_NAME } from './python-lock.js';

export function defaultWheelCache(store: string): string {
  if (process.env.SANDCELL_WHEEL_CACHE) return path.resolve(process.env.SANDCELL_WHEEL_CACHE);
  return path.join(store, '.wheels');
}

export async function sha256OfFile(file: string): Promise<string> {
  const hash = createHash('sha256');
  await hashFileInto(hash, file);
  return hash.digest('hex');
}

function entryDirectory(cache: string, sha256: string): string {
  return path.join(cache, 'sha256', sha256);
}

/** The cached file for a locked one, checked against its hash; undefined when the cache lacks it. */
export async function cachedFile(cache: string, file: LockedFile): Promise<string | undefined> {
  const candidate = path.join(entryDirectory(cache, file.sha256), file.filename);
  const actual = await sha256OfFile(candidate).catch(() => undefined);
  if (actual === undefined) return undefined;
  if (actual === file.sha256) return candidate;
  // Changed since it was kept (a disk error, a hand edit): it goes, and is fetched again.
  await rm(entryDirectory(cache, file.sha256), { recursive: true, force: true });
  return undefined;
}

/** Keeps a file whose hash is known (checked by the caller) under that hash. */
export async function addToCache(cache: string, source: string, file: LockedFile): Promise<void> {
  if (!PACKAGE_FILE_NAME.test(file.filename)) throw new Error(`not a package file name: ${file.filename}`);
  const directory = entryDirectory(cache, file.sha256);
  await mkdir(path.dirname(directory), { recursive: true, mode: 0o755 });
  const partial = `${directory}.partial-${process.pid}`;
  await rm(partial, { recursive: true, force: true });
  await mkdir(partial, { mode: 0o755 });
  await copyFile(source, path.join(partial, file.filename));
  await rm(directory, { recursive: true, force: true });
  await rename(partial, directory).catch(async (error: unknown) => {
    // Another build kept the same file meanwhile: its copy serves as well as this one.
    await rm(partial, { recursive: true, force: true });
    if ((await cachedFile(cache, file)) === undefined) throw error;
  });
}

/** Puts cached files into a directory pip reads with --find-links (hard links where it can). */
export async function stageCachedFiles(paths: readonly string[], directory: string): Promise<void> {
  await mkdir(directory, { recursive: true, mode: 0o755 });
  for (const source of paths) {
    const target = path.join(directory, path.basename(source));
    await link(source, target).catch(() => copyFile(source, target));
  }
}

/** The package files in a directory pip downloaded into, by name. */
export async function downloadedFiles(directory: string): Promise<Map<string, string>> {
  const names = await readdir(directory).catch(() => [] as string[]);
  return new Map(
    names.filter((name) => PACKAGE_FILE_NAME.test(name)).map((name) => [name, path.join(directory, name)]),
  );
}
