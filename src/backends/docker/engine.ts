/**
 * Preparing a Docker Engine for sandcell's sandboxes, once per backend: the
 * engine reachable, the image present, the uid range free, leftovers of dead
 * sandcell processes swept, and which limits and budgets this engine lets
 * sandcell keep (DockerEngineReport, which `doctor` prints).
 */

import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import type Dockerode from 'dockerode';
import { BackendUnavailableError } from '../../errors.js';
import { ENVIRONMENT_IMAGE_REPOSITORY_PREFIX } from '../../image/recipe.js';
import { checkUidRangeIsFree, resolveUidRange, UidLeases, type UidRange } from '../uid-leases.js';
import { EXTRA_MASKED_PATHS, MANAGED_LABEL } from './container-config.js';
import { engineErrorText, ignoreMissing } from './engine-errors.js';
import { ownerIsGone, ownerLabels } from './owner.js';
import { type DockerCgroupTree, detectDockerCgroupTree, sweepStaleDockerCgroups } from './session-cgroup.js';

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

/** What preparing the engine reads of the backend's options (DockerBackendOptions). */
export interface EngineOptions {
  connectTimeoutMs?: number;
  uidRange?: string | UidRange;
  sessionCgroups?: 'auto' | 'off';
}

export interface PreparedEngine {
  report: DockerEngineReport;
  /** Where session cgroups go, when the report's memory budget is `cgroup-parent`. */
  cgroupTree?: DockerCgroupTree;
}

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

/** Pings the engine, checks the image, sweeps leftovers and finds what this engine can enforce. */
export async function prepareEngine(docker: Dockerode, image: string, options: EngineOptions): Promise<PreparedEngine> {
  const endpoint = describeEndpoint();
  let info: Record<string, unknown>;
  let version: Dockerode.DockerVersion;
  try {
    await withTimeout(docker.ping(), options.connectTimeoutMs ?? 5000, 'no answer');
    [info, version] = await Promise.all([docker.info(), docker.version()]);
  } catch (error) {
    throw new BackendUnavailableError(
      `Docker Engine is not reachable at ${endpoint} (${engineErrorText(error)}). Install it with \`apt-get install docker.io\` and start it (\`dockerd &\` or \`service docker start\`), or set DOCKER_HOST.`,
      { cause: error },
    );
  }
  let inspected: Dockerode.ImageInspectInfo;
  try {
    inspected = await docker.getImage(image).inspect();
  } catch (error) {
    throw new BackendUnavailableError(
      image.startsWith(ENVIRONMENT_IMAGE_REPOSITORY_PREFIX)
        ? `The environment image ${image} is not in Docker Engine at ${endpoint}. Build it with \`sandcell env build FILE --backend docker\`.`
        : `The runtime image ${image} is not in Docker Engine at ${endpoint}. Build it with \`sandcell image build\` (a few minutes, once per sandcell version).`,
      { cause: error },
    );
  }
  // The range is checked against this machine's accounts: the engine is expected to run here.
  const range = resolveUidRange(options.uidRange);
  await checkUidRangeIsFree(range);
  const swept = await sweepStaleObjects(docker);
  // After the sweep, so that a uid whose lease is swept has no container of a dead owner left.
  const uidLeases = new UidLeases({ range });
  await uidLeases.prepare();
  const maskedPaths = await maskedPathsFor(docker, image);
  const { memoryBudget, dataBudget, local, cgroupTree } = await detectBudgets(docker, info, options);
  const report: DockerEngineReport = {
    endpoint,
    serverVersion: version.Version,
    apiVersion: version.ApiVersion,
    image,
    imageId: inspected.Id,
    imageSize: inspected.Size,
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
  return { report, ...(cgroupTree ? { cgroupTree } : {}) };
}

/** Which budgets this engine lets sandcell keep (see DockerMemoryBudgetMode, DockerDataBudgetMode). */
async function detectBudgets(
  docker: Dockerode,
  info: Record<string, unknown>,
  options: EngineOptions,
): Promise<{
  memoryBudget: DockerMemoryBudgetMode;
  dataBudget: DockerDataBudgetMode;
  local: boolean;
  cgroupTree?: DockerCgroupTree;
}> {
  // A unix socket on this machine (it may still lead elsewhere: the first session checks).
  const modem = docker.modem as { getSocketPath?: () => Promise<string | undefined> | undefined };
  const socketPath = await modem.getSocketPath?.();
  const local = typeof socketPath === 'string' && existsSync(socketPath);
  let memoryBudget: DockerMemoryBudgetMode;
  let cgroupTree: DockerCgroupTree | undefined;
  if (options.sessionCgroups === 'off') {
    memoryBudget = { mode: 'kernel-memory', reason: 'turned off (sessionCgroups: off)' };
  } else {
    const detected = await detectDockerCgroupTree({
      local,
      driver: typeof info.CgroupDriver === 'string' ? info.CgroupDriver : undefined,
      version: typeof info.CgroupVersion === 'string' ? info.CgroupVersion : undefined,
    });
    if ('tree' in detected) {
      cgroupTree = detected.tree;
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
  return { memoryBudget, dataBudget, local, ...(cgroupTree ? { cgroupTree } : {}) };
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
