/**
 * The gVisor backend: each sandbox is a `runsc` sandbox, whose processes'
 * system calls are served by gVisor's own kernel (the Sentry) in user space,
 * never by the host's: a bug in the host kernel reachable by a system call is
 * no longer an escape. runsc is used directly (no Docker), as root, with no
 * network device, each session's files on its own tmpfs and each session as
 * its own leased host uid, inside the same per-session cgroups as bubblewrap's
 * (the volume, the uid lease and the cgroups are bubblewrap's own pieces).
 * This is the backend's contract; its parts are the host's preparation
 * (host-preparation.ts, platform.ts), the OCI spec (oci-spec.ts), the bundle
 * (bundle.ts) and the running sandbox (sandbox.ts).
 */
import { randomUUID } from 'node:crypto';
import { lchown, lstat, readdir } from 'node:fs/promises';
import path from 'node:path';
import { SandboxStartError } from '../../errors.js';
import { onceUntilFailure } from '../../internal/once-until-failure.js';
import { certificateBundle } from '../../network/certificate-bundle.js';
import { CERTIFICATE_BUNDLE } from '../../network/sandbox-proxy.js';
import { SnapshotIncompatibleError } from '../../snapshots/snapshot-errors.js';
import { sandboxFileSources } from '../bubblewrap/arguments.js';
import { SandboxCgroup } from '../bubblewrap/cgroup.js';
import { syntheticEtcFiles } from '../bubblewrap/host-setup.js';
import { startEnvironment } from '../bubblewrap/index.js';
import { BubblewrapVolume, createSessionVolume } from '../bubblewrap/volume.js';
import { KERNEL_MOUNT } from '../sandbox-environment.js';
import type {
  CreateVolumeOptions,
  Sandbox,
  SandboxBackend,
  SandboxCheckpoint,
  SandboxVolume,
  StartSandboxOptions,
} from '../spec.js';
import type { UidLease } from '../uid-leases.js';
import { SandboxBundle } from './bundle.js';
import { type GvisorHostReport, prepareGvisorHost } from './host-preparation.js';
import { buildOciSpec, supervisorCommand } from './oci-spec.js';
import type { GvisorBackendOptions } from './options.js';
import { GvisorSandbox } from './sandbox.js';

export type { GvisorHostReport } from './host-preparation.js';
export type { GvisorBackendOptions, GvisorPlatform, GvisorPlatformChoice } from './options.js';

export class GvisorBackend implements SandboxBackend {
  readonly specificationVersion = 'v1' as const;
  readonly name = 'gvisor';
  readonly servesPorts = true;
  /**
   * Not yet: a volume's idmapped mount maps only the volumes' file uid to the session's, and this runsc's
   * gofer creates files as root (then hands them to the sandbox's uid), which such a mount refuses with
   * EOVERFLOW. A session with volumes is refused with VolumesUnavailableError rather than half working.
   */
  readonly mountsDirectories = false;
  private readonly prepareOnce = onceUntilFailure(() => prepareGvisorHost(this.options));
  private readonly rooted = new Map<string, GvisorBackend>();
  /** The uid a session's sandboxes run as where it is not the volume's lease: one restored from a checkpoint. */
  private readonly runAs = new WeakMap<SandboxVolume, { uid: number; gid: number }>();

  constructor(private readonly options: GvisorBackendOptions = {}) {}

  /** The same backend on another root filesystem (an environment's), made once per directory. */
  withRoot(root: string): GvisorBackend {
    let backend = this.rooted.get(root);
    if (!backend) {
      backend = new GvisorBackend({ ...this.options, rootfs: root });
      this.rooted.set(root, backend);
    }
    return backend;
  }

  ensureAvailable(): Promise<void> {
    return this.prepareOnce().then(() => undefined);
  }

  /** Host facts after preparation: runsc, its platform and why (for doctor). */
  report(): Promise<GvisorHostReport> {
    return this.prepareOnce();
  }

  async createVolume(options: CreateVolumeOptions): Promise<BubblewrapVolume> {
    const prepared = await this.prepareOnce();
    return createSessionVolume(
      { ...prepared, sessionsDirectory: prepared.runtime.sessionsDirectory },
      options,
      'gvisor',
    );
  }

  start(options: StartSandboxOptions): Promise<Sandbox> {
    return this.launch(options);
  }

  /**
   * A sandbox restored from a checkpoint of one of this backend's (`GvisorSandbox.checkpoint`): the
   * processes keep the uid they ran as (their credentials are in the image), so the session's files go
   * to that uid, and its later sandboxes run as it too.
   */
  async restore(options: StartSandboxOptions, checkpoint: SandboxCheckpoint): Promise<Sandbox> {
    const prepared = await this.prepareOnce();
    const { runsc, uid, gid } = checkpoint.about;
    if (runsc !== prepared.version) {
      throw new SnapshotIncompatibleError(
        checkpoint.snapshotId,
        `it is a checkpoint written by ${String(runsc)}, and this host's is ${prepared.version}; only the runsc that wrote a checkpoint reads it`,
      );
    }
    if (!isLeasedId(uid) || !isLeasedId(gid)) {
      throw new SnapshotIncompatibleError(checkpoint.snapshotId, 'its checkpoint names no uid of a sandbox');
    }
    const volume = sessionVolume(options);
    await chownTree(volume.directory, uid, gid);
    // The session's sockets (its gate's, its ingress's) are its uid's alone: they go to that uid too.
    for (const socket of [options.network?.socketPath, options.ingress?.socketPath]) {
      if (socket !== undefined) await lchown(socket, uid, gid);
    }
    this.runAs.set(volume, { uid, gid });
    return this.launch(options, checkpoint.directory);
  }

