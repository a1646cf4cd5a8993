/**
 * Infrastructure failures, all under one root. An error in the user's code is
 * never thrown: it is data on `Execution.error`.
 */

/**
 * Every code a SandcellError carries. Tables keyed by it are exhaustive, so a new
 * code does not compile until it has an HTTP status (server/http/error-statuses.ts)
 * and a place in the Discord bot's replies (discord/failure-reply.ts).
 */
export type SandcellErrorCode =
  | 'backend-unavailable'
  | 'sandbox-start-failed'
  | 'sandbox-crashed'
  | 'session-closed'
  | 'invalid-input'
  | 'invalid-path'
  | 'file-error'
  | 'timeout'
  | 'protocol-error'
  | 'kernel-request-failed'
  | 'unknown-context'
  | 'language-unavailable'
  | 'too-many-contexts'
  | 'too-many-commands'
  | 'too-many-terminals'
  | 'pool-exhausted'
  | 'data-budget-exhausted'
  | 'image-build-failed'
  | 'environment-not-found'
  | 'environment-in-use'
  | 'aborted'
  // A session's ports (src/network/ingress.ts).
  | 'port-closed'
  | 'port-busy'
  | 'port-unreachable'
  | 'ports-unavailable'
  | 'model-configuration'
  | 'model-unavailable'
  | 'model-error'
  // Snapshots (src/snapshots/snapshot-errors.ts).
  | 'snapshot-not-found'
  | 'snapshot-invalid'
  | 'snapshot-too-large'
  | 'snapshot-failed'
  | 'snapshot-incompatible'
  | 'session-lost'
  // Volumes (src/volumes/volume-errors.ts).
  | 'volume-not-found'
  | 'volume-exists'
  | 'volume-in-use'
  | 'volumes-unavailable'
  | 'volumes-elsewhere'
  // The server's core (src/server/core/errors.ts).
  | 'limit-exceeded'
  | 'shutting-down'
  | 'not-found'
  | 'approval-decided'
  | 'conversation-busy'
  | 'session-elsewhere'
  | 'conversation-expired'
  | 'conversation-paused'
  | 'conversation-active'
  | 'model-not-configured';

export class SandcellError extends Error {
  readonly code: SandcellErrorCode;

  constructor(code: SandcellErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
    this.name = new.target.name;
  }
}

/** The backend cannot run here; the message names what to install or enable. */
export class BackendUnavailableError extends SandcellError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('backend-unavailable', message, options);
  }
}

/** A sandbox did not come up (the kernel never said it was ready). */
export class SandboxStartError extends SandcellError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('sandbox-start-failed', message, options);
  }
}

/** The sandbox died outside an execution, or could not be restarted. */
export class SandboxCrashedError extends SandcellError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('sandbox-crashed', message, options);
  }
}

export class SessionClosedError extends SandcellError {
  constructor(sessionId: string) {
    super('session-closed', `Session ${sessionId} is closed; create a new one with createSession().`);
  }
}

/** Arguments the caller gave are unusable (too large, wrong type, conflicting options). */
export class InvalidInputError extends SandcellError {
  constructor(message: string) {
    super('invalid-input', message);
  }
}

/** A file path that would leave /mnt/data, or is malformed. */
export class InvalidPathError extends SandcellError {
  constructor(message: string) {
    super('invalid-path', message);
  }
}

/**
 * Why a file operation inside the sandbox failed, as the kernel names it
 * (sandcell_kernel.py: FileError codes). A code this host does not know reads
 * as `internal`.
 */
export const FILE_ERROR_REASONS = [
  'invalid-path',
  'not-found',
  'is-a-directory',
  'not-a-directory',
  'symlink',
  /** A FIFO, socket or device (the code can make them in /mnt/data). */
  'not-a-file',
  'hard-link',
  'name-too-long',
  /** The code took the permission away. */
  'permission-denied',
  /** Over the session's `fileTransferBytes`. */
  'too-large',
  /** /mnt/data is full (the session's `limits.dataBytes`). */
  'no-space',
  /** The file changed while it was read in chunks (a stream): read it again once nothing writes to it. */
  'changed',
  /** Any other operating-system error. */
  'io',
  /** The kernel failed handling the request (a bug, or a malformed request). */
  'internal',
] as const;

export type FileErrorReason = (typeof FILE_ERROR_REASONS)[number];

