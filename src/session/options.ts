/** Options of a session, their defaults and their validation. */
import { resolveLimits, type SandboxLimits } from '../backends/limits.js';
import type { BackendName } from '../backends/select.js';
import type { SandboxBackend } from '../backends/spec.js';
import { InvalidInputError } from '../errors.js';
import type { NetworkGate } from '../network/gate-channel.js';
import { type NetworkAllowList, type NetworkOption, resolveNetworkOption } from '../network/network-option.js';
import type { SnapshotStore } from '../snapshots/snapshot-store.js';
import { checkMountRequests, type VolumeMountRequest } from '../volumes/volume-paths.js';
import type { VolumeStore } from '../volumes/volume-store.js';
import { LIBRARY_LIMIT_NAMES, type LimitNames } from './limit-names.js';

export const DEFAULT_TIMEOUT_MS = 60_000;
export const DEFAULT_INTERRUPT_GRACE_MS = 2_000;
export const DEFAULT_START_TIMEOUT_MS = 30_000;
export const DEFAULT_OUTPUT_BYTES = 1024 * 1024;
export const DEFAULT_RESULT_BYTES = 32 * 1024 * 1024;
export const DEFAULT_MAX_CODE_BYTES = 2 * 1024 * 1024;
export const DEFAULT_FILE_TRANSFER_BYTES = 64 * 1024 * 1024;
export const DEFAULT_REQUEST_TIMEOUT_MS = 30_000;
export const DEFAULT_MAX_CONTEXTS = 8;
export const DEFAULT_SNAPSHOT_WAIT_MS = 30_000;
export const DEFAULT_MAX_COMMANDS = 64;
export const DEFAULT_MAX_TERMINALS = 8;
export const DEFAULT_CONTEXT_RESTART_TIMEOUT_MS = 10_000;
export const DEFAULT_LIVENESS_CHECK_MS = 5_000;
export const DEFAULT_LIVENESS_TIMEOUT_MS = 30_000;

export interface SessionOptions {
  /**
   * Where sandboxes run: a backend, or its name (`bubblewrap`, `docker`, `auto`:
   * bubblewrap when usable, else Docker). @default env SANDCELL_BACKEND, else `bubblewrap`
   */
  backend?: SandboxBackend | BackendName;
  /** Resource limits of the sandbox; each falls back to DEFAULT_LIMITS. */
  limits?: Partial<SandboxLimits>;
  /** Wall-clock limit per execution. @default 60_000 */
  timeoutMs?: number;
  /** After a timeout, how long the code has to honour the interrupt before the kernel is killed and restarted. @default 2_000 */
  interruptGraceMs?: number;
  /** How long a sandbox, or a new context's kernel, may take to come up. @default 30_000 */
  startTimeoutMs?: number;
  /**
   * When code ignores its interrupt, how long the sandbox has to restart that context's kernel
   * before the whole sandbox is restarted instead (every context's state lost). @default 10_000
   */
  contextRestartTimeoutMs?: number;
  /**
   * While anything sent to the sandbox waits for its answer, how long it may send nothing before its
   * supervisor is asked whether it is there (a liveness check, which also finds a stopped kernel). @default 5_000
   */
  livenessCheckMs?: number;
  /**
   * How long a liveness check may go unanswered before the sandbox is taken for lost (its processes stopped
   * or stuck): it is killed, what ran in it ends saying so, and a new sandbox replaces it. Generous, because a
   * busy host answers slowly. @default 30_000
   */
  livenessTimeoutMs?: number;
  /** Most contexts (kernels) a session holds at once, the python one included. @default 8 */
  maxContexts?: number;
  /** Most commands (`session.commands.run`) running at once, background ones included. @default 64 */
  maxCommands?: number;
  /** Most terminals (`session.terminals.open`) open at once. @default 8 */
  maxTerminals?: number;
  /**
   * Bytes of stdout+stderr kept per execution; the rest is cut and `outputTruncated` set.
   * An error's value and its traceback are each cut to this size too, with a note. A command
   * keeps this much of its stdout and as much of its stderr. @default 1 MiB
   */
  outputBytes?: number;
  /**
   * Bytes of results (MIME bundles, images) kept per execution, counted as the kernel sends them:
   * data, metadata and framing. Results past it are dropped and `outputTruncated` set; metadata
   * over 1 MiB is dropped from its result. @default 32 MiB
   */
  resultBytes?: number;
  /** Largest accepted code (and command, and text sent to a command's stdin at once), in UTF-8 bytes. @default 2 MiB */
  maxCodeBytes?: number;
  /** Largest file moved in or out through `session.files`. @default 64 MiB */
  fileTransferBytes?: number;
  /**
   * Modules loaded at start (e.g. `['numpy', 'pandas']`), so the first run that needs them is fast; they
   * are not bound: code still writes `import pandas as pd`. @default []
   */
  preloadModules?: string[];
  /** Environment variables to set inside the sandbox. Nothing else of the host's environment goes in. @default {} */
  environment?: Record<string, string>;
  /**
   * The built environment to run in (`sandcell env build`): its packages and
   * files, its warm imports (imported and bound before the first run) and its
   * variables (under `environment`). Needs the bubblewrap or Docker backend.
   * @default `default`: the runtime itself (env SANDCELL_ENVIRONMENT)
   */
  environmentName?: string;
  /**
   * How limit errors say to raise a limit: an application with its own names for them
   * (flags, settings) gives those. @default the library's option names
   */
  limitNames?: LimitNames;
  /**
   * Internet access. `'none'`: no network interface with a route, no DNS, nothing (as without this
   * option). `{ allow: [...] }`: HTTP and HTTPS, through a gate on the host, to the hosts listed and no
   * others (exact names, `*.suffix`, CIDRs, each with an optional `:port`); the usual proxy variables
   * are set inside. @default 'none'
   */
  network?: NetworkOption;
  /** The gate that serves `network`'s allow-list; a server passes its own. @default one gate per session, on this host */
  networkGate?: NetworkGate;
  /**
   * Where snapshot(), pause() and fork() write, and resumeSession() and restore() read.
   * @default the state directory's store (`$SANDCELL_STATE_DIR`, else ~/.local/share/sandcell)
   */
  snapshots?: SnapshotStore;
  /** Whose snapshots the session writes and may load, and whose volumes it may mount: another owner's are refused. @default `local` */
  owner?: string;
  /**
   * Volumes mounted into every sandbox of the session (and of its forks), each at `path`, read-write
   * unless `readOnly`, all of it or the directory `subPath` of it (`createVolume` makes one). @default []
   */
  mounts?: VolumeMount[];
  /** Where the volumes are. @default the state directory's `volumes` */
  volumes?: VolumeStore;
  /** How long a snapshot waits for code that is running to end before it is refused. @default 30_000 */
  snapshotWaitMs?: number;
  /** Session id (letters, digits, `-`, `_`). @default a random id */
  id?: string;
  signal?: AbortSignal;
}

