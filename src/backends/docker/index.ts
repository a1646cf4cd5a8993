/**
 * The Docker backend: one locked-down container per kernel, talking to Docker
 * Engine through its API (dockerode; DOCKER_HOST is honoured). The kernel
 * speaks the same protocol as on bubblewrap, over the container's attached
 * stdin/stdout. /mnt/data is a size-capped tmpfs volume that outlives kernel
 * restarts (volume.ts); a session's kernels and files share one memory budget
 * (session-cgroup.ts). Closing a session removes everything it created, and
 * objects left by a sandcell process that died are removed at the next start.
 * Each session runs as its own host uid, leased on this machine (see
 * uid-leases.ts). Preparing the engine is engine.ts; a running kernel
 * container is sandbox.ts.
 */

import { randomUUID } from 'node:crypto';
import path from 'node:path';
import type { Duplex } from 'node:stream';
import type Dockerode from 'dockerode';
import { BackendUnavailableError, SandboxStartError } from '../../errors.js';
import { runtimeImageTag } from '../../image/recipe.js';
import { onceUntilFailure } from '../../internal/once-until-failure.js';
import { writeCertificateBundle } from '../../network/certificate-bundle.js';
import { INGRESS_SOCKET_MOUNT } from '../../network/ingress.js';
import { forwarderOptions, offlineEnvironment, proxyEnvironment } from '../../network/sandbox-proxy.js';
import { defaultCacheDirectory } from '../bubblewrap/host-setup.js';
import { type DataBudgetMember, sharedDataBudget } from '../data-budget.js';
import { dataCapacityBytes, type SandboxLimits } from '../limits.js';
import { sandboxEnvironment } from '../sandbox-environment.js';
import type {
  CreateVolumeOptions,
  MountedKernelOptions,
  RootOptions,
  Sandbox,
  SandboxBackend,
  StartSandboxOptions,
} from '../spec.js';
import { isTmpfsMountPoint, resizeTmpfs, tmpfsUsedBytes } from '../tmpfs.js';
import type { UidLease, UidLeases, UidRange } from '../uid-leases.js';
import { KERNEL_COMMAND, kernelContainerOptions, MANAGED_LABEL, SESSION_LABEL, UID_LABEL } from './container-config.js';
import { connectDocker, type DockerEngineReport, prepareEngine } from './engine.js';
import { EngineRetriesExhausted, engineErrorText, retryTransient } from './engine-errors.js';
import { stagedKernelDirectory } from './mounted-kernel.js';
import { ownerLabels } from './owner.js';
import { DockerSandbox } from './sandbox.js';
import { type DockerCgroupTree, DockerSessionCgroup } from './session-cgroup.js';
import type { DockerBackendSettings } from './settings.js';
import { createVolumeObjects, DockerVolume } from './volume.js';

export {
  connectDocker,
  type DockerDataBudgetMode,
  type DockerEngineReport,
  type DockerMemoryBudgetMode,
  sweepStaleObjects,
} from './engine.js';
export { DockerVolume } from './volume.js';

export interface DockerBackendOptions extends DockerBackendSettings {
  /** A configured client. @default a client for DOCKER_HOST, else /var/run/docker.sock */
  docker?: Dockerode;
  /**
   * Host uids leased to sessions, one each, as `START-END` or a range; no
   * account or subordinate id range of this machine may overlap it.
   * @default 1974206464-1974271999 (DEFAULT_UID_RANGE; env SANDCELL_UID_RANGE)
   */
  uidRange?: string | UidRange;
  /**
   * Keep each session's memory budget with a cgroup sandcell limits and gives
   * the engine as `CgroupParent` (needs a local engine with the cgroupfs driver
   * and root); `off`, or where impossible, each kernel's own limit is lowered
   * by what /mnt/data holds instead. @default 'auto'
   */
  sessionCgroups?: 'auto' | 'off';
  /** The image has no sandcell kernel: mount the host's in (set by `withRoot` for environments from existing images). */
  mountedKernel?: MountedKernelOptions;
}

/** Leases tried before giving up when the engine shows each uid in use (machines sharing one engine). */
const UID_ATTEMPTS = 8;

