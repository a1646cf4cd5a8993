/**
 * A session's /mnt/data on the host. As root it is its own tmpfs, capped at
 * `dataBytes`, owned by the session's leased host uid and mounted
 * nosuid,nodev, sized within the server-wide data budget, with the session's
 * memory budget (a cgroup) beside it; the volume holds the uid lease for the
 * session's life, so every kernel of the session runs as the same uid, and
 * releases it with the storage. Without root it is a plain directory, capped per file by
 * RLIMIT_FSIZE only (doctor says so). Either way it outlives kernel restarts
 * and goes with dispose(). gVisor's sessions use it too (createSessionVolume).
 */
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { chown, mkdir, rm, rmdir } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { SandboxStartError } from '../../errors.js';
import { sweepDeadOwnersEntries } from '../../internal/process-alive.js';
import { type DataBudget, type DataLease, sharedDataBudget } from '../data-budget.js';
import { dataCapacityBytes } from '../limits.js';
import type { CreateVolumeOptions, SandboxVolume } from '../spec.js';
import { resizeTmpfs, tmpfsUsedBytes } from '../tmpfs.js';
import type { UidLease, UidLeases } from '../uid-leases.js';
import { type CgroupLayout, SessionCgroup } from './cgroup.js';

const execFileAsync = promisify(execFile);

export class BubblewrapVolume implements SandboxVolume {
  private disposed?: Promise<void>;

  private constructor(
    readonly sessionId: string,
    readonly directory: string,
    private readonly mounted: boolean,
    /** The host uid the session's sandboxes run as (as root); released with the volume. */
    readonly owner?: UidLease,
    /** The session's memory budget, shared by its kernels and these files. */
    readonly memoryBudget?: SessionCgroup,
    private readonly lease?: DataLease,
  ) {}

  static async create(options: {
    sessionsDirectory: string;
    sessionId: string;
    dataBytes: number;
    owner?: UidLease;
    memoryBudget?: SessionCgroup;
    /** The server-wide budget for files, which only a tmpfs (as root) can be held to. */
    dataBudget?: DataBudget;
  }): Promise<BubblewrapVolume> {
    // Unique per volume: a session resumed under its id may start while the paused one's teardown runs.
    const directory = path.join(
      options.sessionsDirectory,
      `${process.pid}-${options.sessionId}-${randomUUID().slice(0, 8)}`,
    );
    if (!options.owner) {
      await mkdir(directory, { mode: 0o700 });
      return new BubblewrapVolume(options.sessionId, directory, false, undefined, options.memoryBudget);
    }
    const lease = await options.dataBudget?.lease(options.dataBytes);
    const { uid, gid } = options.owner;
    try {
      await mkdir(directory, { mode: 0o700 });
      try {
        await execFileAsync('mount', [
          '-t',
          'tmpfs',
          '-o',
          `size=${Math.floor(lease?.sizeBytes ?? options.dataBytes)},mode=0700,uid=${uid},gid=${gid},nosuid,nodev`,
          'sandcell-data',
          directory,
        ]);
      } catch (error) {
        await rmdir(directory).catch(() => undefined);
        throw new SandboxStartError(`Could not mount the session's data tmpfs at ${directory}: ${String(error)}`, {
          cause: error,
        });
      }
    } catch (error) {
      await lease?.release();
      throw error;
    }
    lease?.attach({ usedBytes: () => tmpfsUsedBytes(directory), resize: (bytes) => resizeTmpfs(directory, bytes) });
    await chown(directory, uid, gid);
    return new BubblewrapVolume(options.sessionId, directory, true, options.owner, options.memoryBudget, lease);
  }

  async usedBytes(): Promise<number | undefined> {
    return this.mounted ? tmpfsUsedBytes(this.directory).catch(() => undefined) : undefined;
  }

  usageChanged(): Promise<void> {
    return this.lease?.usageChanged() ?? Promise.resolve();
  }

  dispose(): Promise<void> {
    this.disposed ??= (async () => {
      this.lease?.detach();
      await removeVolumeDirectory(this.directory, this.mounted);
      await this.memoryBudget?.remove();
      await this.lease?.release();
      await this.owner?.release();
    })();
    return this.disposed;
  }
}

async function removeVolumeDirectory(directory: string, mounted: boolean): Promise<void> {
  if (mounted) {
    try {
      await execFileAsync('umount', [directory]);
    } catch {
      // Busy (a process still holds it): detach now, the kernel frees it when released.
      await execFileAsync('umount', ['--lazy', directory]).catch(() => undefined);
    }
  }
  // rm never follows symlinks the sandbox planted; it unlinks them.
  await rm(directory, { recursive: true, force: true });
}

/** Removes volumes whose owning sandcell process is gone. */
export function sweepStaleVolumes(sessionsDirectory: string, mounted: boolean): Promise<void> {
  return sweepDeadOwnersEntries(sessionsDirectory, /^(\d+)-/, (directory) => removeVolumeDirectory(directory, mounted));
}

/**
 * A session's volume with what it holds for the session's life: its host uid (leased, as root) and its memory
 * budget (a session cgroup, where there are cgroups). Bubblewrap's and gVisor's sessions are made alike.
 */
export async function createSessionVolume(
  host: { uidLeases?: UidLeases; cgroups?: CgroupLayout; sessionsDirectory: string },
  options: CreateVolumeOptions,
  label: string,
): Promise<BubblewrapVolume> {
  const owner = await host.uidLeases?.acquire(`${label} session ${options.sessionId}`);
  // The session's memory budget: every kernel it starts, and its files, stay within memoryBytes together.
  const memoryBudget = host.cgroups
    ? await SessionCgroup.create(
        host.cgroups,
        `sandcell-${process.pid}-${options.sessionId.slice(0, 16)}-${randomUUID().slice(0, 6)}`,
        options.limits.memoryBytes,
      ).catch(async (error) => {
        await owner?.release();
        throw error;
      })
    : undefined;
  try {
    return await BubblewrapVolume.create({
      sessionsDirectory: host.sessionsDirectory,
      sessionId: options.sessionId,
      dataBytes: dataCapacityBytes(options.limits),
      owner,
      memoryBudget,
      dataBudget: sharedDataBudget(),
    });
  } catch (error) {
    await memoryBudget?.remove();
    await owner?.release();
    throw error;
  }
}
