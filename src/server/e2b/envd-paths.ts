/**
 * envd's paths and the session's files. E2B sandboxes work in /home/user,
 * which here is the same storage as /mnt/data (both backends bind the session's
 * files at both, and at /workspace, the OpenAI Agents SDK's workspace root), so
 * `/home/user/…`, `/mnt/data/…`, `/workspace/…`, `~/…` and relative paths
 * (relative to /home/user, as envd resolves them) all name the session's files
 * and go through the session's file requests. Any other absolute path is
 * refused with a 400: the rest of the sandbox is its read-only system, which
 * code and commands can read but the file API does not serve.
 */
import { WORKSPACE_MOUNT } from '../../backends/sandbox-environment.js';
import { InvalidPathError } from '../../errors.js';
import { DATA_MOUNT, normalizeDataPath } from '../../internal/data-path.js';

export const HOME = '/home/user';

/** The names the session's files have in the sandbox, other than HOME. */
const OTHER_ROOTS = [DATA_MOUNT, WORKSPACE_MOUNT] as const;

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
        `${JSON.stringify(path)} is outside ${HOME}: this server's file API reaches ${HOME} (the same files as ${OTHER_ROOTS.join(' and ')}) only. Read other files with commands.run('cat …').`,
      );
    }
    root = other;
    below = path.slice(other.length);
  } else below = path;
  return { root, relative: normalizeDataPath(below.replace(/^\/+/, ''), options) };
}

/** The absolute path the client sees for a file below `root`. */
export function sandboxPathOf(root: SandboxPath['root'], relative: string): string {
  return relative === '' ? root : `${root}/${relative}`;
}

/** A shell word for `path` (single-quoted), for the commands that move and make directories. */
export function shellQuote(path: string): string {
  return `'${path.replaceAll("'", `'\\''`)}'`;
}
