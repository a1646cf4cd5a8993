/**
 * The REST answers a client reads besides conversations (those are in
 * transcript.ts), and the streamed events of one execution. The server's zod
 * schemas are checked against these at compile time.
 */
import type { ApprovalMode } from './transcript.js';

/** GET /v1/config: what a client needs to know about the server. */
export interface ServerConfig {
  version: string;
  model: { provider: string; model: string } | null;
  /** How to configure a model, for the banner shown when there is none. */
  modelHelp: string;
  approvalDefault: ApprovalMode;
  maxUploadBytes: number;
  idleTimeoutMs: number;
  /** What an idle session becomes: `pause` (its state kept; its next request resumes it) or `close`. */
  onIdle: 'pause' | 'close';
}

/** An entry of GET /v1/sessions/{id}/files. */
export interface FileInfo {
  /** Relative to /mnt/data. */
  path: string;
  type: 'file' | 'directory' | 'symlink' | 'other';
  size: number;
  modifiedAt: string;
  /** Where to GET the bytes (files only). */
  url?: string;
}

/** The body of every error answer. */
export interface ErrorBody {
  error: { code: string; message: string };
}

/**
 * POST /v1/sessions/{id}/execute streamed (NDJSON or SSE): output as it
 * happens, then `execution-end` with the whole execution as the JSON answer
 * would have been, or `error` when it could not run. One execution per stream,
 * so no call id.
 */
export type ExecutionStreamEvent =
  | { type: 'stdout-delta'; text: string }
  | { type: 'stderr-delta'; text: string }
  | { type: 'result-ready'; result: unknown }
  | { type: 'execution-end'; execution: unknown }
  | ({ type: 'error' } & ErrorBody);

/** What a finished shell command gives back (POST /v1/sessions/{id}/commands). */
export interface CommandOutcome {
  /** The exit status; 128 + the signal's number for a command a signal ended, as a shell reports it. */
  exitCode: number;
  stdout: string;
  stderr: string;
  durationMs: number;
  /** It ran past its `timeoutMs` and its process group was killed. */
  timedOut: boolean;
  /** A stream went past the session's output limit and was cut. */
  outputTruncated: boolean;
  /** The signal that ended it, if one did. */
  signal?: string;
}

/**
 * POST /v1/sessions/{id}/commands streamed (NDJSON or SSE): output as it
 * happens, then `command-end` with the whole result as the JSON answer would
 * have been, or `error` when it could not run.
 */
export type CommandStreamEvent =
  | { type: 'stdout-delta'; text: string }
  | { type: 'stderr-delta'; text: string }
  | { type: 'command-end'; command: CommandOutcome }
  | ({ type: 'error' } & ErrorBody);
