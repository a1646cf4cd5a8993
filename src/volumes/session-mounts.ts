/**
 * The volumes one session mounts, made ready on the host for its sandboxes: each named volume looked
 * up among its owner's (another owner's is not found), and its directory (or sub-path) turned into a
 * host directory the backend binds in. As root that is an idmapped mount staged per session under
 * /run/sandcell-mounts (sandcell_mounter.py), showing the files as the session's leased uid; without
 * root, the volume's directory itself, its sub-path resolved and checked to stay inside. The volumes
 * are held as in use until the session closes.
 */
import { mkdir, readdir, realpath, rmdir, stat } from 'node:fs/promises';
import path from 'node:path';
import type { SandboxMount } from '../backends/spec.js';
import { FileOperationError } from '../errors.js';
import { isProcessAlive } from '../internal/process-alive.js';
import { VolumeMounter } from './volume-mounter.js';
import type { VolumeMountRequest } from './volume-paths.js';
import type { VolumeHold, VolumeStore } from './volume-store.js';

/** Where staged mounts live while their session does: machine-wide, root's, searchable by the sandboxes' uids. */
export const STAGED_MOUNTS_DIRECTORY = '/run/sandcell-mounts';

/** A volume as a session mounted it: what a snapshot records, and a resume mounts again. */
export interface MountedVolume {
  volumeId: string;
  volume: string;
  path: string;
  readOnly: boolean;
  subPath?: string;
}

let sharedMounter: VolumeMounter | undefined;
let swept = false;

export class SessionMounts {
  private closed?: Promise<void>;

  private constructor(
    /** What the backend binds in. */
    readonly mounts: SandboxMount[],
    readonly volumes: MountedVolume[],
    private readonly staged: string[],
    private readonly stagingRoot: string | undefined,
    private readonly holds: VolumeHold[],
  ) {}

  static none(): SessionMounts {
    return new SessionMounts([], [], [], undefined, []);
  }

  static async open(input: {
    store: VolumeStore;
    owner: string;
    sessionId: string;
    requests: VolumeMountRequest[];
    /** The session's host uid and gid (as root, leased), which the files show as. */
    sandboxOwner?: { uid: number; gid: number };
  }): Promise<SessionMounts> {
    if (input.requests.length === 0) return SessionMounts.none();
    const fileOwner = input.store.fileOwner;
    const staging = fileOwner !== undefined;
    if (staging && !sharedMounter) sharedMounter = new VolumeMounter();
    const mounter = staging ? sharedMounter : undefined;
    if (mounter && !swept) {
      swept = true;
      await sweepStaleMounts(mounter);
    }
    const stagingRoot = staging
      ? path.join(
          STAGED_MOUNTS_DIRECTORY,
          `${process.pid}-${input.sessionId}-${Math.random().toString(36).slice(2, 8)}`,
        )
      : undefined;
    const mounts: SandboxMount[] = [];
    const volumes: MountedVolume[] = [];
    const staged: string[] = [];
    const holds: VolumeHold[] = [];
    const opened = new SessionMounts(mounts, volumes, staged, stagingRoot, holds);
    try {
      if (stagingRoot) {
        await mkdir(STAGED_MOUNTS_DIRECTORY, { recursive: true, mode: 0o755 });
        await mkdir(stagingRoot, { mode: 0o755 });
      }
      for (const [index, request] of input.requests.entries()) {
        const record = await input.store.get(input.owner, request.volume);
        const { directory } = await input.store.location(input.owner, record);
        const readOnly = request.readOnly === true;
        let source: string;
        if (mounter && stagingRoot && fileOwner) {
          source = path.join(stagingRoot, String(index));
          await mkdir(source, { mode: 0o755 });
          staged.push(source);
          await mounter.stage({
            source: directory,
            subPath: request.subPath ?? '',
            target: source,
            readOnly,
            ...(input.sandboxOwner ? { owner: input.sandboxOwner } : {}),
            fileOwner,
          });
        } else {
          source = await directoryInside(directory, request.subPath ?? '');
        }
        holds.push(input.store.hold(record.id, input.sessionId));
        mounts.push({ source, target: request.path, readOnly });
        volumes.push({
          volumeId: record.id,
          volume: record.name,
          path: request.path,
          readOnly,
          ...(request.subPath ? { subPath: request.subPath } : {}),
        });
      }
      return opened;
    } catch (error) {
      await opened.close();
      throw error;
    }
  }

  /** The session is on its way out: a delete of its volumes waits for `done` rather than refusing. */
  leaving(done: Promise<void>): void {
    for (const hold of this.holds) hold.leave(done);
  }

  /** Unmounts what was staged and lets the volumes go. Idempotent. */
  close(): Promise<void> {
    this.closed ??= (async () => {
      for (const hold of this.holds) hold.release();
      for (const target of this.staged) {
        await sharedMounter?.unstage(target).catch(() => undefined);
        // rmdir, never rm -r: should the unmount have failed, the volume's files are below.
        await rmdir(target).catch(() => undefined);
      }
      if (this.stagingRoot) await rmdir(this.stagingRoot).catch(() => undefined);
    })();
    return this.closed;
  }
}

/** The directory `subPath` names inside `top`, resolved, refused if it leads out (a symlink) or is not one. */
async function directoryInside(top: string, subPath: string): Promise<string> {
  if (subPath === '') return top;
  const resolved = await realpath(path.join(top, subPath)).catch(() => {
    throw new FileOperationError('not-found', `Cannot mount the volume: ${subPath} is not in it.`);
  });
  const realTop = await realpath(top);
  if (resolved !== realTop && !resolved.startsWith(`${realTop}/`)) {
    throw new FileOperationError('symlink', `Cannot mount the volume: ${subPath} leads out of it (a symlink).`);
  }
  if (!(await stat(resolved)).isDirectory()) {
    throw new FileOperationError('not-a-directory', `Cannot mount the volume: ${subPath} is not a directory of it.`);
  }
  return resolved;
}

/** Staged mounts a dead sandcell process left: unmounted, their directories removed (never what is below). */
async function sweepStaleMounts(mounter: VolumeMounter): Promise<void> {
  const entries = await readdir(STAGED_MOUNTS_DIRECTORY).catch(() => [] as string[]);
  for (const entry of entries) {
    const pid = Number(/^(\d+)-/.exec(entry)?.[1]);
    if (!pid || isProcessAlive(pid)) continue;
    const root = path.join(STAGED_MOUNTS_DIRECTORY, entry);
    for (const child of await readdir(root).catch(() => [] as string[])) {
      await mounter.unstage(path.join(root, child)).catch(() => undefined);
      await rmdir(path.join(root, child)).catch(() => undefined);
    }
    await rmdir(root).catch(() => undefined);
  }
}
