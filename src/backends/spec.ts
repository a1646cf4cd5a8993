/**
 * Backend specification, version 1: what sandcell needs from a sandbox
 * technology. The session layer speaks the kernel protocol over the channel;
 * a backend only has to start the kernel in isolation, keep the session's
 * /mnt/data across restarts, and stop everything it started.
 */
import type { Readable, Writable } from 'node:stream';
import type { SandboxNetwork } from '../network/gate-channel.js';
import type { SandboxLimits } from './limits.js';

export interface SandboxBackend {
  readonly specificationVersion: 'v1';
  /** Short name used in messages and options: `bubblewrap`, `docker`, … */
  readonly name: string;

  /**
   * Resolves when sandboxes can start here. Rejects with
   * `BackendUnavailableError` whose message says what to install or enable.
   */
  ensureAvailable(options?: { signal?: AbortSignal }): Promise<void>;

  /** Creates the storage behind a session's /mnt/data; it outlives sandbox restarts. */
  createVolume(options: CreateVolumeOptions): Promise<SandboxVolume>;

  /** Starts the kernel in a new sandbox on `volume`. */
  start(options: StartSandboxOptions): Promise<Sandbox>;

  /**
   * A backend like this one (same host set-up, limits, client) whose
   * sandboxes start on another root: a root filesystem directory for
   * bubblewrap, an image for Docker. This is how a session runs in a built
   * environment. Optional: a backend without it runs the default environment only.
   */
  withRoot?(root: string, options?: RootOptions): SandboxBackend;

  /**
   * Whether its sandboxes take an ingress (StartSandboxOptions.ingress): the host's way in to the
   * ports something listens on inside them. Without it a session's ports cannot be reached.
   */
  readonly servesPorts?: boolean;

  /**
   * Whether its sandboxes take host directories bound in (StartSandboxOptions.mounts): how volumes are
   * mounted. Without it a session with volumes is refused (a remote Docker Engine sees none of this host's).
   */
  readonly mountsDirectories?: boolean;

  /**
   * Starts a sandbox from a checkpoint one of its sandboxes wrote (Sandbox.checkpoint): its
   * processes, memory and open files as they were, on `options.volume` (which must hold the files the
   * checkpoint's sandbox had open). Its supervisor does not announce itself again: it goes on where it
   * was. Optional: a backend without it keeps state by the kernels' own save and load.
   */
  restore?(options: StartSandboxOptions, checkpoint: SandboxCheckpoint): Promise<Sandbox>;
}

/** A whole sandbox as its runtime saved it (gVisor's checkpoint), ready to be restored. */
export interface SandboxCheckpoint {
  /** The snapshot it came from, for messages. */
  snapshotId: string;
  /** A host directory holding the runtime's image files, each a plain file. */
  directory: string;
  /** What the backend needs beside the image to restore it (the uid it ran as, the runtime's version). */
  about: CheckpointAbout;
}

export type CheckpointAbout = Record<string, string | number>;

/** How a root other than sandcell's own is run (`withRoot`). */
export interface RootOptions {
  /**
   * The root is an image sandcell did not build (Docker: an existing image or
   * a Dockerfile's): it has no sandcell kernel, so the host's kernel files are
   * mounted in read-only and this interpreter runs them.
   */
  mountedKernel?: MountedKernelOptions;
}

export interface MountedKernelOptions {
  /** The image's python3, as an absolute path (it may be /usr/local/bin/python3). */
  python: string;
  /** Whether matplotlib_inline is importable there; without it figures use matplotlib's own default backend. */
  matplotlibInline: boolean;
}

export interface CreateVolumeOptions {
  sessionId: string;
  limits: SandboxLimits;
  signal?: AbortSignal;
}

