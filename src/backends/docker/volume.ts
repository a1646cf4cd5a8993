/**
 * A session's /mnt/data on Docker: a size-capped tmpfs volume that a tiny
 * holder container keeps mounted for the session's life (the engine unmounts
 * a tmpfs volume no container uses), with the session's memory budget (a
 * cgroup parent, when the engine can use one) and its place in the server's
 * budget for files (when the engine is local, its mount is resized in place).
 * It is owned by the session's leased host uid, which its containers run as.
 */
import { PassThrough } from 'node:stream';
import type Dockerode from 'dockerode';
import type { DataLease } from '../data-budget.js';
import { DATA_MOUNT } from '../sandbox-environment.js';
import type { SandboxVolume } from '../spec.js';
import { isTmpfsMountPoint, tmpfsUsedBytes } from '../tmpfs.js';
import type { UidLease } from '../uid-leases.js';
import { holderContainerOptions, type SessionOwner, volumeOptions } from './container-config.js';
import { ignoreMissing, statusOf } from './engine-errors.js';
import type { DockerSessionCgroup } from './session-cgroup.js';

/** How long asking the holder what /mnt/data holds may take (only when the engine's mounts are not visible). */
const MEASURE_TIMEOUT_MS = 5_000;

export interface DockerVolumeParts {
  /** The session's memory budget; undefined when each kernel's own limit stands in for it. */
  memoryBudget?: DockerSessionCgroup;
  /** The volume's place in the server's budget for files; undefined when it cannot be enforced. */
  lease?: DataLease;
  /** Where the engine mounted the tmpfs, when sandcell sees that mount. */
  mountPath?: string;
}

export class DockerVolume implements SandboxVolume {
  private disposed?: Promise<void>;

  constructor(
    private readonly docker: Dockerode,
    readonly sessionId: string,
    readonly name: string,
    private readonly holder: Dockerode.Container,
    readonly labels: Record<string, string>,
    /** The session's host uid: its containers run as it; released once they and the volume are gone. */
    readonly owner: UidLease,
    private readonly parts: DockerVolumeParts = {},
  ) {}

  get memoryBudget(): DockerSessionCgroup | undefined {
    return this.parts.memoryBudget;
  }

  /** What the files hold: measured on the host mount, else by the holder (`stat -f`). */
  async usedBytes(): Promise<number | undefined> {
    // The engine owns that mount: should it be gone, statfs would measure the disk beneath it.
    if (this.parts.mountPath && isTmpfsMountPoint(this.parts.mountPath)) {
      return tmpfsUsedBytes(this.parts.mountPath).catch(() => undefined);
    }
    return measureInHolder(this.docker, this.holder).catch(() => undefined);
  }

  usageChanged(): Promise<void> {
    return this.parts.lease?.usageChanged() ?? Promise.resolve();
  }

  /** Should removing the holder or the volume fail, the uid stays leased until this process ends. */
  dispose(): Promise<void> {
    this.disposed ??= (async () => {
      this.parts.lease?.detach();
      await this.holder.remove({ force: true }).catch(ignoreMissing);
      await removeVolume(this.docker, this.name);
      await this.parts.memoryBudget?.remove();
      await this.parts.lease?.release();
      await this.owner.release();
    })();
    return this.disposed;
  }
}

/**
 * One attempt at the engine objects of a volume: the tmpfs volume and its
 * started holder. Cleans up after itself when it fails, so it can be retried.
 */
export async function createVolumeObjects(
  docker: Dockerode,
  input: {
    image: string;
    volumeName: string;
    holderName: string;
    sizeBytes: number;
    labels: Record<string, string>;
    owner: SessionOwner;
    cgroupParent?: string;
  },
): Promise<Dockerode.Container> {
  let holder: Dockerode.Container | undefined;
  try {
    await docker.createVolume(
      volumeOptions({ name: input.volumeName, dataBytes: input.sizeBytes, labels: input.labels, owner: input.owner }),
    );
    holder = await docker.createContainer(
      holderContainerOptions({
        image: input.image,
        name: input.holderName,
        volumeName: input.volumeName,
        labels: input.labels,
        owner: input.owner,
        cgroupParent: input.cgroupParent,
      }),
    );
    await holder.start();
    return holder;
  } catch (error) {
    await holder?.remove({ force: true }).catch(() => undefined);
    await removeVolume(docker, input.volumeName).catch(() => undefined);
    throw error;
  }
}

/** The engine may still be releasing the last container's mount: retry briefly. */
async function removeVolume(docker: Dockerode, name: string): Promise<void> {
  for (let attempt = 0; ; attempt += 1) {
    try {
      await docker.getVolume(name).remove();
      return;
    } catch (error) {
      if (statusOf(error) === 404) return;
      if (statusOf(error) !== 409 || attempt >= 20) throw error;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
}

/** `stat -f` in the holder, which has the volume mounted: for engines whose mounts sandcell cannot see. */
async function measureInHolder(docker: Dockerode, holder: Dockerode.Container): Promise<number | undefined> {
  const exec = await holder.exec({ Cmd: ['stat', '-f', '-c', '%S %b %f', DATA_MOUNT], AttachStdout: true });
  const stream = await exec.start({ hijack: true, stdin: false });
  const stdout = new PassThrough();
  docker.modem.demuxStream(stream, stdout, new PassThrough());
  let text = '';
  stdout.on('data', (chunk: Buffer) => {
    text = (text + chunk.toString('utf8')).slice(0, 200);
  });
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => {
      stream.destroy();
      reject(new Error('the holder did not answer'));
    }, MEASURE_TIMEOUT_MS);
    const ended = () => {
      clearTimeout(timer);
      resolve();
    };
    stream.once('end', ended);
    stream.once('close', ended);
    stream.once('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
  });
  const [blockSize, blocks, free] = text.trim().split(' ').map(Number);
  if (![blockSize, blocks, free].every((value) => Number.isFinite(value))) return undefined;
  return ((blocks as number) - (free as number)) * (blockSize as number);
}
