/**
 * sandcell: sandboxed, stateful Python sessions for LLM agents.
 * Named exports only; everything else is internal.
 */
export { createSession, Session, getDefaultBackend } from './session/session.js';
export { SessionPool, type SessionPoolOptions, type SessionPoolStats } from './session/pool.js';
export type { Execution, ExecutionError, ExecutionResult, ExecutionStatus, MimeBundle, RunOptions } from './session/execution.js';
export { formatTraceback } from './session/execution.js';
export type { FileEntry, SessionFiles } from './session/files.js';
export {
  type SessionOptions,
  DEFAULT_TIMEOUT_MS,
  DEFAULT_INTERRUPT_GRACE_MS,
  DEFAULT_OUTPUT_BYTES,
  DEFAULT_MAX_CODE_BYTES,
  DEFAULT_FILE_TRANSFER_BYTES,
} from './session/options.js';
export { DEFAULT_LIMITS, type SandboxLimits } from './backends/limits.js';
export type {
  Sandbox,
  SandboxBackend,
  SandboxExit,
  SandboxUsage,
  SandboxVolume,
  CreateVolumeOptions,
  StartSandboxOptions,
} from './backends/spec.js';
export {
  createBubblewrapBackend,
  BubblewrapBackend,
  type BubblewrapBackendOptions,
  type BubblewrapHostReport,
} from './backends/bubblewrap/index.js';
export {
  SandcellError,
  type SandcellErrorCode,
  AbortError,
  BackendUnavailableError,
  FileOperationError,
  InvalidInputError,
  InvalidPathError,
  PoolExhaustedError,
  ProtocolError,
  SandboxCrashedError,
  SandboxStartError,
  SessionClosedError,
  TimeoutError,
} from './errors.js';
