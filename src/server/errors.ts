/**
 * Wire errors of the HTTP API, mapped from sandcell's typed errors in this one
 * place. Every error answers JSON: `{"error": {"code", "message"}}`.
 */
import { type FileErrorReason, FileOperationError, SandcellError } from '../errors.js';

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
  'session-closed': 404,
  'pool-exhausted': 503,
  'backend-unavailable': 503,
  'sandbox-start-failed': 503,
  'sandbox-crashed': 500,
  'protocol-error': 500,
  timeout: 504,
  aborted: 499,
};

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

/** The status, code and message a client sees for `error`; unknown errors are 500 without internals. */
export function toHttpError(error: unknown): HttpError {
  if (error instanceof HttpError) return error;
  if (error instanceof FileOperationError) {
    const status = STATUS_BY_FILE_REASON[error.reason] ?? 500;
    return new HttpError(
      status,
      error.reason === 'not-found' ? 'file-not-found' : `file-${error.reason}`,
      error.message,
    );
  }
  if (error instanceof SandcellError) {
    if (error.code === 'session-closed') {
      return new HttpError(404, 'session-not-found', 'The session was closed; create a new one.');
    }
    const headers: Record<string, string> = error.code === 'pool-exhausted' ? { 'retry-after': '5' } : {};
    return new HttpError(STATUS_BY_CODE[error.code] ?? 500, error.code, error.message, headers);
  }
  return new HttpError(500, 'internal-error', 'The server met an unexpected error; see its log.');
}

export function errorBody(error: HttpError): ErrorBody {
  return { error: { code: error.code, message: error.message } };
}

export const notFound = (what: string): HttpError => new HttpError(404, 'not-found', what);
export const sessionNotFound = (id: string): HttpError =>
  new HttpError(404, 'session-not-found', `No session ${JSON.stringify(id)} (it may have been closed after idling).`);
export const badRequest = (message: string, code = 'invalid-request'): HttpError => new HttpError(400, code, message);
