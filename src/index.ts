/**
 * sandcell: sandboxed, stateful sessions for LLM agents: kernels in several
 * languages and shell commands, in one sandbox.
 * Named exports only; everything else is internal.
 */

export {
  BubblewrapBackend,
  type BubblewrapBackendOptions,
  type BubblewrapHostReport,
  createBubblewrapBackend,
  type StartMode,
} from './backends/bubblewrap/index.js';
// The Docker backend's own names are in `sandcell/docker`: its types name dockerode's.
export type { DockerBackendSettings } from './backends/docker/settings.js';
export { DEFAULT_LIMITS, type SandboxLimits } from './backends/limits.js';
export {
  AutoBackend,
  BACKEND_NAMES,
  type BackendChoiceOptions,
  type BackendName,
  type BackendSelection,
  createBackend,
  getDefaultBackend,
  resolveBackend,
} from './backends/select.js';
export type {
  CreateVolumeOptions,
  Sandbox,
  SandboxBackend,
  SandboxExit,
  SandboxUsage,
  SandboxVolume,
  StartSandboxOptions,
} from './backends/spec.js';
export type { Environment } from './environments/types.js';
export {
  AbortError,
  BackendUnavailableError,
  EnvironmentInUseError,
  EnvironmentNotFoundError,
  type FileErrorReason,
  FileOperationError,
  ImageBuildError,
  InvalidInputError,
  InvalidPathError,
  KernelRequestError,
  LanguageUnavailableError,
  PoolExhaustedError,
  ProtocolError,
  ResourceExhaustedError,
  SandboxCrashedError,
  SandboxStartError,
  SandcellError,
  type SandcellErrorCode,
  SessionClosedError,
  TimeoutError,
  TooManyCommandsError,
  TooManyContextsError,
  TooManyTerminalsError,
  UnknownContextError,
} from './errors.js';
export type { NetworkChannel, NetworkGate } from './network/gate-channel.js';
export type { NetworkAllowList, NetworkOption } from './network/network-option.js';
export type { NetworkSecret } from './network/network-secret.js';
export type { AssistOptions, InspectOptions } from './session/assist-input.js';
export type { Completion, Inspection } from './session/assist-replies.js';
export type {
  CommandHandle,
  CommandInfo,
  CommandOptions,
  CommandResult,
  CommandSignal,
} from './session/command.js';
export type { SessionCommands } from './session/commands.js';
export type {
  Execution,
  ExecutionError,
  ExecutionResult,
  ExecutionStatus,
  InputRequest,
  MimeBundle,
  RunOptions,
} from './session/execution.js';
export { formatTraceback } from './session/execution.js';
export type { FileEntry, FileStreamOptions, SessionFiles } from './session/files.js';
export { LANGUAGES, type Language } from './session/languages.js';
export type { LimitNames } from './session/limit-names.js';
export {
  DEFAULT_CONTEXT_RESTART_TIMEOUT_MS,
  DEFAULT_FILE_TRANSFER_BYTES,
  DEFAULT_INTERRUPT_GRACE_MS,
  DEFAULT_MAX_CODE_BYTES,
  DEFAULT_MAX_COMMANDS,
  DEFAULT_MAX_CONTEXTS,
  DEFAULT_OUTPUT_BYTES,
  DEFAULT_TIMEOUT_MS,
  type SessionOptions,
} from './session/options.js';
export { SessionPool, type SessionPoolOptions, type SessionPoolStats } from './session/pool.js';
export { createSession, resumeSession, Session } from './session/session.js';
export type { ContextInfo, CreateContextOptions } from './session/session-context.js';
export type {
  RestoredContext,
  RestoreReport,
  SavedContext,
  SkippedName,
  SnapshotInfo,
} from './session/session-state.js';
export type {
  TerminalAttachment,
  TerminalClient,
  TerminalEnd,
  TerminalOptions,
  TerminalSignal,
} from './session/terminal.js';
export type { SessionTerminals, TerminalHandle } from './session/terminals.js';
export { openSnapshotStore } from './snapshots/local-snapshots.js';
export { SnapshotInvalidError, SnapshotNotFoundError, SnapshotTooLargeError } from './snapshots/snapshot-errors.js';
export type { SnapshotStore } from './snapshots/snapshot-store.js';
export {
  closeLocalVolumes,
  createVolume,
  deleteVolume,
  listVolumes,
  type VolumeOptions,
} from './volumes/local-volumes.js';
export type { MountedVolume } from './volumes/session-mounts.js';
export type { VolumeEntry } from './volumes/volume-content.js';
export {
  VolumeExistsError,
  VolumeInUseError,
  VolumeNotFoundError,
  VolumesUnavailableError,
} from './volumes/volume-errors.js';
export type { VolumeMountRequest as VolumeMount } from './volumes/volume-paths.js';
export { type VolumeRecord, VolumeStore, type VolumeStoreOptions } from './volumes/volume-store.js';
