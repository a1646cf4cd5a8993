/**
 * The Docker backend: one locked-down container per kernel, talking to Docker
 * Engine through its API (dockerode; DOCKER_HOST is honoured). The kernel
 * speaks the same protocol as on bubblewrap, over the container's attached
 * stdin/stdout. /mnt/data is a size-capped tmpfs volume that outlives kernel
 * restarts; closing a session removes everything it created, and objects left
 * by a sandcell process that died are removed at the next start. Each session
 * runs as its own host uid, leased on this machine (see uid-leases.ts).
 */

import { randomUUID } from 'node:crypto';
import { type Duplex, PassThrough } from 'node:stream';
import type Dockerode from 'dockerode';
import { BackendUnavailableError, SandboxStartError } from '../../errors.js';
import { runtimeImageTag } from '../../image/recipe.js';
import { onceUntilFailure } from '../../internal/once-until-failure.js';
import type { SandboxLimits } from '../limits.js';
import { sandboxEnvironment } from '../sandbox-environment.js';
import type {
  CreateVolumeOptions,
  Sandbox,
  SandboxBackend,
  SandboxExit,
  SandboxUsage,
  SandboxVolume,
  StartSandboxOptions,
} from '../spec.js';
import { checkUidRangeIsFree, resolveUidRange, type UidLease, UidLeases, type UidRange } from '../uid-leases.js';
import {
  EXTRA_MASKED_PATHS,
  holderContainerOptions,
  KERNEL_COMMAND,
  kernelContainerOptions,
  MANAGED_LABEL,
  SESSION_LABEL,
  UID_LABEL,
  volumeOptions,
} from './container-config.js';
import { ownerIsGone, ownerLabels } from './owner.js';
import type { DockerBackendSettings } from './settings.js';

export interface DockerBackendOptions extends DockerBackendSettings {
  /** A configured client. @default a client for DOCKER_HOST, else /var/run/docker.sock */
  docker?: Dockerode;
  /**
   * Host uids leased to sessions, one each, as `START-END` or a range; no
   * account or subordinate id range of this machine may overlap it.
   * @default 1974206464-1974271999 (DEFAULT_UID_RANGE; env SANDCELL_UID_RANGE)
   */
  uidRange?: string | UidRange;
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
  /** Paths kernel containers see masked: the engine's defaults plus sandcell's (EXTRA_MASKED_PATHS). */
  maskedPaths: string[];
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
  private readonly prepareOnce = onceUntilFailure(() => this.doPrepare());

