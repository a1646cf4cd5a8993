/**
 * How a turn that failed says so in its stream's `error` event (and in the
 * turn kept in the history). A conversation belongs to the /v1 API, so a
 * refusal carries the code the same refusal answers over HTTP (`rate-limited`,
 * `queue-full`, …); the hint is for someone in a conversation, who sends
 * questions, cells and uploads rather than calling routes, and whose stream has
 * no Retry-After header (the limit's own message says when to try again).
 */
import type { Logger } from 'pino';
import { SandcellError, SessionClosedError } from '../../errors.js';
import { LimitExceededError, type LimitName } from '../core/errors.js';
import { toHttpError } from '../http/errors.js';

export interface TurnError {
  code: string;
  message: string;
}

/** What lifts each of the server's limits, in a conversation's terms. */
const LIMIT_HINTS: Record<LimitName, string> = {
  'sessions-per-key': 'Delete a conversation you no longer need; the server option --sessions-per-key sets the limit.',
  'server-sessions': 'Try again later; the server option --max-sessions sets the limit.',
  'queued-executions':
    "Send it again once the code already running in this conversation's session has finished; the server option --max-queued-executions sets the limit.",
  'executions-per-minute':
    "The model's code and commands count, as do cells and uploads: ask again then. The server option --executions-per-minute sets the limit.",
  'code-bytes': 'Upload large data to the conversation as a file and ask for code that reads it.',
};

/** The code and message of a turn's failure; anything but sandcell's own errors is logged and not shown. */
export function describeTurnError(error: unknown, logger: Logger): TurnError {
  // The session's own message names the library's createSession(); here a new conversation is the way on.
  if (error instanceof SessionClosedError) {
    return { code: error.code, message: 'The session was closed; start a new conversation.' };
  }
  if (error instanceof LimitExceededError) {
    return { code: toHttpError(error).code, message: `${error.message} ${LIMIT_HINTS[error.limit]}` };
  }
  if (error instanceof SandcellError) return { code: error.code, message: error.message };
  logger.error({ err: error }, 'a conversation turn failed');
  return { code: 'internal-error', message: 'The turn failed unexpectedly; see the server log.' };
}
