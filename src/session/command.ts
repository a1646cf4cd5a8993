/** What a shell command in a session takes and gives back. */
import type { CommandSignal } from './kernel-protocol.js';

export type { CommandSignal } from './kernel-protocol.js';

export interface CommandOptions {
  /** Working directory, absolute or relative to /mnt/data. @default /mnt/data */
  cwd?: string;
  /** Environment variables, on top of the session's `environment` (at most 64). @default {} */
  env?: Record<string, string>;
  /**
   * Wall-clock limit: past it the command's whole process group gets SIGKILL and the result
   * says `timedOut`. @default the session's `timeoutMs` for a command waited for; none for a background one
   */
  timeoutMs?: number;
  /** Aborting kills the command (SIGKILL to its process group), or refuses it if it has not started. */
  signal?: AbortSignal;
  /** Output as it comes, within the session's `outputBytes` per stream. */
  onStdout?: (text: string) => void;
  onStderr?: (text: string) => void;
  /**
   * Text for the command's stdin. A command waited for gets it, then end of file (without it,
   * stdin is empty); a background one gets it first and keeps stdin open for `sendStdin()`.
   */
  stdin?: string;
  /** Resolve with a handle as soon as the command has started, rather than with its result. @default false */
  background?: boolean;
}

export interface CommandResult {
  /** The exit status; for a command ended by a signal, 128 + its number, as a shell reports it. */
  exitCode: number;
  stdout: string;
  stderr: string;
  durationMs: number;
  /** It ran past its `timeoutMs` and was killed. */
  timedOut: boolean;
  /** Output went past `outputBytes` on a stream and was cut. */
  outputTruncated: boolean;
  /** The signal that ended it, if one did (`SIGKILL` after a timeout or a kill). */
  signal?: string;
}

/** A command started with `background: true`. */
export interface CommandHandle {
  /** The command's id in the session. */
  readonly id: string;
  /** Its process id inside the sandbox (the leader of its process group). */
  readonly pid: number;
  /** Resolves once it has ended (a non-zero exit is data, never a rejection). */
  wait(): Promise<CommandResult>;
  /** Sends `signal` (default SIGKILL) to its process group; false when it had already ended. */
  kill(signal?: CommandSignal): Promise<boolean>;
  /** Writes text to its stdin (ignored once stdin is closed or the command has ended). */
  sendStdin(text: string): void;
  /** Closes its stdin: a program reading it sees end of file. */
  closeStdin(): void;
}

/** A running command, as `session.commands.list()` gives it. */
export interface CommandInfo {
  id: string;
  pid: number;
  command: string;
  cwd: string;
  /** When it started, in ms since the epoch (the sandbox's clock). */
  startedMs: number;
}

export const COMMAND_SIGNALS: readonly CommandSignal[] = ['SIGINT', 'SIGTERM', 'SIGKILL', 'SIGHUP', 'SIGQUIT'];
