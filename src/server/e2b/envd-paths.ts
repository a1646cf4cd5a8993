/**
 * envd's paths and the session's files. E2B sandboxes work in /home/user,
 * which here is the same storage as /mnt/data (both backends bind the session's
 * files at both, and at /workspace, the OpenAI Agents SDK's workspace root), so
 * `/home/user/…`, `/mnt/data/…`, `/workspace/…`, `~/…` and relative paths
 * (relative to /home/user, as envd resolves them) all name the session's files
 * and go through the session's file requests. `/tmp/…` is the sandbox's
 * scratch directory, which those requests reach too (E2B code writes scripts
 * and archives there, then runs them). Any other absolute path is refused
 * with a 400: the rest of the sandbox is its read-only system, which code and
 * commands can read but the file API does not serve.
 */
import { WORKSPACE_MOUNT } from '../../backends/sandbox-environment.js';
import { InvalidPathError } from '../../errors.js';
import { DATA_MOUNT, normalizeDataPath, SCRATCH_MOUNT } from '../../internal/data-path.js';
import type { FileEntry } from '../../session/files.js';

export const HOME = '/home/user';

/** The names the session's files have in the sandbox, other than HOME, and its scratch directory. */
const OTHER_ROOTS = [DATA_MOUNT, WORKSPACE_MOUNT, SCRATCH_MOUNT] as const;

/** A path as the client named it: which root it used, and the path below it. */
export interface SandboxPath {
  root: typeof HOME | (typeof OTHER_ROOTS)[number];
  /** Relative to /mnt/data ('' is the directory itself). */
  relative: string;
}

export function resolveSandboxPath(path: string | undefined, options: { allowRoot?: boolean } = {}): SandboxPath {
  if (path === undefined || path === '') {
    if (options.allowRoot) return { root: HOME, relative: '' };
    throw new InvalidPathError('A path is required.');
  }
  let root: SandboxPath['root'] = HOME;
  let below: string;
  if (path === '~' || path.startsWith('~/')) below = path.slice(1);
  else if (path === HOME || path.startsWith(`${HOME}/`)) below = path.slice(HOME.length);
  else if (path.startsWith('/')) {
    const other = OTHER_ROOTS.find((name) => path === name || path.startsWith(`${name}/`));
    if (other === undefined) {
      throw new InvalidPathError(
        `${JSON.stringify(path)} is outside ${HOME}: this server's file API reaches ${HOME} (the same files as ${DATA_MOUNT} and ${WORKSPACE_MOUNT}) and ${SCRATCH_MOUNT} only. Read other files with commands.run('cat …').`,
      );
    }
    root = other;
    below = path.slice(other.length);
  } else below = path;
  return { root, relative: normalizeDataPath(below.replace(/^\/+/, ''), options) };
}

/** The path the session's file requests take for `path`: relative under /mnt/data, or under /tmp. */
export function requestPath(path: SandboxPath): string {
  if (path.root !== SCRATCH_MOUNT) return path.relative;
  return path.relative === '' ? SCRATCH_MOUNT : `${SCRATCH_MOUNT}/${path.relative}`;
}

/** Where `path` is in the sandbox, for a command run there. */
export function absolutePath(path: SandboxPath): string {
  return sandboxPathOf(path.root === SCRATCH_MOUNT ? SCRATCH_MOUNT : DATA_MOUNT, path.relative);
}

/** An entry of the session's list, named below its root as `path`'s are (a /tmp entry comes back absolute). */
export function entryBelowRoot(path: SandboxPath, entry: FileEntry): FileEntry {
  if (path.root !== SCRATCH_MOUNT) return entry;
  return { ...entry, path: entry.path === SCRATCH_MOUNT ? '' : entry.path.slice(SCRATCH_MOUNT.length + 1) };
}

/** The session's list of the directory `path` names, with entries named below its root. */
export async function listBelowRoot(
  files: { list(path: string, options?: { recursive?: boolean }): Promise<FileEntry[]> },
  path: SandboxPath,
  options: { recursive?: boolean } = {},
): Promise<FileEntry[]> {
  const entries = await files.list(requestPath(path), options);
  return entries.map((entry) => entryBelowRoot(path, entry));
}

/** The absolute path the client sees for a file below `root`. */
export function sandboxPathOf(root: SandboxPath['root'], relative: string): string {
  return relative === '' ? root : `${root}/${relative}`;
}

/** A shell word for `path` (single-quoted), for the commands that move and make directories. */
export function shellQuote(path: string): string {
  return `'${path.replaceAll("'", `'\\''`)}'`;
}
