/**
 * What the bubblewrap backend prepares on the host once per process: the
 * runtime directory (synthetic /etc files, a copy of the kernel files, the
 * sessions' volumes) and the seccomp filter.
 */
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { access, chmod, mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { BackendUnavailableError } from '../../errors.js';
import { kernelDirectory, SECCOMP_LOADER, SECCOMP_SCRIPT } from '../../kernel/index.js';
import { kernelFiles, SANDBOX_GID, SANDBOX_HOSTNAME, SANDBOX_UID } from '../sandbox-environment.js';

const execFileAsync = promisify(execFile);

export function isRoot(): boolean {
  return typeof process.getuid === 'function' && process.getuid() === 0;
}

export function defaultRuntimeDirectory(): string {
  if (process.env.SANDCELL_RUNTIME_DIR) return process.env.SANDCELL_RUNTIME_DIR;
  if (isRoot()) return '/run/sandcell';
  if (process.env.XDG_RUNTIME_DIR) return path.join(process.env.XDG_RUNTIME_DIR, 'sandcell');
  return path.join(os.tmpdir(), `sandcell-${process.getuid?.() ?? 'user'}`);
}

export function defaultCacheDirectory(): string {
  if (process.env.SANDCELL_CACHE_DIR) return process.env.SANDCELL_CACHE_DIR;
  const base = process.env.XDG_CACHE_HOME ?? path.join(os.homedir(), '.cache');
  return path.join(base, 'sandcell');
}

/** Finds an executable on PATH. */
export function which(command: string): string | undefined {
  if (command.includes('/')) return existsSync(command) ? command : undefined;
  for (const directory of (process.env.PATH ?? '/usr/bin:/bin').split(':')) {
    const candidate = path.join(directory, command);
    if (directory && existsSync(candidate)) return candidate;
  }
  return undefined;
}

/**
 * The sandbox's /etc files. Its user is `sandbox`, uid 1000 in bubblewrap's user namespace; a backend
 * whose sandboxes run as the session's host uid itself (gVisor) names that uid `sandbox` instead.
 */
export function syntheticEtcFiles(uid = SANDBOX_UID, gid = SANDBOX_GID): Record<string, string> {
  return {
    passwd: [
      'root:x:0:0:root:/root:/usr/sbin/nologin',
      `sandbox:x:${uid}:${gid}:sandbox:/tmp:/bin/sh`,
      'nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin',
      '',
    ].join('\n'),
    group: ['root:x:0:', `sandbox:x:${gid}:`, 'nogroup:x:65534:', ''].join('\n'),
    hostname: `${SANDBOX_HOSTNAME}\n`,
    hosts: `127.0.0.1\tlocalhost ${SANDBOX_HOSTNAME}\n::1\tlocalhost ip6-localhost\n`,
    'nsswitch.conf': 'passwd: files\ngroup: files\nhosts: files\n',
    'resolv.conf': '# no network in the sandbox\n',
  };
}

/** Writes a file atomically, so concurrent sandcell processes never see half of it. */
async function writeAtomically(file: string, content: string | Buffer, mode: number): Promise<void> {
  const temporary = `${file}.${process.pid}.${Math.random().toString(36).slice(2)}`;
  await writeFile(temporary, content, { mode });
  await chmod(temporary, mode);
  await rename(temporary, file);
}

export interface RuntimeLayout {
  root: string;
  etcDirectory: string;
  kernelDirectory: string;
  sessionsDirectory: string;
}

/** Creates the runtime directory: searchable by the sandboxes' uids (bwrap binds the volumes under it), writable only by us. */
export async function prepareRuntime(root: string): Promise<RuntimeLayout> {
  const layout: RuntimeLayout = {
    root,
    etcDirectory: path.join(root, 'etc'),
    kernelDirectory: path.join(root, 'kernel'),
    sessionsDirectory: path.join(root, 'sessions'),
  };
  for (const directory of [root, layout.etcDirectory, layout.kernelDirectory, layout.sessionsDirectory]) {
    await mkdir(directory, { recursive: true, mode: 0o755 });
    await chmod(directory, 0o755);
  }
  for (const [name, content] of Object.entries(syntheticEtcFiles())) {
    await writeAtomically(path.join(layout.etcDirectory, name), content, 0o644);
  }
  // The loader too: a session template (zygote.ts) loads each session's filter with it.
  for (const name of [...kernelFiles(), SECCOMP_LOADER]) {
    const content = await readFile(path.join(kernelDirectory, name));
    await writeAtomically(path.join(layout.kernelDirectory, name), content, 0o644);
  }
  return layout;
}

/**
 * Returns the path of the compiled seccomp filter, generating it (with
 * python3-seccomp) when missing or when the generator changed.
 */
export async function ensureSeccompFilter(cacheDirectory: string, python = '/usr/bin/python3'): Promise<string> {
  const script = await readFile(SECCOMP_SCRIPT);
  const digest = createHash('sha256').update(script).update(os.arch()).digest('hex').slice(0, 16);
  const target = path.join(cacheDirectory, `seccomp-${digest}.bpf`);
  try {
    await access(target);
    return target;
  } catch {
    // generate below
  }
  await mkdir(cacheDirectory, { recursive: true });
  const temporary = `${target}.${process.pid}.tmp`;
  try {
    await execFileAsync(python, ['-I', SECCOMP_SCRIPT, temporary], { timeout: 30_000 });
  } catch (error) {
    const detail = (error as { stderr?: string }).stderr?.trim().split('\n').pop() ?? String(error);
    throw new BackendUnavailableError(
      `Could not generate the seccomp filter (${detail}). Install python3-seccomp: \`apt-get install python3-seccomp\`, or run \`npm run setup\`.`,
      { cause: error },
    );
  }
  await rename(temporary, target);
  return target;
}
