/**
 * Where built environments live and how a name finds its build.
 *
 * `<store>/<name>/<hash>/` holds one build: `environment.json` (the record,
 * written last, so a directory without it is a build that never finished) and,
 * for bubblewrap, `rootfs/`. `<store>/<name>/current` names the hash the name
 * means now; a rebuild moves it by renaming a new file over it. A build
 * replaced by a newer one is kept until the build after that (sessions started
 * on it keep their /usr), then removed; `env remove NAME` removes every build.
 */
import { mkdir, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { EnvironmentInUseError, EnvironmentNotFoundError } from '../errors.js';
import { ENVIRONMENT_IMAGE_REPOSITORY_PREFIX, runtimeStoreDirectory, runtimeVersion } from '../image/recipe.js';
import { buildingProcess } from './build-lock.js';
import type { EnvironmentDescription } from './description.js';
import { processesOnRootfs } from './in-use.js';
import {
  DEFAULT_ENVIRONMENT_NAME,
  ENVIRONMENT_NAME_PATTERN,
  type Environment,
  type EnvironmentBackendName,
  type ResolveEnvironmentOptions,
} from './types.js';

export interface EnvironmentBuildRecord {
  name: string;
  hash: string;
  runtimeVersion: string;
  /** The description as built (validated). */
  description: EnvironmentDescription;
  /** Per backend: what was built, when, and its size. */
  builds: Partial<Record<EnvironmentBackendName, { backendRef: string; builtAt: string; sizeBytes?: number }>>;
  /** An environment from an existing Docker image (`env add --image`) or a Dockerfile (`env build Dockerfile`). */
  image?: ImageEnvironmentFacts;
}

/** What registering an image found in it (src/environments/image-check.ts), and where it came from. */
export interface ImageEnvironmentFacts {
  /** What the user named: `repo:tag`, or the Dockerfile's path. */
  source: string;
  kind: 'image' | 'dockerfile';
  /** The engine's content id (`sha256:…`): the build's hash is its first 12 hex digits. */
  id: string;
  /** The image's python3 (absolute) and its version. */
  python: string;
  pythonVersion: string;
  ipythonVersion: string;
  matplotlibInline: boolean;
  /** Languages whose programs the image has (python always; javascript, typescript, bash, r when present). */
  languages: string[];
}

/** `<image store>/environments`, or SANDCELL_ENVIRONMENT_DIR (a store of its own, e.g. for tests). */
export function defaultEnvironmentStore(): string {
  if (process.env.SANDCELL_ENVIRONMENT_DIR) return path.resolve(process.env.SANDCELL_ENVIRONMENT_DIR);
  return path.join(runtimeStoreDirectory(), 'environments');
}

export function environmentImageTag(name: string, hash: string): string {
  return `${ENVIRONMENT_IMAGE_REPOSITORY_PREFIX}${name}:${hash}`;
}

export function buildDirectory(store: string, name: string, hash: string): string {
  return path.join(store, name, hash);
}

export async function readRecord(
  store: string,
  name: string,
  hash: string,
): Promise<EnvironmentBuildRecord | undefined> {
  const text = await readFile(path.join(buildDirectory(store, name, hash), 'environment.json'), 'utf8').catch(
    () => undefined,
  );
  if (text === undefined) return undefined;
  return JSON.parse(text) as EnvironmentBuildRecord;
}

/** Writes the record whole (temporary file, then rename), so a reader never sees half of one. */
export async function writeRecord(store: string, record: EnvironmentBuildRecord): Promise<void> {
  const directory = buildDirectory(store, record.name, record.hash);
  await mkdir(directory, { recursive: true, mode: 0o755 });
  const temporary = path.join(directory, `.environment.json.${process.pid}`);
  await writeFile(temporary, `${JSON.stringify(record, null, 2)}\n`, { mode: 0o644 });
  await rename(temporary, path.join(directory, 'environment.json'));
}

export async function currentHash(store: string, name: string): Promise<string | undefined> {
  const text = await readFile(path.join(store, name, 'current'), 'utf8').catch(() => undefined);
  const hash = text?.trim();
  return hash && /^[0-9a-f]{12}$/.test(hash) ? hash : undefined;
}

/** Points the name at `hash`, and removes builds other than it and the one it replaces. */
export async function makeCurrent(store: string, name: string, hash: string): Promise<string[]> {
  const previous = await currentHash(store, name);
  const temporary = path.join(store, name, `.current.${process.pid}`);
  await writeFile(temporary, `${hash}\n`, { mode: 0o644 });
  await rename(temporary, path.join(store, name, 'current'));
  const removed: string[] = [];
  for (const entry of await readdir(path.join(store, name))) {
    if (!/^[0-9a-f]{12}$/.test(entry) || entry === hash || entry === previous) continue;
    await rm(path.join(store, name, entry), { recursive: true, force: true });
    removed.push(entry);
  }
  return removed;
}

/** The current record of every named environment in the store. */
export async function listEnvironments(store = defaultEnvironmentStore()): Promise<EnvironmentBuildRecord[]> {
  const names = await readdir(store).catch(() => [] as string[]);
  const records: EnvironmentBuildRecord[] = [];
  for (const name of names.sort()) {
    if (!ENVIRONMENT_NAME_PATTERN.test(name)) continue;
    const hash = await currentHash(store, name);
    const record = hash ? await readRecord(store, name, hash) : undefined;
    if (record) records.push(record);
  }
  return records;
}

/**
 * Removes a name and all its builds from the store; the caller removes Docker
 * images. Refuses (EnvironmentInUseError) while a sandbox runs on one of its
 * root filesystems. Returns the removed records.
 */
export async function removeEnvironmentFromStore(store: string, name: string): Promise<EnvironmentBuildRecord[]> {
  if (!ENVIRONMENT_NAME_PATTERN.test(name))
    throw new EnvironmentNotFoundError(`There is no environment named ${JSON.stringify(name)}.`);
  const entries = await readdir(path.join(store, name)).catch(() => undefined);
  if (!entries)
    throw new EnvironmentNotFoundError(`There is no environment named ${name} (see \`sandcell env list\`).`);
  const records: EnvironmentBuildRecord[] = [];
  for (const entry of entries) {
    const record = /^[0-9a-f]{12}$/.test(entry) ? await readRecord(store, name, entry) : undefined;
    if (record) records.push(record);
  }
  const builder = await buildingProcess(store, name);
  if (builder !== undefined) {
    throw new EnvironmentInUseError(
      `The environment ${name} is being built (process ${builder}); remove it once that build has ended.`,
    );
  }
  // Every build, not only the current one: a session started before a rebuild still stands on the older.
  const users = new Set<number>();
  for (const entry of entries.filter((candidate) => /^[0-9a-f]{12}$/.test(candidate))) {
    for (const pid of await processesOnRootfs(path.join(buildDirectory(store, name, entry), 'rootfs'))) users.add(pid);
  }
  if (users.size > 0) {
    const pids = [...users].sort((a, b) => a - b);
    throw new EnvironmentInUseError(
      `The environment ${name} is in use: ${pids.length} sandbox process${pids.length === 1 ? '' : 'es'} (pid ${pids.slice(0, 5).join(', ')}${pids.length > 5 ? ', …' : ''}) run on it, and removing it would take their /usr away. Close those sessions (a server's warm pool holds some: stop the server, or restart it without this environment), then remove it again.`,
    );
  }
  await rm(path.join(store, name), { recursive: true, force: true });
  return records;
}

/** The default environment: the backend's own root, no layer. */
export function defaultEnvironment(backend: string, runtime: string): Environment {
  return { name: DEFAULT_ENVIRONMENT_NAME, hash: runtime, backend, backendRef: undefined, warmImports: [], env: {} };
}

/** A name → the Environment a backend starts sandboxes on. */
export async function resolveEnvironment(name: string, options: ResolveEnvironmentOptions): Promise<Environment> {
  const store = options.storeDirectory ?? defaultEnvironmentStore();
  if (name === DEFAULT_ENVIRONMENT_NAME) {
    return defaultEnvironment(options.backend, runtimeVersion());
  }
  if (!ENVIRONMENT_NAME_PATTERN.test(name)) {
    throw new EnvironmentNotFoundError(
      `${JSON.stringify(name.slice(0, 80))} is not an environment name (lower-case letters, digits and -, starting with a letter).`,
    );
  }
  const hash = await currentHash(store, name);
  const record = hash ? await readRecord(store, name, hash) : undefined;
  if (!record) {
    throw new EnvironmentNotFoundError(
      `There is no environment named ${name}. Build it with \`sandcell env build FILE --backend ${options.backend}\` (see \`sandcell env list\`).`,
    );
  }
  const build = record.builds[options.backend];
  if (!build && record.image) {
    throw new EnvironmentNotFoundError(
      `The environment ${name} is the Docker image ${record.image.source}; it runs on the docker backend only (--backend docker).`,
    );
  }
  if (!build) {
    const built = Object.keys(record.builds).join(', ') || 'no backend';
    throw new EnvironmentNotFoundError(
      `The environment ${name} is built for ${built}, not ${options.backend}. Build it with \`sandcell env build FILE --backend ${options.backend}\`.`,
    );
  }
  return {
    name,
    hash: record.hash,
    backend: options.backend,
    backendRef: build.backendRef,
    warmImports: [...record.description.warmImports],
    env: { ...record.description.env },
    ...(record.description.isolation ? { isolation: record.description.isolation } : {}),
    ...(record.image
      ? {
          rootOptions: {
            mountedKernel: { python: record.image.python, matplotlibInline: record.image.matplotlibInline },
          },
        }
      : {}),
  };
}
