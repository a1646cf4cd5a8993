/**
 * The Docker backend: one locked-down container per kernel, talking to Docker
 * Engine through its API (dockerode; DOCKER_HOST is honoured). The kernel
 * speaks the same protocol as on bubblewrap, over the container's attached
 * stdin/stdout. /mnt/data is a size-capped tmpfs volume that outlives kernel
 * restarts (volume.ts); a session's kernels and files share one memory budget
 * (session-cgroup.ts). Closing a session removes everything it created, and
 * objects left by a sandcell process that died are removed at the next start.
 * Each session runs as its own host uid, leased on this machine (see
 * uid-leases.ts).
 */

import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { type Duplex, PassThrough } from 'node:stream';
import type Dockerode from 'dockerode';
import { BackendUnavailableError, SandboxStartError } from '../../errors.js';
import { ENVIRONMENT_IMAGE_REPOSITORY_PREFIX, runtimeImageTag } from '../../image/recipe.js';
import { onceUntilFailure } from '../../internal/once-until-failure.js';
import { writeCertificateBundle } from '../../network/certificate-bundle.js';
import { forwarderOptions, proxyEnvironment } from '../../network/sandbox-proxy.js';
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
  SandboxExit,
  SandboxUsage,
  StartSandboxOptions,
} from '../spec.js';
import { isTmpfsMountPoint, resizeTmpfs, tmpfsUsedBytes } from '../tmpfs.js';
import { checkUidRangeIsFree, resolveUidRange, type UidLease, UidLeases, type UidRange } from '../uid-leases.js';
import {
  EXTRA_MASKED_PATHS,
  KERNEL_COMMAND,
  kernelContainerOptions,
  MANAGED_LABEL,
  SESSION_LABEL,
  UID_LABEL,
} from './container-config.js';
import { oomKillsOfProcess } from './container-oom.js';
import { EngineRetriesExhausted, engineErrorText, ignoreMissing, retryTransient } from './engine-errors.js';
import { stagedKernelDirectory } from './mounted-kernel.js';
import { ownerIsGone, ownerLabels } from './owner.js';
import {
  type DockerCgroupTree,
  DockerSessionCgroup,
  detectDockerCgroupTree,
  sweepStaleDockerCgroups,
} from './session-cgroup.js';
import type { DockerBackendSettings } from './settings.js';
import { createVolumeObjects, DockerVolume } from './volume.js';

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

/** How a session's memory budget (its kernels and /mnt/data together) is kept on this engine. */
export interface DockerMemoryBudgetMode {
  /**
   * `cgroup-parent`: one limited cgroup holds every container of the session and the pages of its files;
   * `kernel-memory`: each new kernel's limit is `memoryBytes` minus what /mnt/data holds when it starts.
   */
  mode: 'cgroup-parent' | 'kernel-memory';
  /** Why the first is not used. */
  reason?: string;
}

/** Whether the server-wide budget for all sessions' files holds on this engine's volumes. */
export interface DockerDataBudgetMode {
  enforced: boolean;
  /** Why not. */
  reason?: string;
}

/** What the backend found about the engine; `doctor` prints it. */
export interface DockerEngineReport {
  endpoint: string;
  serverVersion: string;
  apiVersion: string;
  image: string;
  imageId: string;
  imageSize: number;
  cgroupVersion?: string;
  /** Whether the engine can enforce each limit (false means the kernel lacks the cgroup feature). */
  limits: { memory: boolean; swap: boolean; pids: boolean; cpu: boolean };
  /** Stale objects of dead sandcell processes removed while preparing. */
  swept: number;
  /** May change to `kernel-memory` when the first session shows the engine does not use sandcell's cgroups. */
  memoryBudget: DockerMemoryBudgetMode;
  /** May change to not enforced when the first session shows its mount is not visible to sandcell. */
  dataBudget: DockerDataBudgetMode;
  /** Paths kernel containers see masked: the engine's defaults plus sandcell's (EXTRA_MASKED_PATHS). */
  maskedPaths: string[];
  /** Whether the engine is on this machine (a unix socket here): only then can a gate's socket be bound in. */
  localEngine: boolean;
  /** Where each session's host uid comes from. */
  uidLeases: UidLeases;
}

