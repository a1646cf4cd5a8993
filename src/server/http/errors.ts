/**
 * Wire errors of the HTTP API, mapped from sandcell's typed errors in this one
 * place, with the hints that fit the HTTP server (its routes and the flags of
 * `sandcell serve`). Every error answers JSON: `{"error": {"code", "message"}}`.
 */
import {
  type FileErrorReason,
  FileOperationError,
  LanguageUnavailableError,
  SandcellError,
  TooManyCommandsError,
  TooManyContextsError,
  UnknownContextError,
} from '../../errors.js';
import { LimitExceededError, type LimitName, NotFoundError } from '../core/errors.js';

/** An error the server itself raises with a definite status (not found, limits, auth). */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
    this.name = 'HttpError';
  }
}

export interface ErrorBody {
  error: { code: string; message: string };
}

const STATUS_BY_CODE: Record<string, number> = {
  'invalid-input': 400,
  'invalid-path': 400,
  // A session asked for an environment that is not built (for this backend): the request names it.
  'environment-not-found': 400,
  'environment-in-use': 409,
  'session-closed': 404,
  'pool-exhausted': 503,
  'data-budget-exhausted': 503,
  'backend-unavailable': 503,
  'sandbox-start-failed': 503,
  'sandbox-crashed': 500,
  'protocol-error': 500,
  timeout: 504,
  aborted: 499,
};

/** Refusals that pass: how long a client should wait before trying again. */
const RETRY_AFTER_SECONDS: Record<string, string> = {
  'pool-exhausted': '5',
  // Files are removed and sessions closed on the scale of minutes, not seconds.
  'data-budget-exhausted': '30',
};

/** How each of the server's limits answers over HTTP, and what lifts it. */
const LIMITS: Record<LimitName, { status: number; code: string; hint: string }> = {
  'sessions-per-key': {
    status: 429,
    code: 'too-many-sessions',
    hint: 'Delete one (DELETE /v1/sessions/{id}) or raise --sessions-per-key.',
  },
  'server-sessions': { status: 503, code: 'server-at-capacity', hint: 'Try again later or raise --max-sessions.' },
  'queued-executions': {
    status: 429,
    code: 'queue-full',
    hint: 'Retry when they have run, or raise --max-queued-executions.',
  },
  'executions-per-minute': {
    status: 429,
    code: 'rate-limited',
    hint: 'The server option --executions-per-minute sets it.',
  },
  'code-bytes': { status: 413, code: 'code-too-large', hint: 'Upload large data as a file instead.' },
};

/** The server core's other refusals: status, and a hint naming the HTTP way on where there is one. */
const CORE_REFUSALS: Partial<Record<string, { status: number; hint?: string }>> = {
  'shutting-down': { status: 503, hint: 'Retry against another instance.' },
  'approval-decided': { status: 409 },
  'conversation-busy': { status: 409, hint: 'To stop it: POST /v1/conversations/{id}/cancel.' },
  'conversation-expired': {
    status: 410,
    hint: 'To go on with its history as context: POST /v1/conversations/{id}/continue.',
  },
  'conversation-active': { status: 409 },
  'model-not-configured': {
    status: 409,
    hint: 'Start the server with `sandcell serve --provider … --model …` (or set SANDCELL_PROVIDER / OPENAI_API_KEY / OPENAI_BASE_URL).',
  },
};

const withHint = (message: string, hint: string | undefined): string => (hint ? `${message} ${hint}` : message);

const STATUS_BY_FILE_REASON: Partial<Record<FileErrorReason, number>> = {
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
};

/**
 * A session's contexts and commands, worded for an HTTP client: the core's
 * messages name library calls, which a client does not make.
 */
function sessionRefusal(error: unknown): HttpError | undefined {
  if (error instanceof UnknownContextError) {
    return new HttpError(
      404,
      'context-not-found',
      `The session has no context ${JSON.stringify(error.context)}. Leave \`context\` out to run in python, or give a \`language\` to use its default context.`,
    );
  }
  // The message names the packages that add the language: what the server's operator installs.
  if (error instanceof LanguageUnavailableError) return new HttpError(422, error.code, error.message);
  if (error instanceof TooManyContextsError) {
    return new HttpError(
      429,
      error.code,
      `The session already holds ${error.maxContexts} contexts, the most it may. Remove one it no longer needs, or run in one it has.`,
    );
  }
  if (error instanceof TooManyCommandsError) {
    return new HttpError(
      429,
      error.code,
      `${error.maxCommands} commands are already running in the session, the most it may run at once. Wait for one to end, or kill one.`,
    );
  }
  return undefined;
}

/** The status, code and message a client sees for `error`; unknown errors are 500 without internals. */
export function toHttpError(error: unknown): HttpError {
  if (error instanceof HttpError) return error;
  const sessionAnswer = sessionRefusal(error);
  if (sessionAnswer) return sessionAnswer;
  if (error instanceof FileOperationError) {
    const status = STATUS_BY_FILE_REASON[error.reason] ?? 500;
    return new HttpError(
      status,
      error.reason === 'not-found' ? 'file-not-found' : `file-${error.reason}`,
      error.message,
    );
  }
  if (error instanceof LimitExceededError) {
    const limit = LIMITS[error.limit];
    const headers: Record<string, string> =
      error.retryAfterMs === undefined ? {} : { 'retry-after': String(Math.ceil(error.retryAfterMs / 1000)) };
    return new HttpError(limit.status, limit.code, withHint(error.message, limit.hint), headers);
  }
  if (error instanceof NotFoundError) return new HttpError(404, `${error.what}-not-found`, error.message);
  const refusal = error instanceof SandcellError ? CORE_REFUSALS[error.code] : undefined;
  if (error instanceof SandcellError && refusal) {
    return new HttpError(refusal.status, error.code, withHint(error.message, refusal.hint));
  }
  if (error instanceof SandcellError) {
    if (error.code === 'session-closed') {
      return new HttpError(404, 'session-not-found', 'The session was closed; create a new one.');
    }
    const retryAfter = RETRY_AFTER_SECONDS[error.code];
    const headers: Record<string, string> = retryAfter ? { 'retry-after': retryAfter } : {};
    return new HttpError(STATUS_BY_CODE[error.code] ?? 500, error.code, error.message, headers);
  }
  return new HttpError(500, 'internal-error', 'The server met an unexpected error; see its log.');
}

export function errorBody(error: HttpError): ErrorBody {
  return { error: { code: error.code, message: error.message } };
}

export const notFound = (what: string): HttpError => new HttpError(404, 'not-found', what);
export const badRequest = (message: string, code = 'invalid-request'): HttpError => new HttpError(400, code, message);