export class DockerBackend implements SandboxBackend {
  readonly specificationVersion = 'v1' as const;
  readonly name = 'docker';
  readonly servesPorts = true;
  /** Volumes are this host's directories, bound in: a remote engine's start with them is refused. */
  readonly mountsDirectories = true;
  readonly image: string;
  private client?: Dockerode;
  private cgroupTree?: DockerCgroupTree;
  private readonly prepareOnce = onceUntilFailure(() => this.doPrepare());
  private readonly rooted = new Map<string, DockerBackend>();

  constructor(private readonly options: DockerBackendOptions = {}) {
    this.client = options.docker;
    this.image = options.image ?? process.env.SANDCELL_DOCKER_IMAGE ?? runtimeImageTag();
  }

  /** The same backend (and client) on another image (an environment's), made once per image. */
  withRoot(image: string, options: RootOptions = {}): DockerBackend {
    const key = options.mountedKernel ? `${image}\0${JSON.stringify(options.mountedKernel)}` : image;
    let backend = this.rooted.get(key);
    if (!backend) {
      const docker = this.client ?? this.options.docker;
      backend = new DockerBackend({ ...this.options, docker, image, mountedKernel: options.mountedKernel });
      this.rooted.set(key, backend);
    }
    return backend;
  }

  /** The engine client; available once the backend has been prepared (ensureAvailable). */
  get docker(): Dockerode {
    if (!this.client)
      throw new BackendUnavailableError('The docker backend is not prepared yet: call ensureAvailable() first.');
    return this.client;
  }

  ensureAvailable(): Promise<void> {
    return this.prepare().then(() => undefined);
  }

  /** Engine facts after preparation (pings the engine, checks the image, sweeps leftovers). */
  report(): Promise<DockerEngineReport> {
    return this.prepare();
  }

  private prepare(): Promise<DockerEngineReport> {
    return this.prepareOnce();
  }

  private async doPrepare(): Promise<DockerEngineReport> {
    this.client ??= await connectDocker();
    const { report, cgroupTree } = await prepareEngine(this.docker, this.image, this.options);
    this.cgroupTree = cgroupTree;
    return report;
  }

  async createVolume(options: CreateVolumeOptions): Promise<DockerVolume> {
    const report = await this.prepare();
    options.signal?.throwIfAborted();
    const capacity = dataCapacityBytes(options.limits);
    const session = `${process.pid}-${options.sessionId.slice(0, 12)}-${randomUUID().slice(0, 6)}`;
    // Before any engine object: a full budget refuses the session (ResourceExhaustedError) as it is.
    let lease = report.dataBudget.enforced ? await sharedDataBudget().lease(capacity) : undefined;
    const owner = await this.leaseUid(report.uidLeases, options.sessionId).catch(async (error: unknown) => {
      await lease?.release();
      throw error;
    });
    const labels = {
      [MANAGED_LABEL]: '1',
      [SESSION_LABEL]: options.sessionId,
      [UID_LABEL]: String(owner.uid),
      ...ownerLabels(),
    };
    let memoryBudget: DockerSessionCgroup | undefined;
    try {
      if (this.cgroupTree && report.memoryBudget.mode === 'cgroup-parent') {
        memoryBudget = await DockerSessionCgroup.create(this.cgroupTree, session, options.limits.memoryBytes);
      }
      let volumeName = '';
      const holder = await retryTransient(
        () => {
          // Fresh names on each attempt: an earlier attempt's objects may still be on their way out.
          const suffix = `${session}-${randomUUID().slice(0, 4)}`;
          volumeName = `sandcell-data-${suffix}`;
          return createVolumeObjects(this.docker, {
            image: this.image,
            volumeName,
            holderName: `sandcell-holder-${suffix}`,
            sizeBytes: lease?.sizeBytes ?? capacity,
            labels,
            owner,
            cgroupParent: memoryBudget?.parent,
          });
        },
        { signal: options.signal },
      );
      if (memoryBudget && !memoryBudget.holds(holder.id)) {
        report.memoryBudget.mode = 'kernel-memory';
        report.memoryBudget.reason = `the engine did not put containers in ${memoryBudget.parent} as sandcell sees it`;
        await memoryBudget.remove();
        memoryBudget = undefined;
      }
      const mountPath = await this.visibleMount(volumeName);
      if (lease && mountPath) {
        lease.attach(engineMountMember(mountPath));
      } else if (lease) {
        report.dataBudget.enforced = false;
        report.dataBudget.reason = "the engine's tmpfs mounts are not visible here, so they cannot be resized";
        await lease.release();
        lease = undefined;
      }
      return new DockerVolume(this.docker, options.sessionId, volumeName, holder, labels, owner, {
        memoryBudget,
        lease,
        mountPath,
      });
    } catch (error) {
      await memoryBudget?.remove();
      await lease?.release();
      await owner.release();
      throw new SandboxStartError(`Could not create the session's /mnt/data volume: ${engineErrorText(error)}`, {
        cause: firstCause(error),
      });
    }
  }

