/**
 * Wire errors of the HTTP API. Every error answers JSON, `{"error": {"code",
 * "message"}}`, with the status, code and `Retry-After` of error-statuses.ts;
 * the words here are /v1's (its routes and the flags of `sandcell serve`), and
 * the other HTTP doors (Azure, E2B, Jupyter) pass their own to `toHttpError`.
 */
import { SandcellError } from '../../errors.js';
import { type DoorWords, messageFor } from '../core/error-words.js';
import { httpAnswer } from './error-statuses.js';

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

/**
 * sandcell's errors in an HTTP client's words: what lifts a limit, the route
 * that is the way on, and a session's contexts and commands without the
 * library calls the core's messages name.
 */
export const HTTP_WORDS: DoorWords = {
  limitHints: {
    'sessions-per-key': 'Delete one (DELETE /v1/sessions/{id}) or raise --sessions-per-key.',
    'server-sessions': 'Try again later or raise --max-sessions.',
    'queued-executions': 'Retry when they have run, or raise --max-queued-executions.',
    'executions-per-minute': 'The server option --executions-per-minute sets it.',
    'code-bytes': 'Upload large data as a file instead.',
    'snapshot-bytes':
      'Delete snapshots (GET /v1/snapshots, DELETE /v1/snapshots/{id}) or paused sessions (DELETE /v1/sessions/{id}) it no longer needs, or raise --snapshot-bytes-per-key.',
    'terminals-per-key': 'Close terminals this key no longer needs (DELETE /v1/sessions/{id}/terminals/{terminalId}).',
  },
  hints: {
    'shutting-down': 'Retry against another instance.',
    'conversation-busy': 'To stop it: POST /v1/conversations/{id}/cancel.',
    'conversation-expired': 'To go on with its history as context: POST /v1/conversations/{id}/continue.',
    'model-not-configured':
      'Start the server with `sandcell serve --provider … --model …` (or set SANDCELL_PROVIDER / OPENAI_API_KEY / OPENAI_BASE_URL).',
  },
  sessionClosed: 'The session was closed; create a new one.',
  unknownContext: (context) =>
    `The session has no context ${JSON.stringify(context)}. Leave \`context\` out to run in python, or give a \`language\` to use its default context.`,
  tooManyContexts: (maxContexts) =>
    `The session already holds ${maxContexts} contexts, the most it may. Remove one it no longer needs, or run in one it has.`,
  tooManyCommands: (maxCommands) =>
    `${maxCommands} commands are already running in the session, the most it may run at once. Wait for one to end, or kill one.`,
};

/**
 * The status, code and message a client sees for `error`, in `words` (/v1's
 * unless a door gives its own); unknown errors are 500 without internals.
 */
export function toHttpError(error: unknown, words: DoorWords = HTTP_WORDS): HttpError {
  if (error instanceof HttpError) return error;
  if (!(error instanceof SandcellError)) {
    return new HttpError(500, 'internal-error', 'The server met an unexpected error; see its log.');
  }
  const { status, code, headers } = httpAnswer(error);
  return new HttpError(status, code, messageFor(error, words), headers);
}

export function errorBody(error: HttpError): ErrorBody {
  return { error: { code: error.code, message: error.message } };
}

export const notFound = (what: string): HttpError => new HttpError(404, 'not-found', what);
export const badRequest = (message: string, code = 'invalid-request'): HttpError => new HttpError(400, code, message);
