/**
 * envd's `filesystem.Filesystem` service, unary methods with the JSON codec:
 * ListDir, Stat, MakeDir, Remove, Move. Reads go through the session's file
 * requests; making directories and moving run `mkdir`/`mv` inside the
 * sandbox, as the sandbox's user, so the host never touches a path the code
 * could have planted.
 */
import { z } from 'zod';
import { FileOperationError } from '../../errors.js';
import { DATA_MOUNT } from '../../internal/data-path.js';
import type { FileEntry } from '../../session/files.js';
import type { ServerContext } from '../core/context.js';
import { entryInfo, rootEntry } from './entry-info.js';
import {
  absolutePath,
  listBelowRoot,
  requestPath,
  resolveSandboxPath,
  type SandboxPath,
  shellQuote,
} from './envd-paths.js';
import { ConnectError, parseConnectMessage as parse } from './errors.js';
import type { E2bSandbox } from './sandbox-row.js';

const MAX_DEPTH = 32;
/** mkdir and mv are quick; a sandbox too busy to run them within this is answered with an error. */
const FILE_COMMAND_TIMEOUT_MS = 30_000;

const PathRequest = z.looseObject({ path: z.string().max(4096).optional() });
const ListRequest = z.looseObject({
  path: z.string().max(4096).optional(),
  depth: z.number().int().min(0).max(MAX_DEPTH).optional(),
});
const MoveRequest = z.looseObject({ source: z.string().max(4096), destination: z.string().max(4096) });

/** The entry at `path`, or undefined when there is none. */
async function find(sandbox: E2bSandbox, path: SandboxPath): Promise<FileEntry | undefined> {
  if (path.relative === '') return { path: '', type: 'directory', size: 0, modifiedMs: Date.now() };
  const parent = path.relative.includes('/') ? path.relative.slice(0, path.relative.lastIndexOf('/')) : '';
  try {
    const entries = await listBelowRoot(sandbox.entry.session.files, { root: path.root, relative: parent });
    return entries.find((entry) => entry.path === path.relative);
  } catch (error) {
    if (error instanceof FileOperationError && (error.reason === 'not-found' || error.reason === 'not-a-directory')) {
      return undefined;
    }
    throw error;
  }
}

async function stat(sandbox: E2bSandbox, path: SandboxPath) {
  const entry = await find(sandbox, path);
  if (!entry) throw new ConnectError('not_found', `No such file or directory: ${path.root}/${path.relative}`);
  return path.relative === '' ? rootEntry(path.root) : entryInfo(path.root, entry);
}

/** Runs a file command in the sandbox; a failure answers with its own message. */
async function runFileCommand(sandbox: E2bSandbox, server: ServerContext, command: string): Promise<void> {
  const result = await server.registry.commands.run(sandbox.entry, command, {
    cwd: DATA_MOUNT,
    timeoutMs: FILE_COMMAND_TIMEOUT_MS,
  });
  if (result.exitCode !== 0) {
    const message = result.stderr.trim().split('\n').at(-1) ?? 'failed';
    throw new ConnectError(/No such file/.test(message) ? 'not_found' : 'invalid_argument', message);
  }
}

export type UnaryMethod = (sandbox: E2bSandbox, server: ServerContext, message: unknown) => Promise<unknown>;

export const filesystemMethods: Record<string, UnaryMethod> = {
  async ListDir(sandbox, _server, message) {
    const request = parse(ListRequest, message);
    const path = resolveSandboxPath(request.path, { allowRoot: true });
    const depth = Math.max(1, request.depth ?? 1);
    const directory = await find(sandbox, path);
    if (!directory) throw new ConnectError('not_found', `No such directory: ${request.path}`);
    if (directory.type !== 'directory')
      throw new ConnectError('invalid_argument', `${request.path} is not a directory.`);
    const entries = await listBelowRoot(sandbox.entry.session.files, path, { recursive: depth > 1 });
    const baseDepth = path.relative === '' ? 0 : path.relative.split('/').length;
    return {
      entries: entries
        .filter((entry) => entry.path.split('/').length - baseDepth <= depth)
        .map((entry) => entryInfo(path.root, entry)),
    };
  },

  async Stat(sandbox, _server, message) {
    const path = resolveSandboxPath(parse(PathRequest, message).path, { allowRoot: true });
    return { entry: await stat(sandbox, path) };
  },

  async MakeDir(sandbox, server, message) {
    // A root (/home/user, /workspace, /tmp) is there already: the SDKs' make_dir answers false for it.
    const path = resolveSandboxPath(parse(PathRequest, message).path, { allowRoot: true });
    if (await find(sandbox, path))
      throw new ConnectError('already_exists', `${path.root}/${path.relative} already exists.`);
    await runFileCommand(sandbox, server, `mkdir -p -- ${shellQuote(absolutePath(path))}`);
    return { entry: await stat(sandbox, path) };
  },

  async Remove(sandbox, server, message) {
    const path = resolveSandboxPath(parse(PathRequest, message).path);
    server.registry.admitUpload(sandbox.entry);
    await sandbox.entry.session.files.remove(requestPath(path));
    return {};
  },

  async Move(sandbox, server, message) {
    const request = parse(MoveRequest, message);
    const source = resolveSandboxPath(request.source);
    const destination = resolveSandboxPath(request.destination);
    if (!(await find(sandbox, source)))
      throw new ConnectError('not_found', `No such file or directory: ${request.source}`);
    await runFileCommand(
      sandbox,
      server,
      `mv -T -- ${shellQuote(absolutePath(source))} ${shellQuote(absolutePath(destination))}`,
    );
    return { entry: await stat(sandbox, destination) };
  },
};
