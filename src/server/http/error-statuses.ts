/**
 * What every one of sandcell's error codes answers over HTTP: its status, the
 * code a client reads and a `Retry-After`. The tables are keyed by the error
 * code, the limit and the file error's reason, each exhaustively, so a new code
 * (limit, reason) without a status does not compile. Every HTTP front door (/v1,
 * Azure, E2B, Jupyter) answers these; only the words differ, and those are each
 * door's own (core/error-words.ts).
 */
import { type FileErrorReason, FileOperationError, type SandcellError, type SandcellErrorCode } from '../../errors.js';
import { LimitExceededError, type LimitName, NotFoundError } from '../core/errors.js';

export interface HttpAnswer {
  status: number;
  /** The code a client reads, where it is not sandcell's own. */
  code?: string;
  /** A refusal that passes: how long a client should wait before trying again. */
  retryAfterSeconds?: number;
}

/**
 * Every code's answer. Two codes answer by a finer key their error carries: a
 * limit by its name (LIMIT_ANSWERS), a file operation by its reason (FILE_REASON_STATUSES).
 */
export const HTTP_ANSWERS: Readonly<Record<SandcellErrorCode, HttpAnswer | 'by-limit' | 'by-file-reason'>> = {
  'invalid-input': { status: 400 },
  'invalid-path': { status: 400 },
  'file-error': 'by-file-reason',
  // A session asked for an environment that is not built (for this backend): the request names it.
  'environment-not-found': { status: 400 },
  'environment-in-use': { status: 409 },
  'session-closed': { status: 404, code: 'session-not-found' },
  'unknown-context': { status: 404, code: 'context-not-found' },
  // The message names the packages that add the language: what the server's operator installs.
  'language-unavailable': { status: 422 },
  'too-many-contexts': { status: 429 },
  'too-many-commands': { status: 429 },
  'too-many-terminals': { status: 429 },
  'pool-exhausted': { status: 503, retryAfterSeconds: 5 },
  // Files are removed and sessions closed on the scale of minutes, not seconds.
  'data-budget-exhausted': { status: 503, retryAfterSeconds: 30 },
  'backend-unavailable': { status: 503 },
  'sandbox-start-failed': { status: 503 },
  'sandbox-crashed': { status: 500 },
  'protocol-error': { status: 500 },
  'kernel-request-failed': { status: 500 },
  'image-build-failed': { status: 500 },
  timeout: { status: 504 },
  aborted: { status: 499 },
  // A port in a sandbox: nothing listens (as a proxy answers it), too many open, no answer, no way in.
  'port-closed': { status: 502 },
  'port-busy': { status: 503, retryAfterSeconds: 1 },
  'port-unreachable': { status: 504 },
  'ports-unavailable': { status: 501 },
  // The model's side fails the server, not the request.
  'model-configuration': { status: 500 },
  'model-unavailable': { status: 500 },
  'model-error': { status: 500 },
  // A snapshot that is not there, one that failed its integrity check (nothing of it was loaded), one
  // larger than it may be (the server's key quota is the limit `snapshot-bytes`).
  'snapshot-not-found': { status: 404 },
  'snapshot-invalid': { status: 422 },
  'snapshot-too-large': { status: 507 },
  // The runtime could not checkpoint the sandbox; a checkpoint resumed where its runtime is not.
  'snapshot-failed': { status: 500 },
  'snapshot-incompatible': { status: 409 },
  'session-lost': { status: 410 },
  // A volume not there (another key's is "not found" too), a name taken, one a live sandbox mounts, no
  // volumes where they cannot be the same files (a remote Docker Engine, a server without a state directory).
  'volume-not-found': { status: 404 },
  'volume-exists': { status: 409 },
  'volume-in-use': { status: 409 },
  'volumes-unavailable': { status: 501 },
  // A cluster's node holds the key's volumes and is not serving now (drained, restarting): it comes back.
  'volumes-elsewhere': { status: 503, retryAfterSeconds: 5 },
  // The server's core.
  'limit-exceeded': 'by-limit',
  'shutting-down': { status: 503 },
  // The code a client reads names what was not found: `session-not-found`, `conversation-not-found`, …
  'not-found': { status: 404 },
  'approval-decided': { status: 409 },
  'conversation-busy': { status: 409 },
  'session-elsewhere': { status: 409 },
  'conversation-expired': { status: 410 },
  // Paused between its resume and its turn: sent again, the request resumes it.
  'conversation-paused': { status: 409 },
  'conversation-active': { status: 409 },
  'model-not-configured': { status: 409 },
};

/** How each of the server's limits answers; the limit's `retryAfterMs` gives its `Retry-After`. */
export const LIMIT_ANSWERS: Readonly<Record<LimitName, { status: number; code: string }>> = {
  'sessions-per-key': { status: 429, code: 'too-many-sessions' },
  'server-sessions': { status: 503, code: 'server-at-capacity' },
  'queued-executions': { status: 429, code: 'queue-full' },
  'executions-per-minute': { status: 429, code: 'rate-limited' },
  'code-bytes': { status: 413, code: 'code-too-large' },
  // Storage, not a request's size: 507 Insufficient Storage, until snapshots are deleted.
  'snapshot-bytes': { status: 507, code: 'snapshot-quota-exceeded' },
  'terminals-per-key': { status: 429, code: 'terminal-limit-exceeded' },
};

/** How each reason a file operation fails for answers; the code a client reads is `file-<reason>`. */
export const FILE_REASON_STATUSES: Readonly<Record<FileErrorReason, number>> = {
  'not-found': 404,
  'too-large': 413,
  'is-a-directory': 400,
  'not-a-directory': 400,
  symlink: 400,
  'invalid-path': 400,
  // A FIFO, socket or device (the code can make them in /mnt/data): refused without blocking.
  'not-a-file': 400,
  'hard-link': 400,
  'name-too-long': 400,
  // The code took the write permission away from a file a client then writes.
  'permission-denied': 409,
  'no-space': 507,
  // The sandbox's own failures, not the request's.
  changed: 409,
  io: 500,
  internal: 500,
};

export interface WireAnswer {
  status: number;
  code: string;
  headers: Record<string, string>;
}

const retryAfter = (seconds: number | undefined): Record<string, string> =>
  seconds === undefined ? {} : { 'retry-after': String(seconds) };

/** The status, code and headers `error` answers over HTTP (its message is the door's: core/error-words.ts). */
export function httpAnswer(error: SandcellError): WireAnswer {
  if (error instanceof LimitExceededError) {
    const { status, code } = LIMIT_ANSWERS[error.limit];
    const seconds = error.retryAfterMs === undefined ? undefined : Math.ceil(error.retryAfterMs / 1000);
    return { status, code, headers: retryAfter(seconds) };
  }
  if (error instanceof FileOperationError) {
    const code = error.reason === 'not-found' ? 'file-not-found' : `file-${error.reason}`;
    return { status: FILE_REASON_STATUSES[error.reason], code, headers: {} };
  }
  const answer = HTTP_ANSWERS[error.code];
  // Only a LimitExceededError or a FileOperationError carries these codes (answered above).
  if (typeof answer === 'string') return { status: 500, code: error.code, headers: {} };
  const code = error instanceof NotFoundError ? `${error.what}-not-found` : (answer.code ?? error.code);
  return { status: answer.status, code, headers: retryAfter(answer.retryAfterSeconds) };
}
