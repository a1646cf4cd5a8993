/**
 * The Docker objects of one session, as plain data: the kernel container,
 * the volume behind /mnt/data and the container that keeps that volume
 * mounted. Pure, so the isolation settings can be read (and unit-tested) in
 * one place.
 *
 * sandcell's seccomp filter is stacked on the engine's default profile (a call
 * passes only when both allow it), never shipped as a modified copy of that
 * profile, so it follows whatever the installed engine considers its default.
 */
import type Dockerode from 'dockerode';
import { SANDBOX_OOM_SCORE_ADJ } from '../../internal/oom-score.js';
import { INGRESS_SOCKET_MOUNT } from '../../network/ingress.js';
import { CERTIFICATE_BUNDLE, GATE_SOCKET_MOUNT } from '../../network/sandbox-proxy.js';
import type { SandboxLimits } from '../limits.js';
import {
  DATA_MOUNT,
  HOME_USER_MOUNT,
  KERNEL_MOUNT,
  SANDBOX_HOSTNAME,
  SUPERVISOR_PYTHON_FLAGS,
  SUPERVISOR_SCRIPT,
  WORKSPACE_MOUNT,
} from '../sandbox-environment.js';
import type { SandboxMount } from '../spec.js';
import { kernelMount, mountedKernelCommand } from './mounted-kernel.js';

/** Every object sandcell creates carries this label; sweeping looks for it. */
export const MANAGED_LABEL = 'org.sandcell.managed';
export const OWNER_LABELS = {
  host: 'org.sandcell.owner.host',
  boot: 'org.sandcell.owner.boot',
  pid: 'org.sandcell.owner.pid',
  start: 'org.sandcell.owner.start',
} as const;
export const SESSION_LABEL = 'org.sandcell.session';
/** The host uid a session's containers run as, so that no two sessions sharing an engine take the same one. */
export const UID_LABEL = 'org.sandcell.uid';
export const ROLE_LABEL = 'org.sandcell.role';

const PYTHON = '/usr/bin/python3';
const MiB = 1024 * 1024;

/** The supervisor (and all it starts) runs under sandcell's own seccomp filter, stacked on the engine's default profile. */
export const KERNEL_COMMAND = [
  PYTHON,
  '-I',
  '-B',
  `${KERNEL_MOUNT}/seccomp_filter.py`,
  '--exec',
  PYTHON,
  ...SUPERVISOR_PYTHON_FLAGS,
  `${KERNEL_MOUNT}/${SUPERVISOR_SCRIPT}`,
];

/** What every container of a session shares: no network, no capabilities, nothing writable but what we mount. */
function lockedDown(limits: Pick<SandboxLimits, 'tmpBytes'>): Dockerode.HostConfig {
  return {
    NetworkMode: 'none',
    CapDrop: ['ALL'],
    // The engine's default seccomp profile stays on (no seccomp= option); the kernel adds sandcell's filter on top.
    SecurityOpt: ['no-new-privileges:true'],
    ReadonlyRootfs: true,
    IpcMode: 'private',
    Tmpfs: { '/tmp': `rw,nosuid,nodev,size=${Math.floor(limits.tmpBytes)},mode=1777` },
    ShmSize: 64 * MiB,
    // A protocol stream is not a log: keep nothing on the engine's disk.
    LogConfig: { Type: 'none', Config: {} },
    // No docker-init, even where the engine adds one by default: the entrypoint (the supervisor) is the PID
    // namespace's init, to which the kernel delivers only the signals it handles, so the code it runs cannot kill
    // it. It reaps orphans itself.
    Init: false,
    // A host OOM takes sandboxes before anything else (set by the engine as root, so the code cannot lower it).
    OomScoreAdj: SANDBOX_OOM_SCORE_ADJ,
  };
}

/** The session's leased host uid and gid: containers run as them and the volume belongs to them. */
export interface SessionOwner {
  uid: number;
  gid: number;
}

/** NoCopy: the engine must not copy the image's /mnt/data (owner root) over the volume's root, owned by the session. */
function dataMount(volumeName: string, readOnly: boolean, target = DATA_MOUNT): Dockerode.MountSettings {
  return {
    Type: 'volume',
    Source: volumeName,
    Target: target,
    ReadOnly: readOnly,
    VolumeOptions: { NoCopy: true } as NonNullable<Dockerode.MountSettings['VolumeOptions']>,
  };
}

/** Masked in kernel containers beyond the engine's defaults: the host's boot arguments. */
export const EXTRA_MASKED_PATHS = ['/proc/cmdline'];

export interface KernelContainerInput {
  image: string;
  name: string;
  volumeName: string;
  limits: SandboxLimits;
  environment: Record<string, string>;
  labels: Record<string, string>;
  /** Every path to mask (this replaces the engine's list): its defaults and EXTRA_MASKED_PATHS. */
  maskedPaths: string[];
  owner: SessionOwner;
  /** The session's memory budget (a cgroup sandcell limits), when the engine can use one. */
  cgroupParent?: string;
  /**
   * Internet access: the host paths of the session's gate socket and of its certificate bundle, and
   * the gid the kernel must hold to connect when the socket could not be given to its uid.
   */
  network?: { socketPath: string; bundlePath: string; socketGroup?: number };
  /** The host path of the session's ingress socket (its ports' way in), and the gid to hold as for the gate's. */
  ingress?: { socketPath: string; socketGroup?: number };
  /** Host directories bound in (volumes), private to this container. */
  mounts?: SandboxMount[];
  /** An image without sandcell's kernel: the host directory of kernel files bound in, and the image's python. */
  mountedKernel?: { directory: string; python: string };
}