export interface SandboxVolume {
  readonly sessionId: string;
  /** The host uid and gid the session's sandboxes run as, when not this process's own (leased as root, or by Docker). */
  readonly owner?: { readonly uid: number; readonly gid: number };
  /** Removes the storage and everything in it. Idempotent. */
  dispose(): Promise<void>;
  /**
   * What the files hold, where the backend can tell: they are RAM that counts
   * against the session's memory budget, which error messages explain.
   */
  usedBytes?(): Promise<number | undefined>;
  /**
   * Called after each execution: the files may have changed, so a volume that
   * shares a server-wide budget for files can give back or take room now.
   */
  usageChanged?(): Promise<void>;
}

export interface StartSandboxOptions {
  volume: SandboxVolume;
  limits: SandboxLimits;
  /** Options for the kernel (JSON), passed to it at start. */
  kernelOptions: Record<string, unknown>;
  /** Extra environment variables the caller chose to pass in; nothing else leaks from the host. */
  environment?: Record<string, string>;
  /**
   * Internet access through the session's gate: the backend binds the gate's socket in at
   * GATE_SOCKET_MOUNT (src/network/sandbox-proxy.ts) and the bundle at CERTIFICATE_BUNDLE. Absent: no
   * network at all. A backend that cannot do this must refuse to start rather than ignore it.
   */
  network?: SandboxNetwork;
  /**
   * The host's way in to the sandbox's ports (src/network/ingress.ts): the backend binds this socket
   * in at INGRESS_SOCKET_MOUNT and passes `ingress: { socket: INGRESS_SOCKET_MOUNT }` in the kernel's
   * options. A backend that cannot (a remote Docker Engine) leaves both out: the supervisor then
   * refuses `port-connect`, and the session says its ports cannot be reached.
   */
  ingress?: SandboxIngress;
  /**
   * Host directories bound into the sandbox (volumes, src/volumes/session-mounts.ts), each at its
   * target, read-only where asked. Prepared on the host beforehand: the backend binds them as they are.
   */
  mounts?: SandboxMount[];
  signal?: AbortSignal;
}

export interface SandboxMount {
  /** A host directory (as root, an idmapped mount staged for this session). */
  source: string;
  /** An absolute path in the sandbox, outside its system (volume-paths.ts checks it). */
  target: string;
  readOnly: boolean;
}

export interface SandboxIngress {
  socketPath: string;
  /** The gid the sandbox must hold to connect, when the socket could not be given to its uid. */
  socketGroup?: number;
}

export interface SandboxExit {
  code: number | null;
  signal: NodeJS.Signals | null;
  /** Why it ended when the backend knows: the memory limit was hit, it was killed by us, … */
  reason?: 'out-of-memory' | 'killed' | 'cpu-limit' | 'exited';
}

/** A running sandbox: a duplex channel to the kernel plus lifecycle. */
export interface Sandbox {
  /** Requests to the kernel (newline-delimited JSON). */
  readonly input: Writable;
  /** Replies and events from the kernel (newline-delimited JSON). */
  readonly output: Readable;
  /** Diagnostics from the sandbox runtime before the kernel took over its stderr. */
  readonly diagnostics: Readable;
  /** Settles once every process of the sandbox has ended. */
  readonly exited: Promise<SandboxExit>;
  /** Kills every process of the sandbox and releases its resources (not the volume). Idempotent. */
  kill(): Promise<SandboxExit>;
  /** Host-side resource usage, where the backend can measure it. */
  usage?(): Promise<SandboxUsage>;
  /**
   * How many processes of this sandbox the OOM killer has killed since it
   * started, where the backend can count them: one kernel of several can die
   * for memory while the sandbox lives on, and this is how the host says so.
   */
  oomKills?(): Promise<number>;
  /**
   * Saves the whole sandbox into `directory` (an empty host directory) and ends it, where the backend
   * can (its `restore` takes what this returns). The caller makes sure nothing runs in it meanwhile.
   */
  checkpoint?(directory: string): Promise<CheckpointAbout>;
}

export interface SandboxUsage {
  memoryBytes?: number;
  processIds?: number[];
  /** CPU time the sandbox's processes have used since it started (user and system), in seconds. */
  cpuSeconds?: number;
}
