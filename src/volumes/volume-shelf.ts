/**
 * Where one owner's volumes keep their files on this host, and the bound on them.
 *
 * As root (and where loop devices work), an owner's volumes share one ext4 filesystem in a sparse
 * image of the owner's quota, mounted nosuid,nodev with discard (what is deleted goes back to the
 * host's disk): a sandbox writing past the quota meets a full disk (ENOSPC), however many write at
 * once, and its files are disk, not memory. Each volume is a directory at the filesystem's top,
 * `files/<id>`; `.trash` beside them takes what is being deleted, out of every sandbox's reach.
 * Without root (or loop devices) the volumes are plain directories, and the quota is measured:
 * the content API is held to it, and a sandbox's writes are counted after they are made (doctor
 * and the docs say so).
 */
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { chown, mkdir, open, readFile, rename, rm, stat, statfs, truncate, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { readMountInfo } from '../internal/mount-info.js';

const execFileAsync = promisify(execFile);

const TRASH = '.trash';
/** Beside the image: what its filesystem takes for itself (filesystemOwnBytes). */
const OWN_BYTES_FILE = 'image.own';
/** ext4's own journal: small, as the filesystem holds one owner's files. */
const JOURNAL_MIB = 4;

export interface ShelfOptions {
  /** The owner's directory: the image (and what its filesystem takes for itself), the mount point, nothing else. */
  directory: string;
  quotaBytes: number;
  /** Whether to try an image on a loop device (as root). */
  useImage: boolean;
  /** The uid and gid that own every volume's files on disk. */
  fileOwner?: { uid: number; gid: number };
}

export class VolumeShelf {
  private constructor(
    private readonly options: ShelfOptions,
    /** The top of the files: the image's mount point, or a plain directory. */
    readonly filesDirectory: string,
    /** Whether the files are an image of their own, so the quota holds for every writer. */
    readonly bounded: boolean,
    /** What the image's filesystem takes for itself (inode tables, the journal): not the owner's files. */
    private readonly ownBytes = 0,
  ) {}

  static async open(options: ShelfOptions): Promise<VolumeShelf> {
    const filesDirectory = path.join(options.directory, 'files');
    await mkdir(filesDirectory, { recursive: true, mode: 0o700 });
    let bounded = false;
    if (options.useImage) bounded = await mountImage(options.directory, filesDirectory, options.quotaBytes);
    await mkdir(path.join(filesDirectory, TRASH), { recursive: true, mode: 0o700 });
    const own = bounded ? await filesystemOwnBytes(options.directory, filesDirectory) : 0;
    const shelf = new VolumeShelf(options, filesDirectory, bounded, own);
    await shelf.emptyTrash();
    return shelf;
  }

  /**
   * Mounts the image again if it is no longer mounted (another process sharing the state directory
   * unmounted it as it stopped): the files are never read or written beneath an absent mount.
   */
  async ensureMounted(): Promise<void> {
    if (!this.bounded || isMountPoint(this.filesDirectory)) return;
    if (!(await mountImage(this.options.directory, this.filesDirectory, this.options.quotaBytes))) {
      throw new Error(`The volumes' image at ${this.options.directory} could not be mounted again.`);
    }
  }

  get quotaBytes(): number {
    return this.options.quotaBytes;
  }

  /** A volume's directory (its files' top). */
  directoryOf(volumeId: string): string {
    return path.join(this.filesDirectory, volumeId);
  }

  async createDirectory(volumeId: string): Promise<string> {
    const directory = this.directoryOf(volumeId);
    await mkdir(directory, { mode: 0o755 });
    if (this.options.fileOwner) await chown(directory, this.options.fileOwner.uid, this.options.fileOwner.gid);
    return directory;
  }

  /**
   * Removes a volume's files: renamed into the trash first (no sandbox reaches that), then removed,
   * so a symlink planted while the removal runs has nothing to lead it to.
   */
  async removeDirectory(volumeId: string): Promise<void> {
    const trashed = this.trashPath();
    try {
      await rename(this.directoryOf(volumeId), trashed);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return;
      throw error;
    }
    await rm(trashed, { recursive: true, force: true });
  }

  /** A path inside the trash for a file or directory of a volume on its way out. */
  trashPath(): string {
    return path.join(this.filesDirectory, TRASH, randomUUID());
  }

  async emptyTrash(): Promise<void> {
    await rm(path.join(this.filesDirectory, TRASH), { recursive: true, force: true });
    await mkdir(path.join(this.filesDirectory, TRASH), { mode: 0o700 });
  }

  /** What the owner's volumes hold together, and what they may. */
  async usage(): Promise<{ usedBytes: number; quotaBytes: number }> {
    if (this.bounded) {
      // What is allocated, less the filesystem's own: the files (and their directories).
      const stats = await statfs(this.filesDirectory);
      const usedBytes = Math.max(0, (stats.blocks - stats.bfree) * stats.bsize - this.ownBytes);
      return { usedBytes, quotaBytes: this.options.quotaBytes };
    }
    return { usedBytes: await diskUsage(this.filesDirectory), quotaBytes: this.options.quotaBytes };
  }

  /** Unmounts the image (lazily, should a process still hold it); the files stay in it. */
  async close(): Promise<void> {
    if (!this.bounded) return;
    await execFileAsync('umount', [this.filesDirectory]).catch(() =>
      execFileAsync('umount', ['--lazy', this.filesDirectory]).catch(() => undefined),
    );
  }
}

/** Bytes a tree occupies on disk (`du`), counting each hard-linked file once. */
export async function diskUsage(directory: string): Promise<number> {
  try {
    const { stdout } = await execFileAsync('du', ['-s', '-B1', '-x', directory], { maxBuffer: 1 << 20 });
    return Number.parseInt(stdout, 10) || 0;
  } catch (error) {
    // du reports what it could not read and still prints the total.
    const stdout = (error as { stdout?: string }).stdout ?? '';
    return Number.parseInt(stdout, 10) || 0;
  }
}

/**
 * What the image's filesystem takes for itself, measured once (what is allocated, less what `du`
 * finds in it) and kept beside the image (`image.own`); measured again after the image grew.
 */
async function filesystemOwnBytes(directory: string, filesDirectory: string): Promise<number> {
  const file = path.join(directory, OWN_BYTES_FILE);
  const kept = Number((await readFile(file, 'utf8').catch(() => '')).trim());
  if (Number.isSafeInteger(kept) && kept > 0) return kept;
  const stats = await statfs(filesDirectory);
  const own = Math.max(0, (stats.blocks - stats.bfree) * stats.bsize - (await diskUsage(filesDirectory)));
  await writeFile(file, `${own}\n`, { mode: 0o600 }).catch(() => undefined);
  return own;
}

function isMountPoint(directory: string): boolean {
  return readMountInfo().some((mount) => mount.mountPoint === directory);
}

/**
 * The owner's image mounted at `filesDirectory`: made (sparse, ext4) when missing, grown when the
 * quota grew. False when loop devices or mkfs are not there, and the files stay a plain directory.
 */
async function mountImage(directory: string, filesDirectory: string, quotaBytes: number): Promise<boolean> {
  if (isMountPoint(filesDirectory)) return true;
  const image = path.join(directory, 'image.ext4');
  try {
    if (!(await stat(image).catch(() => undefined))) {
      const handle = await open(image, 'wx', 0o600);
      await handle.close();
      await truncate(image, Math.max(Math.ceil(quotaBytes / 4096) * 4096, 16 * 1024 * 1024));
      await execFileAsync(
        'mkfs.ext4',
        [
          '-q',
          '-F',
          '-m',
          '0',
          '-i',
          '65536',
          '-J',
          `size=${JOURNAL_MIB}`,
          '-E',
          'lazy_itable_init=1,lazy_journal_init=1,nodiscard',
          image,
        ],
        { timeout: 60_000 },
      );
    }
    // ext4 keeps some of its image for itself (inode tables, the journal), and a quota may have grown: the
    // image grows (offline) until the owner's files have the quota's room. Each growth adds metadata of its
    // own, so a few rounds close the gap.
    for (let round = 0; ; round++) {
      await execFileAsync('mount', ['-o', 'loop,discard,nosuid,nodev,noatime', image, filesDirectory], {
        timeout: 60_000,
      });
      const stats = await statfs(filesDirectory);
      const missing = quotaBytes - stats.bavail * stats.bsize;
      if (missing < 1024 * 1024 || round === 3) return true;
      await execFileAsync('umount', [filesDirectory]);
      // Its own use changes as it grows: measured again once mounted.
      await rm(path.join(directory, OWN_BYTES_FILE), { force: true });
      const size = (await stat(image)).size;
      await truncate(image, Math.ceil((size + missing * 1.05) / 4096) * 4096);
      await execFileAsync('e2fsck', ['-f', '-p', image], { timeout: 120_000 });
      await execFileAsync('resize2fs', [image], { timeout: 120_000 });
    }
  } catch {
    // Another process may have mounted it meanwhile; else no loop devices here: a plain directory.
    return isMountPoint(filesDirectory);
  }
}