export function kernelContainerOptions(input: KernelContainerInput): Dockerode.ContainerCreateOptions {
  const { limits } = input;
  const memory = Math.floor(limits.memoryBytes);
  return {
    name: input.name,
    Image: input.image,
    Entrypoint: input.mountedKernel ? mountedKernelCommand(input.mountedKernel.python) : KERNEL_COMMAND,
    Cmd: [],
    User: `${input.owner.uid}:${input.owner.gid}`,
    WorkingDir: DATA_MOUNT,
    Hostname: SANDBOX_HOSTNAME,
    Env: Object.entries(input.environment).map(([name, value]) => `${name}=${value}`),
    Labels: { ...input.labels, [ROLE_LABEL]: 'kernel' },
    // The kernel protocol runs over the attached stdin/stdout: open stdin, no TTY.
    AttachStdin: true,
    AttachStdout: true,
    AttachStderr: true,
    OpenStdin: true,
    // Stdin closes when sandcell's attachment ends, so a kernel whose owner died sees EOF and exits.
    StdinOnce: true,
    Tty: false,
    NetworkDisabled: true,
    HostConfig: {
      ...lockedDown(limits),
      Memory: memory,
      // Equal to Memory: no swap on top.
      MemorySwap: memory,
      NanoCpus: Math.round(limits.cpus * 1e9),
      PidsLimit: Math.floor(limits.processes),
      // The same volume at E2B's working directory and at /workspace: one set of files under each name.
      Mounts: [
        dataMount(input.volumeName, false),
        dataMount(input.volumeName, false, HOME_USER_MOUNT),
        dataMount(input.volumeName, false, WORKSPACE_MOUNT),
        ...(input.network ? networkMounts(input.network) : []),
        ...(input.ingress
          ? [{ Type: 'bind' as const, Source: input.ingress.socketPath, Target: INGRESS_SOCKET_MOUNT, ReadOnly: false }]
          : []),
        ...(input.mountedKernel ? [kernelMount(input.mountedKernel.directory)] : []),
        ...(input.mounts ?? []).map((mount) => ({
          Type: 'bind' as const,
          Source: mount.source,
          Target: mount.target,
          ReadOnly: mount.readOnly,
          BindOptions: { Propagation: 'rprivate' as const },
        })),
      ],
      MaskedPaths: input.maskedPaths,
      Ulimits: [{ Name: 'core', Soft: 0, Hard: 0 }],
      ...socketGroups([input.network?.socketGroup, input.ingress?.socketGroup]),
      ...(input.cgroupParent ? { CgroupParent: input.cgroupParent } : {}),
    },
  };
}

/**
 * The engine unmounts a tmpfs volume when no container uses it, which would
 * empty /mnt/data on every kernel restart. A tiny container holds the volume
 * for the session's life; kernel containers come and go beside it.
 */
export function holderContainerOptions(input: {
  image: string;
  name: string;
  volumeName: string;
  labels: Record<string, string>;
  owner: SessionOwner;
  cgroupParent?: string;
}): Dockerode.ContainerCreateOptions {
  return {
    name: input.name,
    Image: input.image,
    Entrypoint: ['/bin/sleep', 'infinity'],
    Cmd: [],
    User: `${input.owner.uid}:${input.owner.gid}`,
    Hostname: SANDBOX_HOSTNAME,
    Labels: { ...input.labels, [ROLE_LABEL]: 'volume-holder' },
    Tty: false,
    NetworkDisabled: true,
    HostConfig: {
      ...lockedDown({ tmpBytes: MiB }),
      Memory: 16 * MiB,
      MemorySwap: 16 * MiB,
      PidsLimit: 4,
      NanoCpus: 0.1e9,
      Mounts: [dataMount(input.volumeName, true)],
      ...(input.cgroupParent ? { CgroupParent: input.cgroupParent } : {}),
    },
  };
}

/** /mnt/data: a tmpfs volume, capped at `dataBytes`, owned by the session's uid. */
export function volumeOptions(input: {
  name: string;
  dataBytes: number;
  labels: Record<string, string>;
  owner: SessionOwner;
}): Dockerode.VolumeCreateOptions {
  return {
    Name: input.name,
    Driver: 'local',
    DriverOpts: {
      type: 'tmpfs',
      device: 'tmpfs',
      o: `size=${Math.floor(input.dataBytes)},uid=${input.owner.uid},gid=${input.owner.gid},mode=0700,nosuid,nodev`,
    },
    Labels: { ...input.labels, [ROLE_LABEL]: 'data' },
  };
}

/** The groups the kernel holds beside its own, to connect to the host's sockets when they could not be given to it. */
function socketGroups(groups: Array<number | undefined>): { GroupAdd?: string[] } {
  const added = [...new Set(groups.filter((group): group is number => group !== undefined))];
  return added.length > 0 ? { GroupAdd: added.map(String) } : {};
}

/**
 * Internet access is the gate's socket alone: the container keeps `NetworkMode: none` (loopback only),
 * and the supervisor's forwarder carries the proxy's connections over this socket.
 */
function networkMounts(network: { socketPath: string; bundlePath: string }): Dockerode.MountSettings[] {
  return [
    { Type: 'bind', Source: network.socketPath, Target: GATE_SOCKET_MOUNT, ReadOnly: false },
    { Type: 'bind', Source: network.bundlePath, Target: CERTIFICATE_BUNDLE, ReadOnly: true },
  ];
}