  /**
   * A uid leased on this machine that no container on the engine runs as:
   * containers of another machine sharing the engine, or of a dead owner not
   * swept yet, keep their uid label, and such a uid is passed over.
   */
  private async leaseUid(uidLeases: UidLeases, sessionId: string): Promise<UidLease> {
    const passedOver: UidLease[] = [];
    try {
      for (let attempt = 0; attempt < UID_ATTEMPTS; attempt += 1) {
        const lease = await uidLeases.acquire(`docker session ${sessionId}`);
        const users = await this.docker.listContainers({
          all: true,
          filters: { label: [`${UID_LABEL}=${lease.uid}`] },
        });
        if (users.length === 0) return lease;
        passedOver.push(lease);
      }
    } finally {
      await Promise.all(passedOver.map((lease) => lease.release()));
    }
    throw new SandboxStartError(
      `No free host uid found in ${UID_ATTEMPTS} tries: containers on the engine already run as them. Give this machine its own range with SANDCELL_UID_RANGE=START-END.`,
    );
  }

  /** Where the engine mounted a volume's tmpfs, when that mount is in sandcell's own mount namespace. */
  private async visibleMount(volumeName: string): Promise<string | undefined> {
    const inspected = await this.docker
      .getVolume(volumeName)
      .inspect()
      .catch(() => undefined);
    const mountPoint = inspected?.Mountpoint;
    return mountPoint && isTmpfsMountPoint(mountPoint) ? mountPoint : undefined;
  }

