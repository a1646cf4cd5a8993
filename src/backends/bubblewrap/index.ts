/**
 * The bubblewrap backend (the default): each sandbox is a bwrap process with
 * every namespace unshared, a seccomp filter, no capabilities, a read-only
 * minimal system and capped writable /mnt/data and /tmp. As root, each
 * session's sandboxes run as its own leased, unprivileged host uid, inside
 * their own cgroups. This is the backend's contract; its parts are what it
 * prepares on the host (host-preparation.ts), whether a start forks or execs
 * (fork-template.ts), the two kinds of sandbox (forked-sandbox.ts,
 * exec-sandbox.ts), and the bwrap command line, cgroups and volumes.
 */

import { randomUUID } from 'node:crypto';
import { BackendUnavailableError, SandboxStartError } from '../../errors.js';
import { onceUntilFailure } from '../../internal/once-until-failure.js';
import { kernelFiles } from '../../kernel/index.js';
import { certificateBundle } from '../../network/certificate-bundle.js';
import { INGRESS_SOCKET_MOUNT } from '../../network/ingress.js';
import {
  CERTIFICATE_BUNDLE,
  forwarderOptions,
  offlineEnvironment,
  proxyEnvironment,
} from '../../network/sandbox-proxy.js';
import type { SandboxLimits } from '../limits.js';
import { KERNEL_MOUNT, sandboxEnvironment } from '../sandbox-environment.js';
import type { CreateVolumeOptions, Sandbox, SandboxBackend, StartSandboxOptions } from '../spec.js';
import { sandboxFileSources } from './arguments.js';
import { SandboxCgroup } from './cgroup.js';
import { startByExec } from './exec-sandbox.js';
import { ForkTemplate } from './fork-template.js';
import { ForkedSandbox } from './forked-sandbox.js';
import { type BubblewrapHostReport, prepareHost } from './host-preparation.js';
import { type BubblewrapBackendOptions, startMode } from './options.js';
import { BubblewrapVolume, createSessionVolume } from './volume.js';

export type { BubblewrapHostReport } from './host-preparation.js';
export type { BubblewrapBackendOptions, StartMode } from './options.js';

export class BubblewrapBackend implements SandboxBackend {
  readonly specificationVersion = 'v1' as const;
  readonly name = 'bubblewrap';
  readonly servesPorts = true;
  readonly mountsDirectories = true;
  private readonly prepareOnce = onceUntilFailure(() => prepareHost(this.options));
  private readonly rooted = new Map<string, BubblewrapBackend>();
  private readonly forkTemplate: ForkTemplate;

  constructor(private readonly options: BubblewrapBackendOptions = {}) {
    this.forkTemplate = new ForkTemplate(options);
  }

  /** The same backend on another root filesystem (an environment's), made once per directory. */
  withRoot(root: string): BubblewrapBackend {
    let backend = this.rooted.get(root);
    if (!backend) {
      backend = new BubblewrapBackend({ ...this.options, rootfs: root });
      this.rooted.set(root, backend);
    }
    return backend;
  }

  ensureAvailable(): Promise<void> {
    return this.prepare().then(() => undefined);
  }

  /** Host facts after preparation (creates the runtime directory and seccomp filter when missing). */
  report(): Promise<BubblewrapHostReport> {
    return this.prepare();
  }

  private prepare(): Promise<BubblewrapHostReport> {
    return this.prepareOnce();
  }

  /** The session's storage, which holds the session's host uid (as root) for its whole life. */
  async createVolume(options: CreateVolumeOptions): Promise<BubblewrapVolume> {
    const prepared = await this.prepare();
    return createSessionVolume(
      { ...prepared, sessionsDirectory: prepared.runtime.sessionsDirectory },
      options,
      'bubblewrap',
    );
  }