/** A volume in a session: which (its name or id), where, and how. */
export type VolumeMount = VolumeMountRequest;

export interface ResolvedSessionOptions {
  limits: SandboxLimits;
  snapshotWaitMs: number;
  timeoutMs: number;
  interruptGraceMs: number;
  startTimeoutMs: number;
  contextRestartTimeoutMs: number;
  livenessCheckMs: number;
  livenessTimeoutMs: number;
  maxContexts: number;
  maxCommands: number;
  maxTerminals: number;
  outputBytes: number;
  resultBytes: number;
  maxCodeBytes: number;
  fileTransferBytes: number;
  preloadModules: string[];
  /**
   * The environment's warm imports: run as `import NAME` in the user's namespace before the first
   * cell (a preload only loads a module; these bind its name too).
   */
  warmImports?: string[];
  environment: Record<string, string>;
  limitNames: LimitNames;
  /** Absent: no network. */
  network?: NetworkAllowList;
  /** The volumes to mount, checked (volume-paths.ts). */
  mounts: VolumeMountRequest[];
}

function positive(name: string, value: number | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0) {
    throw new InvalidInputError(`\`${name}\` must be a positive number; got ${String(value)}.`);
  }
  return value;
}

const MODULE_NAME = /^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$/;
const ENVIRONMENT_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

export function resolveSessionOptions(options: SessionOptions): ResolvedSessionOptions {
  const preloadModules = options.preloadModules ?? [];
  for (const name of preloadModules) {
    if (typeof name !== 'string' || !MODULE_NAME.test(name)) {
      throw new InvalidInputError(`\`preloadModules\` holds ${JSON.stringify(name)}, which is not a module name.`);
    }
  }
  const environment = options.environment ?? {};
  for (const [name, value] of Object.entries(environment)) {
    if (!ENVIRONMENT_NAME.test(name) || typeof value !== 'string' || value.includes('\0')) {
      throw new InvalidInputError(`\`environment.${name}\` must be a variable name with a string value without NUL.`);
    }
  }
  return {
    limits: resolveLimits(options.limits),
    timeoutMs: positive('timeoutMs', options.timeoutMs, DEFAULT_TIMEOUT_MS),
    snapshotWaitMs: positive('snapshotWaitMs', options.snapshotWaitMs, DEFAULT_SNAPSHOT_WAIT_MS),
    interruptGraceMs: positive('interruptGraceMs', options.interruptGraceMs, DEFAULT_INTERRUPT_GRACE_MS),
    startTimeoutMs: positive('startTimeoutMs', options.startTimeoutMs, DEFAULT_START_TIMEOUT_MS),
    contextRestartTimeoutMs: positive(
      'contextRestartTimeoutMs',
      options.contextRestartTimeoutMs,
      DEFAULT_CONTEXT_RESTART_TIMEOUT_MS,
    ),
    livenessCheckMs: positive('livenessCheckMs', options.livenessCheckMs, DEFAULT_LIVENESS_CHECK_MS),
    livenessTimeoutMs: positive('livenessTimeoutMs', options.livenessTimeoutMs, DEFAULT_LIVENESS_TIMEOUT_MS),
    maxContexts: Math.floor(positive('maxContexts', options.maxContexts, DEFAULT_MAX_CONTEXTS)),
    maxCommands: Math.floor(positive('maxCommands', options.maxCommands, DEFAULT_MAX_COMMANDS)),
    maxTerminals: Math.floor(positive('maxTerminals', options.maxTerminals, DEFAULT_MAX_TERMINALS)),
    outputBytes: positive('outputBytes', options.outputBytes, DEFAULT_OUTPUT_BYTES),
    resultBytes: positive('resultBytes', options.resultBytes, DEFAULT_RESULT_BYTES),
    maxCodeBytes: positive('maxCodeBytes', options.maxCodeBytes, DEFAULT_MAX_CODE_BYTES),
    fileTransferBytes: positive('fileTransferBytes', options.fileTransferBytes, DEFAULT_FILE_TRANSFER_BYTES),
    preloadModules,
    environment,
    limitNames: { ...LIBRARY_LIMIT_NAMES, ...options.limitNames },
    ...networkOf(options.network),
    mounts: checkMountRequests(options.mounts),
  };
}

function networkOf(option: NetworkOption | undefined): { network?: NetworkAllowList } {
  const network = resolveNetworkOption(option);
  return network ? { network } : {};
}