/** Leases tried before giving up when the engine shows each uid in use (machines sharing one engine). */
const UID_ATTEMPTS = 8;

/** Where the client connects, for messages. */
function describeEndpoint(): string {
  return process.env.DOCKER_HOST ?? 'unix:///var/run/docker.sock';
}

/**
 * A client for DOCKER_HOST, else the local socket. dockerode is loaded on
 * first use: it costs a third of a second, which commands that never touch
 * Docker should not pay.
 */
export async function connectDocker(): Promise<Dockerode> {
  const { default: DockerodeClient } = await import('dockerode');
  return new DockerodeClient();
}

export class DockerBackend implements SandboxBackend {
  readonly specificationVersion = 'v1' as const;
  readonly name = 'docker';
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
    const endpoint = describeEndpoint();
    this.client ??= await connectDocker();
    let info: Record<string, unknown>;
    let version: Dockerode.DockerVersion;
    try {
      await withTimeout(this.docker.ping(), this.options.connectTimeoutMs ?? 5000, 'no answer');
      [info, version] = await Promise.all([this.docker.info(), this.docker.version()]);
    } catch (error) {
      throw new BackendUnavailableError(
        `Docker Engine is not reachable at ${endpoint} (${engineErrorText(error)}). Install it with \`apt-get install docker.io\` and start it (\`dockerd &\` or \`service docker start\`), or set DOCKER_HOST.`,
        { cause: error },
      );
    }
    let image: Dockerode.ImageInspectInfo;
    try {
      image = await this.docker.getImage(this.image).inspect();
    } catch (error) {
      throw new BackendUnavailableError(
        this.image.startsWith(ENVIRONMENT_IMAGE_REPOSITORY_PREFIX)
          ? `The environment image ${this.image} is not in Docker Engine at ${endpoint}. Build it with \`sandcell env build FILE --backend docker\`.`
          : `The runtime image ${this.image} is not in Docker Engine at ${endpoint}. Build it with \`sandcell image build\` (a few minutes, once per sandcell version).`,
        { cause: error },
      );
    }
    // The range is checked against this machine's accounts: the engine is expected to run here.
    const range = resolveUidRange(this.options.uidRange);
    await checkUidRangeIsFree(range);
    const swept = await sweepStaleObjects(this.docker);
    // After the sweep, so that a uid whose lease is swept has no container of a dead owner left.
    const uidLeases = new UidLeases({ range });
    await uidLeases.prepare();
    const maskedPaths = await maskedPathsFor(this.docker, this.image);
    const { memoryBudget, dataBudget, local } = await this.detectBudgets(info);
    return {
      endpoint,
      serverVersion: version.Version,
      apiVersion: version.ApiVersion,
      image: this.image,
      imageId: image.Id,
      imageSize: image.Size,
      cgroupVersion: typeof info.CgroupVersion === 'string' ? info.CgroupVersion : undefined,
      limits: {
        memory: info.MemoryLimit === true,
        swap: info.SwapLimit === true,
        pids: info.PidsLimit === true,
        cpu: info.CpuCfsQuota === true,
      },
      swept,
      memoryBudget,
      dataBudget,
      maskedPaths,
      localEngine: local,
      uidLeases,
    };
  }

  /** Which budgets this engine lets sandcell keep (see DockerMemoryBudgetMode, DockerDataBudgetMode). */
  private async detectBudgets(
    info: Record<string, unknown>,
  ): Promise<{ memoryBudget: DockerMemoryBudgetMode; dataBudget: DockerDataBudgetMode; local: boolean }> {
    // A unix socket on this machine (it may still lead elsewhere: the first session checks).
    const modem = this.docker.modem as { getSocketPath?: () => Promise<string | undefined> | undefined };
    const socketPath = await modem.getSocketPath?.();
    const local = typeof socketPath === 'string' && existsSync(socketPath);
    let memoryBudget: DockerMemoryBudgetMode;
    if (this.options.sessionCgroups === 'off') {
      memoryBudget = { mode: 'kernel-memory', reason: 'turned off (sessionCgroups: off)' };
    } else {
      const detected = await detectDockerCgroupTree({
        local,
        driver: typeof info.CgroupDriver === 'string' ? info.CgroupDriver : undefined,
        version: typeof info.CgroupVersion === 'string' ? info.CgroupVersion : undefined,
      });
      if ('tree' in detected) {
        this.cgroupTree = detected.tree;
        await sweepStaleDockerCgroups(detected.tree);
        memoryBudget = { mode: 'cgroup-parent' };
      } else {
        memoryBudget = { mode: 'kernel-memory', reason: detected.reason };
      }
    }
    const rootDirectory = typeof info.DockerRootDir === 'string' ? info.DockerRootDir : undefined;
    const dataBudget: DockerDataBudgetMode = !local
      ? {
          enforced: false,
          reason: 'the engine is not on this machine (DOCKER_HOST), so its tmpfs mounts cannot be resized',
        }
      : process.getuid?.() !== 0
        ? { enforced: false, reason: "sandcell does not run as root, so it cannot resize the engine's tmpfs mounts" }
        : !rootDirectory || !existsSync(rootDirectory)
          ? {
              enforced: false,
              reason: `the engine's data directory (${rootDirectory ?? 'unknown'}) is not visible here`,
            }
          : { enforced: true };
    return { memoryBudget, dataBudget, local };
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
    const kernelOptions = {
      ...options.kernelOptions,
      limits: rlimitsFor(limits),
      ...(network ? { network: forwarderOptions() } : {}),
    };
    const mounted = this.options.mountedKernel;
    if (mounted && !localEngine) {
      throw new SandboxStartError(
        "An environment from an existing image needs a Docker Engine on this machine: sandcell's kernel files are bound in from here (DOCKER_HOST points elsewhere).",
      );
    }
    const extra = {
      // Without matplotlib_inline, matplotlib picks its own headless backend rather than failing on ours.
      ...(mounted && !mounted.matplotlibInline ? { MPLBACKEND: 'agg' } : {}),
      ...options.environment,
      ...(network ? proxyEnvironment() : {}),
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

class DockerSandbox implements Sandbox {
  readonly exited: Promise<SandboxExit>;
  readonly output = new PassThrough();
  readonly diagnostics = new PassThrough();
  private killedByUs = false;
  private removing?: Promise<void>;
  /** The container's first process as this machine sees it, once asked for. */
  private initPid?: number;
  private resolveExit?: (exit: SandboxExit) => void;

  constructor(
    private readonly docker: Dockerode,
    private readonly container: Dockerode.Container,
    private readonly stream: Duplex,
  ) {
    this.docker.modem.demuxStream(stream, this.output, this.diagnostics);
    const endStreams = () => {
      this.output.end();
      this.diagnostics.end();
    };
    stream.once('end', endStreams);
    stream.once('close', endStreams);
    // A reset socket is an ended sandbox; `exited` reports it.
    stream.on('error', endStreams);
    this.exited = new Promise((resolve) => {
      this.resolveExit = resolve;
    });
  }

  get input() {
    return this.stream;
  }

  /** Called once the container has started: the wait answers when it is no longer running. */
  watch(): void {
    void this.waitForExit().then((exit) => this.resolveExit?.(exit));
  }

  private async waitForExit(): Promise<SandboxExit> {
    let code: number | null = null;
    try {
      const result = (await this.container.wait()) as { StatusCode?: number };
      code = result.StatusCode ?? null;
    } catch {
      // Removed underneath us (kill): the code is unknown.
    }
    let outOfMemory = false;
    if (!this.killedByUs) {
      const state = await this.container.inspect().then(
        (info) => info.State,
        () => undefined,
      );
      outOfMemory = state?.OOMKilled === true;
    }
    await this.remove();
    this.stream.destroy();
    return { code, signal: null, reason: exitReason(code, outOfMemory, this.killedByUs) };
  }

  private remove(): Promise<void> {
    this.removing ??= this.container.remove({ force: true }).catch(ignoreMissing);
    return this.removing;
  }

  async kill(): Promise<SandboxExit> {
    this.killedByUs = true;
    await this.remove();
    return this.exited;
  }

  /**
   * OOM kills in the container, counted in its memory cgroup (a local
   * engine); elsewhere the engine's flag, which says only whether the
   * container's own process was killed for memory.
   */
  async oomKills(): Promise<number> {
    this.initPid ??= await this.container.inspect().then(
      (info) => info.State?.Pid || undefined,
      () => undefined,
    );
    const counted = this.initPid === undefined ? undefined : await oomKillsOfProcess(this.initPid);
    if (counted !== undefined) return counted;
    const state = await this.container.inspect().then(
      (info) => info.State,
      () => undefined,
    );
    return state?.OOMKilled === true ? 1 : 0;
  }

  async usage(): Promise<SandboxUsage> {
    const [stats, top] = await Promise.all([
      this.container.stats({ stream: false }).catch(() => undefined),
      this.container.top({ ps_args: '-o pid' }).catch(() => undefined),
    ]);
    const rows = (top as { Processes?: string[][] } | undefined)?.Processes ?? [];
    const processIds = rows.map((row) => Number(row[0])).filter((pid) => Number.isInteger(pid));
    // The container's cgroup counts every process it ever ran, in nanoseconds.
    const cpuNanoseconds = stats?.cpu_stats?.cpu_usage?.total_usage;
    return {
      memoryBytes: stats?.memory_stats?.usage,
      processIds,
      cpuSeconds: typeof cpuNanoseconds === 'number' ? cpuNanoseconds / 1e9 : undefined,
    };
  }
}

function exitReason(code: number | null, outOfMemory: boolean, killedByUs: boolean): SandboxExit['reason'] {
  if (outOfMemory) return 'out-of-memory';
  if (killedByUs) return 'killed';
  // The engine reports a first process killed by a signal as 128 + signal: SIGXCPU is the CPU-time limit.
  if (code === 128 + 24) return 'cpu-limit';
  if (code === 128 + 9) return 'killed';
  return 'exited';
}

/**
 * The engine's default masked paths with sandcell's added. Setting MaskedPaths
 * replaces the engine's list, which differs between versions, so it is read
 * from a container created (never started) for the purpose.
 */
async function maskedPathsFor(docker: Dockerode, image: string): Promise<string[]> {
  const probe = await docker.createContainer({
    name: `sandcell-probe-${process.pid}-${randomUUID().slice(0, 8)}`,
    Image: image,
    Entrypoint: ['/bin/true'],
    Cmd: [],
    NetworkDisabled: true,
    Labels: { [MANAGED_LABEL]: '1', ...ownerLabels() },
    HostConfig: { NetworkMode: 'none' },
  });
  try {
    const defaults = (await probe.inspect()).HostConfig.MaskedPaths ?? [];
    return [...new Set([...defaults, ...EXTRA_MASKED_PATHS])];
  } finally {
    await probe.remove({ force: true }).catch(ignoreMissing);
  }
}

/** Removes containers and volumes labelled as sandcell's whose owning process on this machine is gone. */
export async function sweepStaleObjects(docker: Dockerode): Promise<number> {
  let removed = 0;
  const containers = await docker.listContainers({ all: true, filters: { label: [MANAGED_LABEL] } });
  await Promise.all(
    containers
      .filter((container) => ownerIsGone(container.Labels))
      .map(async (container) => {
        await docker.getContainer(container.Id).remove({ force: true }).catch(ignoreMissing);
        removed += 1;
      }),
  );
  const { Volumes: volumes } = await docker.listVolumes({ filters: { label: [MANAGED_LABEL] } });
  await Promise.all(
    (volumes ?? [])
      .filter((volume) => ownerIsGone(volume.Labels ?? undefined))
      .map(async (volume) => {
        await docker.getVolume(volume.Name).remove().catch(ignoreMissing);
        removed += 1;
      }),
  );
  return removed;
}

function withTimeout<T>(promise: Promise<T>, ms: number, message: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    promise,
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(message)), ms);
    }),
  ]).finally(() => clearTimeout(timer));
}

export function createDockerBackend(options: DockerBackendOptions = {}): DockerBackend {
  return new DockerBackend(options);
}