  private async launch(options: StartSandboxOptions, imageDirectory?: string): Promise<Sandbox> {
    const prepared = await this.prepareOnce();
    const volume = sessionVolume(options);
    options.signal?.throwIfAborted();
    const { uid, gid } = this.runAs.get(volume) ?? volume.owner;
    const limits = options.limits;
    const id = `sandcell-${process.pid}-${randomUUID().slice(0, 12)}`;
    const cgroup = prepared.cgroups
      ? await SandboxCgroup.create(
          prepared.cgroups,
          id,
          { ...limits, processes: hostTasksFor(limits.processes) },
          volume.memoryBudget,
        )
      : undefined;
    let bundle: SandboxBundle | undefined;
    try {
      bundle = await SandboxBundle.create(prepared.bundlesDirectory, id);
      const network = options.network;
      // The supervisor reads the host through a thread: after a restore, this runsc wakes epoll for a host
      // descriptor once and never again (sandcell_host_pump.py).
      const kernelOptions = { ...options.kernelOptions, hostInputThread: true };
      const environment = startEnvironment({ ...options, kernelOptions }, cgroup, prepared.statxShim?.environment);
      // The kernel files as one directory (each bind costs the gofer threads of its own). /proc/cmdline is empty,
      // as on the other backends, rather than gVisor's own made-up boot line.
      const files: Record<string, string> = {};
      for (const [target, source] of Object.entries(sandboxFileSources(prepared.runtime))) {
        if (!target.startsWith(`${KERNEL_MOUNT}/`)) files[target] = source;
      }
      files[KERNEL_MOUNT] = prepared.runtime.kernelDirectory;
      // The sandbox runs as the session's host uid (this runsc keeps no user namespace of its own), named `sandbox`.
      const { passwd, group } = syntheticEtcFiles(uid, gid);
      files['/etc/passwd'] = await bundle.addFile('passwd', passwd as string);
      files['/etc/group'] = await bundle.addFile('group', group as string);
      if (network) {
        const bundleText = await certificateBundle(prepared.systemRoot, network.trustedCertificates);
        files[CERTIFICATE_BUNDLE] = await bundle.addFile('ca-certificates.crt', bundleText);
      }
      await bundle.writeSpec(
        buildOciSpec({
          rootDirectory: bundle.rootDirectory,
          systemRoot: prepared.systemRoot,
          presentEtcFiles: prepared.presentEtcFiles,
          files,
          dataDirectory: volume.directory,
          tmpBytes: limits.tmpBytes,
          environment,
          command: supervisorCommand(this.options.pythonPath ?? '/usr/bin/python3'),
          uid,
          gid,
          ...(network ? { gateSocket: network.socketPath } : {}),
          ...(options.ingress ? { ingressSocket: options.ingress.socketPath } : {}),
          ...(options.mounts?.length ? { mounts: options.mounts } : {}),
        }),
      );
      return await GvisorSandbox.start(prepared, bundle, cgroup, { runsc: prepared.version, uid, gid }, imageDirectory);
    } catch (error) {
      await bundle?.remove();
      await cgroup?.remove();
      throw error;
    }
  }
}

function sessionVolume(options: StartSandboxOptions): BubblewrapVolume & { owner: UidLease } {
  const volume = options.volume;
  if (!(volume instanceof BubblewrapVolume) || !volume.owner) {
    throw new SandboxStartError('The gvisor backend needs a volume it created (createVolume).');
  }
  return volume as BubblewrapVolume & { owner: UidLease };
}

function isLeasedId(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value > 0;
}

/**
 * Gives every entry under `directory` (itself included) to `uid`:`gid`, links themselves and never what
 * they point to, without crossing into another file system. Only while no sandbox runs on it.
 */
async function chownTree(directory: string, uid: number, gid: number): Promise<void> {
  const top = await lstat(directory);
  const walk = async (entry: string): Promise<void> => {
    const stats = await lstat(entry);
    if (stats.dev !== top.dev) return;
    await lchown(entry, uid, gid);
    if (!stats.isDirectory()) return;
    for (const name of await readdir(entry)) await walk(path.join(entry, name));
  };
  await walk(directory);
}

/**
 * The pids cgroup's bound for a sandbox of `processes`: it counts host tasks, the Sentry's and the gofer's
 * threads (Go runtimes, a connection per bind) and, on the ptrace platform, a stub process with threads of
 * its own for each of the sandbox's processes (measured: a fork bomb of 55 processes took 576 host tasks).
 * The sandbox's processes themselves are bounded by RLIMIT_NPROC, which the Sentry keeps; this is a backstop.
 */
function hostTasksFor(processes: number): number {
  return RUNSC_THREADS + processes * HOST_TASKS_PER_PROCESS;
}

const RUNSC_THREADS = 512;
const HOST_TASKS_PER_PROCESS = 16;

export function createGvisorBackend(options: GvisorBackendOptions = {}): GvisorBackend {
  return new GvisorBackend(options);
}