  constructor(private readonly options: DockerBackendOptions = {}) {
    this.client = options.docker;
    this.image = options.image ?? process.env.SANDCELL_DOCKER_IMAGE ?? runtimeImageTag();
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
        `Docker Engine is not reachable at ${endpoint} (${errorText(error)}). Install it with \`apt-get install docker.io\` and start it (\`dockerd &\` or \`service docker start\`), or set DOCKER_HOST.`,
        { cause: error },
      );
    }
    let image: Dockerode.ImageInspectInfo;
    try {
      image = await this.docker.getImage(this.image).inspect();
    } catch (error) {
      throw new BackendUnavailableError(
        `The runtime image ${this.image} is not in Docker Engine at ${endpoint}. Build it with \`sandcell image build\` (a few minutes, once per sandcell version).`,
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
      maskedPaths,
      uidLeases,
    };
  }

  async createVolume(options: CreateVolumeOptions): Promise<DockerVolume> {
    const { uidLeases } = await this.prepare();
    options.signal?.throwIfAborted();
    const owner = await this.leaseUid(uidLeases, options.sessionId);
    const suffix = `${process.pid}-${options.sessionId.slice(0, 12)}-${randomUUID().slice(0, 6)}`;
    const labels = {
      [MANAGED_LABEL]: '1',
      [SESSION_LABEL]: options.sessionId,
      [UID_LABEL]: String(owner.uid),
      ...ownerLabels(),
    };
    const volumeName = `sandcell-data-${suffix}`;
    try {
      await this.docker.createVolume(
        volumeOptions({ name: volumeName, dataBytes: options.limits.dataBytes, labels, owner }),
      );
      const holder = await this.docker.createContainer(
        holderContainerOptions({ image: this.image, name: `sandcell-holder-${suffix}`, volumeName, labels, owner }),
      );
      const volume = new DockerVolume(this.docker, options.sessionId, volumeName, holder, labels, owner);
      try {
        await holder.start();
      } catch (error) {
        await volume.dispose();
        throw error;
      }
      return volume;
    } catch (error) {
      await this.docker
        .getVolume(volumeName)
        .remove()
        .catch(() => undefined);
      await owner.release();
      throw new SandboxStartError(`Could not create the session's /mnt/data volume: ${errorText(error)}`, {
        cause: error,
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

  async start(options: StartSandboxOptions): Promise<Sandbox> {
    const { maskedPaths } = await this.prepare();
    if (!(options.volume instanceof DockerVolume)) {
      throw new SandboxStartError('The docker backend needs a volume it created (createVolume).');
    }
    options.signal?.throwIfAborted();
    const kernelOptions = { ...options.kernelOptions, limits: rlimitsFor(options.limits) };
    const create = kernelContainerOptions({
      image: this.image,
      name: `sandcell-kernel-${process.pid}-${randomUUID().slice(0, 12)}`,
      volumeName: options.volume.name,
      limits: options.limits,
      environment: sandboxEnvironment({ kernelOptions, threads: options.limits.cpus, extra: options.environment }),
      labels: options.volume.labels,
      maskedPaths,
      owner: options.volume.owner,
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
      throw new SandboxStartError(`Could not start the kernel container (${KERNEL_COMMAND[0]}): ${errorText(error)}`, {
        cause: error,
      });
    }
  }
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
  ) {}

  dispose(): Promise<void> {
    this.disposed ??= (async () => {
      await this.removeObjects();
      await this.owner.release();
    })();
    return this.disposed;
  }

  /** The holder, then the volume. Should this fail, the uid stays leased until this process ends. */
  private async removeObjects(): Promise<void> {
    await this.holder.remove({ force: true }).catch(ignoreMissing);
    // The engine may still be releasing the last kernel container's mount: retry briefly.
    for (let attempt = 0; ; attempt += 1) {
      try {
        await this.docker.getVolume(this.name).remove();
        return;
      } catch (error) {
        if (statusOf(error) === 404) return;
        if (statusOf(error) !== 409 || attempt >= 20) throw error;
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    }
  }
}

class DockerSandbox implements Sandbox {
  readonly exited: Promise<SandboxExit>;
  readonly output = new PassThrough();
  readonly diagnostics = new PassThrough();
  private killedByUs = false;
  private removing?: Promise<void>;
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

  async usage(): Promise<SandboxUsage> {
    const [stats, top] = await Promise.all([
      this.container.stats({ stream: false }).catch(() => undefined),
      this.container.top({ ps_args: '-o pid' }).catch(() => undefined),
    ]);
    const rows = (top as { Processes?: string[][] } | undefined)?.Processes ?? [];
    const processIds = rows.map((row) => Number(row[0])).filter((pid) => Number.isInteger(pid));
    return { memoryBytes: stats?.memory_stats?.usage, processIds };
  }
}

function exitReason(code: number | null, outOfMemory: boolean, killedByUs: boolean): SandboxExit['reason'] {
  if (outOfMemory) return 'out-of-memory';
  if (killedByUs) return 'killed';
  // docker-init reports a child killed by a signal as 128 + signal: SIGXCPU is the CPU-time limit.
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

function statusOf(error: unknown): number | undefined {
  return (error as { statusCode?: number }).statusCode;
}

function ignoreMissing(error: unknown): void {
  if (statusOf(error) !== 404 && statusOf(error) !== 409) throw error;
}

function errorText(error: unknown): string {
  const json = (error as { json?: { message?: string } }).json;
  return json?.message ?? (error as Error).message ?? String(error);
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