/** A file operation inside the sandbox failed; `reason` says why, for programs (`not-found`, `symlink`, …). */
export class FileOperationError extends SandcellError {
  readonly reason: FileErrorReason;

  constructor(reason: FileErrorReason, message: string) {
    super('file-error', message);
    this.reason = reason;
  }
}

/** A request to the sandbox (not user code, which reports `status: 'timeout'`) took too long. */
export class TimeoutError extends SandcellError {
  constructor(message: string) {
    super('timeout', message);
  }
}

/** The kernel broke the wire protocol (an oversized or malformed message). */
export class ProtocolError extends SandcellError {
  constructor(message: string) {
    super('protocol-error', message);
  }
}

/**
 * The kernel answered a request other than a file operation (`reset`,
 * `is-complete`, …) with a failure; `reason` is the kernel's code.
 */
export class KernelRequestError extends SandcellError {
  constructor(
    readonly request: string,
    readonly reason: string,
    message: string,
  ) {
    super(
      'kernel-request-failed',
      `The kernel failed a ${request} request (${reason}): ${message}. Restart the session if this persists.`,
    );
  }
}

/** A run or a request named a context the session does not hold. */
export class UnknownContextError extends SandcellError {
  constructor(
    readonly context: string,
    message = `The session has no context ${JSON.stringify(context)}; list them with session.listContexts(), or create one with session.createContext({ language }).`,
  ) {
    super('unknown-context', message);
  }
}

/** The language's runtime is not in this sandbox; the message names what installs it. */
export class LanguageUnavailableError extends SandcellError {
  constructor(
    readonly language: string,
    message: string,
  ) {
    super('language-unavailable', message);
  }
}

/** The session holds as many contexts as it may (`maxContexts`). */
export class TooManyContextsError extends SandcellError {
  constructor(
    readonly maxContexts: number,
    message = `The session already holds ${maxContexts} contexts, the most it may; remove one with session.removeContext(id), or raise \`maxContexts\` in the session options.`,
  ) {
    super('too-many-contexts', message);
  }
}

/** As many commands as the session may run at once (`maxCommands`) are running. */
export class TooManyCommandsError extends SandcellError {
  constructor(
    readonly maxCommands: number,
    message = `${maxCommands} commands are already running in this session, the most it may run at once; wait for one to end or kill one (session.commands.kill(pid)), or raise \`maxCommands\` in the session options.`,
  ) {
    super('too-many-commands', message);
  }
}

export class TooManyTerminalsError extends SandcellError {
  constructor(
    readonly maxTerminals: number,
    message = `${maxTerminals} terminals are already open in this session, the most it may hold at once; close one, or raise \`maxTerminals\` in the session options.`,
  ) {
    super('too-many-terminals', message);
  }
}

export class PoolExhaustedError extends SandcellError {
  constructor(maxSessions: number) {
    super(
      'pool-exhausted',
      `All ${maxSessions} sessions are in use; close one, or raise \`maxSessions\` in the pool options.`,
    );
  }
}

/**
 * A server-wide resource is used up, so nothing new can start until some is
 * given back (sessions closed, files removed); the message names the setting.
 */
export class ResourceExhaustedError extends SandcellError {
  constructor(code: 'data-budget-exhausted', message: string) {
    super(code, message);
  }
}

/**
 * A connection to a port inside a session's sandbox could not be made: nothing listens there
 * (`port-closed`), the sandbox has as many open as it may (`port-busy`), its supervisor did not
 * connect in time (`port-unreachable`), or the session has no way in (`ports-unavailable`: its
 * backend cannot bind the ingress socket, or it is closed).
 */
export class PortError extends SandcellError {
  constructor(code: 'port-closed' | 'port-busy' | 'port-unreachable' | 'ports-unavailable', message: string) {
    super(code, message);
  }
}

export class AbortError extends SandcellError {
  constructor(message = 'The operation was aborted.') {
    super('aborted', message);
  }
}

/** A session asked for an environment that is not built (for its backend); the message says how to build it. */
export class EnvironmentNotFoundError extends SandcellError {
  constructor(message: string) {
    super('environment-not-found', message);
  }
}

/** `env remove` of an environment running sandboxes stand on; the message says which and what to do. */
export class EnvironmentInUseError extends SandcellError {
  constructor(message: string) {
    super('environment-in-use', message);
  }
}

/** Building the runtime image or root filesystem failed; the message carries the tool's last output. */
export class ImageBuildError extends SandcellError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('image-build-failed', message, options);
  }
}