  async start(options: StartSandboxOptions): Promise<Sandbox> {
    const prepared = await this.prepare();
    if (!(options.volume instanceof BubblewrapVolume)) {
      throw new SandboxStartError('The bubblewrap backend needs a volume it created (createVolume).');
    }
    options.signal?.throwIfAborted();
    const limits = options.limits;
    const cgroup = prepared.cgroups
      ? await SandboxCgroup.create(
          prepared.cgroups,
          `sandcell-${process.pid}-${randomUUID().slice(0, 8)}`,
          limits,
          options.volume.memoryBudget,
        )
      : undefined;
    try {
      const network = options.network;
      const environment = startEnvironment(options, cgroup);
      const bundle = network ? await certificateBundle(prepared.systemRoot, network.trustedCertificates) : undefined;
      const owner = options.volume.owner;
      if (!owner && startMode(this.options) === 'fork') {
        throw new BackendUnavailableError(
          "Forked sessions (SANDCELL_START=fork) need sandcell to run as root: each fork becomes its session's own host uid. Use SANDCELL_START=auto or exec.",
        );
      }
      const template = owner ? await this.forkTemplate.forStart(prepared, options.kernelOptions) : undefined;
      if (template && owner) {
        const files = sandboxFileSources(prepared.runtime);
        for (const name of kernelFiles()) delete files[`${KERNEL_MOUNT}/${name}`];
        const forking = template.fork({
          uid: owner.uid,
          gid: owner.gid,
          cgroupProcs: cgroup?.procsFiles ?? [],
          dataDirectory: options.volume.directory,
          tmpBytes: limits.tmpBytes,
          ...(network ? { gateSocket: network.socketPath } : {}),
          ...(options.ingress ? { ingressSocket: options.ingress.socketPath } : {}),
          ...(options.mounts?.length ? { mounts: options.mounts } : {}),
          environment,
          files,
          ...(bundle !== undefined ? { contents: { [CERTIFICATE_BUNDLE]: Buffer.from(bundle) } } : {}),
        });
        try {
          return await ForkedSandbox.started(forking, cgroup);
        } catch (error) {
          if (startMode(this.options) !== 'auto' || !(error instanceof SandboxStartError)) throw error;
          // A fork that fails costs this start its speed, not its session: it starts by exec, and so does every
          // later one (a fork that fails here would fail again, and each try would add its cost); doctor says why.
          this.forkTemplate.giveUp(`a forked session could not start: ${error.message}`);
          // Whatever of the fork got as far as the cgroups is not the exec's to share them with.
          await cgroup?.killAll();
        }
      }
      const pythonPath = this.options.pythonPath ?? '/usr/bin/python3';
      return await startByExec({ prepared, options, cgroup, environment, bundle, pythonPath });
    } catch (error) {
      await cgroup?.remove();
      throw error;
    }
  }

  /** How this backend's sessions start, and why not by fork when they do not (for doctor). */
  startPath(): { mode: 'fork' | 'exec'; reason?: string } {
    return this.forkTemplate.startPath();
  }
}

/**
 * The sandbox's environment variables for a start: the kernel's options (its rlimits, the forwarder's and the
 * ingress's sockets) among them, the gate's proxy settings with a network, and `preload` (gVisor's shim) first.
 */
export function startEnvironment(
  options: StartSandboxOptions,
  cgroup: SandboxCgroup | undefined,
  preload: Record<string, string> = {},
): Record<string, string> {
  const network = options.network;
  const kernelOptions = {
    ...options.kernelOptions,
    limits: rlimitsFor(options.limits, cgroup),
    ...(network ? { network: forwarderOptions() } : {}),
    ...(options.ingress ? { ingress: { socket: INGRESS_SOCKET_MOUNT } } : {}),
  };
  // A session's own variables may change pip's offline default, not the gate's proxy settings.
  const extra = {
    ...preload,
    ...(network
      ? { ...options.environment, ...proxyEnvironment(), ...network.environment }
      : { ...offlineEnvironment(), ...options.environment }),
  };
  return sandboxEnvironment({ kernelOptions, threads: options.limits.cpus, extra });
}

/** Limits the kernel applies to itself with setrlimit before user code runs (gVisor's Sentry keeps them too). */
function rlimitsFor(limits: SandboxLimits, cgroup: SandboxCgroup | undefined): Record<string, number> {
  return {
    processes: limits.processes,
    cpuSeconds: limits.cpuSeconds,
    fileSizeBytes: limits.fileSizeBytes,
    openFiles: limits.openFiles,
    // Without a memory cgroup, the address space of each process is the bound.
    ...(cgroup?.limitsMemory ? {} : { addressSpaceBytes: limits.memoryBytes }),
  };
}

/** Creates the default backend. Reads environment defaults lazily, when first used. */
export function createBubblewrapBackend(options: BubblewrapBackendOptions = {}): BubblewrapBackend {
  return new BubblewrapBackend(options);
}