  async start(options: StartSandboxOptions): Promise<Sandbox> {
    const { maskedPaths, localEngine } = await this.prepare();
    const volume = options.volume;
    if (!(volume instanceof DockerVolume)) {
      throw new SandboxStartError('The docker backend needs a volume it created (createVolume).');
    }
    options.signal?.throwIfAborted();
    const limits = volume.memoryBudget ? options.limits : await lowerByFiles(options.limits, volume);
    const network = options.network;
    if (network && !localEngine) {
      throw new SandboxStartError(
        "Internet access needs a Docker Engine on this machine: the session's gate is a unix socket here, bound into the container (DOCKER_HOST points elsewhere).",
      );
    }
    // The ingress is a unix socket here, bound in: a remote engine's containers go without (their ports unreachable).
    const ingress = localEngine ? options.ingress : undefined;
    const kernelOptions = {
      ...options.kernelOptions,
      limits: rlimitsFor(limits),
      ...(network ? { network: forwarderOptions() } : {}),
      ...(ingress ? { ingress: { socket: INGRESS_SOCKET_MOUNT } } : {}),
    };
    if (options.mounts?.length && !localEngine) {
      throw new SandboxStartError(
        "Volumes need a Docker Engine on this machine: a volume's files are this host's, bound into the container (DOCKER_HOST points elsewhere).",
      );
    }
    const mounted = this.options.mountedKernel;
    if (mounted && !localEngine) {
      throw new SandboxStartError(
        "An environment from an existing image needs a Docker Engine on this machine: sandcell's kernel files are bound in from here (DOCKER_HOST points elsewhere).",
      );
    }
    const extra = {
      // Without matplotlib_inline, matplotlib picks its own headless backend rather than failing on ours.
      ...(mounted && !mounted.matplotlibInline ? { MPLBACKEND: 'agg' } : {}),
      // A session's own variables may change pip's offline default, not the gate's proxy settings.
      ...(network ? {} : offlineEnvironment()),
      ...options.environment,
      ...(network ? { ...proxyEnvironment(), ...network.environment } : {}),
    };
    const environment = sandboxEnvironment({ kernelOptions, threads: limits.cpus, extra });
    const bundlePath = network
      ? await writeCertificateBundle(
          network.trustedCertificates,
          path.join(defaultCacheDirectory(), 'certificate-bundles'),
        )
      : undefined;
    const mountedKernel = mounted ? { directory: await stagedKernelDirectory(), python: mounted.python } : undefined;
    try {
      return await retryTransient(
        async () => {
          const create = kernelContainerOptions({
            image: this.image,
            name: `sandcell-kernel-${process.pid}-${randomUUID().slice(0, 12)}`,
            volumeName: volume.name,
            limits,
            environment,
            labels: volume.labels,
            maskedPaths,
            owner: volume.owner,
            cgroupParent: volume.memoryBudget?.parent,
            ...(network && bundlePath
              ? {
                  network: {
                    socketPath: network.socketPath,
                    bundlePath,
                    ...(network.socketGroup !== undefined ? { socketGroup: network.socketGroup } : {}),
                  },
                }
              : {}),
            ...(mountedKernel ? { mountedKernel } : {}),
            ...(ingress ? { ingress } : {}),
            ...(options.mounts?.length ? { mounts: options.mounts } : {}),
          });
          let container: Dockerode.Container | undefined;
          try {
            container = await this.docker.createContainer(create);
            // Attach before start, so not a byte of the kernel's output is missed.
            const stream = (await container.attach({
              stream: true,
              stdin: true,
              stdout: true,
              stderr: true,
              hijack: true,
            })) as unknown as Duplex;
            const sandbox = new DockerSandbox(this.docker, container, stream);
            await container.start();
            sandbox.watch();
            return sandbox;
          } catch (error) {
            await container?.remove({ force: true }).catch(() => undefined);
            throw error;
          }
        },
        { signal: options.signal },
      );
    } catch (error) {
      throw new SandboxStartError(
        `Could not start the kernel container (${KERNEL_COMMAND[0]}): ${engineErrorText(error)}`,
        { cause: firstCause(error) },
      );
    }
  }
}

/**
 * Without a session cgroup, the files the last kernels wrote are charged to
 * containers that are gone: the new kernel gets what they leave of the budget.
 */
async function lowerByFiles(limits: SandboxLimits, volume: DockerVolume): Promise<SandboxLimits> {
  const used = (await volume.usedBytes()) ?? 0;
  // /mnt/data never holds more than its capacity, which leaves the kernel its reserve.
  return { ...limits, memoryBytes: limits.memoryBytes - Math.min(used, dataCapacityBytes(limits)) };
}

/**
 * The budget's view of a tmpfs the engine mounted: should the engine have
 * unmounted it, measuring or resizing fails (the budget then counts the
 * volume as full) rather than acting on the disk beneath.
 */
function engineMountMember(mountPath: string): DataBudgetMember {
  const mounted = () => {
    if (!isTmpfsMountPoint(mountPath)) throw new Error(`${mountPath} is no longer a tmpfs mount`);
  };
  return {
    usedBytes: async () => {
      mounted();
      return tmpfsUsedBytes(mountPath);
    },
    resize: async (bytes) => {
      mounted();
      await resizeTmpfs(mountPath, bytes);
    },
  };
}

/** The first failure of a retried operation is the one worth keeping as the cause. */
function firstCause(error: unknown): unknown {
  return error instanceof EngineRetriesExhausted ? error.cause : error;
}

/**
 * Limits the kernel applies to itself. RLIMIT_NPROC counts every process of
 * the host uid, which is the session's own, so it bounds the session like
 * PidsLimit does (the holder's two processes count too).
 */
function rlimitsFor(limits: SandboxLimits): Record<string, number> {
  return {
    processes: limits.processes,
    cpuSeconds: limits.cpuSeconds,
    fileSizeBytes: limits.fileSizeBytes,
    openFiles: limits.openFiles,
  };
}

export function createDockerBackend(options: DockerBackendOptions = {}): DockerBackend {
  return new DockerBackend(options);
}
