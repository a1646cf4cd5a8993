/**
 * How an environment shares the runtime's files instead of copying 1.9 GB of them. The layer runs on
 * an overlay mount whose lower layer is the runtime's root filesystem, read-only by construction:
 * every change the layer makes, an append or a chmod included, is copied up into the upper directory
 * first, so nothing can write to the runtime's files. Then the environment is the runtime's tree as
 * hard links (`cp -al`: new directories, the same files) with the upper directory applied on top:
 * its whiteouts remove, its files are moved in (replacing the link, never writing through it), its
 * directories' attributes are set on the tree's own directories. A small layer costs its own size.
 *
 * The overlay lives in a mount namespace of the build's own (`unshare --mount`), so a build that dies
 * leaves no mount behind. Where the kernel or the store's filesystem cannot do it, the build says
 * so and copies the runtime as before.
 */
import { spawn } from 'node:child_process';
import { chmod, chown, lstat, mkdir, readdir, rename, rm, utimes } from 'node:fs/promises';
import path from 'node:path';
import { runProcess } from '../image/rootfs.js';

/** What the layer's overlay is made of: all on the store's filesystem beside the build. */
export interface LayerOverlay {
  /** The runtime's root filesystem, never written. */
  lower: string;
  /** Every change the layer makes: the environment's own files. */
  upper: string;
  work: string;
  /** Where the overlay is mounted for the layer to run in. */
  merged: string;
}

/**
 * Whole copies of files on copy-up (`metacopy=off`), renamed directories copied rather than
 * redirected (`redirect_dir=off`, so the upper directory means what it holds), no inode index.
 */
const MOUNT_OPTIONS = 'redirect_dir=off,metacopy=off,index=off,xino=off';

/** Mounts the overlay in a new mount namespace, then runs the rest of the arguments in it. */
const MOUNT_THEN_RUN =
  'mount -t overlay overlay -o "lowerdir=$1,upperdir=$2,workdir=$3,$5" "$4" || exit 125; shift 5; exec "$@"';

/** The command that runs `command args` with the overlay mounted at `overlay.merged`. */
export function inOverlay(overlay: LayerOverlay, command: string, args: string[]): { command: string; args: string[] } {
  return {
    command: 'unshare',
    args: [
      '--mount',
      '--propagation',
      'private',
      '--',
      '/bin/sh',
      '-c',
      MOUNT_THEN_RUN,
      'sh',
      overlay.lower,
      overlay.upper,
      overlay.work,
      overlay.merged,
      MOUNT_OPTIONS,
      command,
      ...args,
    ],
  };
}

/**
 * Makes the overlay's directories and mounts it once, to see that this kernel and this filesystem can;
 * the reason it cannot otherwise (the build then copies the runtime).
 */
export async function prepareOverlay(overlay: LayerOverlay): Promise<string | undefined> {
  // The mount's option string is comma- and colon-separated: such a path cannot be said in it.
  const unsafe = [overlay.lower, overlay.upper, overlay.work].find((directory) => /[,:\\]/.test(directory));
  if (unsafe) return `${unsafe} has a character an overlay mount cannot name`;
  for (const directory of [overlay.upper, overlay.work, overlay.merged]) {
    await mkdir(directory, { recursive: true, mode: 0o755 });
  }
  const probe = inOverlay(overlay, 'true', []);
  let said = '';
  return runProcess(probe.command, probe.args, undefined, {}, (line) => {
    said = line;
  }).then(
    () => undefined,
    (error: unknown) => said || (error as Error).message,
  );
}

/** The runtime's tree as hard links at `target`; false when they cannot be made (another filesystem). */
export async function linkTree(source: string, target: string): Promise<boolean> {
  return runProcess('cp', ['-al', source, target], undefined, {}, () => undefined).then(
    () => true,
    async () => {
      await rm(target, { recursive: true, force: true });
      return false;
    },
  );
}

/** Applies the layer's upper directory to `target` (the runtime's tree, linked), moving its files in. */
export async function applyUpper(upper: string, target: string): Promise<void> {
  const opaque = await opaqueDirectories(upper);
  await applyDirectory(upper, target, '', opaque);
}

async function applyDirectory(upper: string, target: string, relative: string, opaque: Set<string>): Promise<void> {
  for (const name of await readdir(upper)) {
    const from = path.join(upper, name);
    const to = path.join(target, name);
    const info = await lstat(from);
    // A whiteout: the layer removed what the runtime has there.
    if (info.isCharacterDevice() && info.rdev === 0) {
      await rm(to, { recursive: true, force: true });
      continue;
    }
    if (!info.isDirectory()) {
      // Replaces the link (or whatever is there); the runtime's file keeps its own name and bytes.
      await rm(to, { recursive: true, force: true });
      await rename(from, to);
      continue;
    }
    const entry = path.posix.join(relative, name);
    const existing = await lstat(to).catch(() => undefined);
    // An opaque directory was removed and made again: none of the runtime's contents show through.
    if (existing && (!existing.isDirectory() || opaque.has(entry))) await rm(to, { recursive: true, force: true });
    if (!existing?.isDirectory() || opaque.has(entry)) await mkdir(to);
    await applyDirectory(from, to, entry, opaque);
    // The tree's directories are its own (cp -al makes new ones), so their attributes may be set.
    await chown(to, info.uid, info.gid);
    await chmod(to, info.mode & 0o7777);
    await utimes(to, info.atime, info.mtime);
  }
}

/** Directories of the upper layer marked opaque (`trusted.overlay.opaque` = y), relative to it. */
async function opaqueDirectories(upper: string): Promise<Set<string>> {
  // Node has no call for extended attributes; the host's Python (every sandbox's) has.
  const program = [
    'import os, sys',
    'root = sys.argv[1]',
    'for directory, _, _ in os.walk(root):',
    '    try:',
    '        value = os.getxattr(directory, "trusted.overlay.opaque", follow_symlinks=False)',
    '    except OSError:',
    '        continue',
    '    if value == b"y" and directory != root:',
    '        sys.stdout.write(os.path.relpath(directory, root) + "\\0")',
  ].join('\n');
  const output = await new Promise<string>((resolve, reject) => {
    const child = spawn('python3', ['-c', program, upper], { stdio: ['ignore', 'pipe', 'pipe'] });
    let text = '';
    let error = '';
    child.stdout.on('data', (chunk: Buffer) => {
      text += chunk.toString();
    });
    child.stderr.on('data', (chunk: Buffer) => {
      error += chunk.toString();
    });
    child.once('error', reject);
    child.once('close', (code) =>
      code === 0 ? resolve(text) : reject(new Error(`listing the layer's opaque directories failed: ${error}`)),
    );
  });
  return new Set(output.split('\0').filter((entry) => entry !== ''));
}
