/**
 * How a turn that failed says so in its stream's `error` event (and in the
 * turn kept in the history). A conversation belongs to the /v1 API, so a
 * limit's refusal carries the code it answers over HTTP (`rate-limited`,
 * `queue-full`, …), and any other failure sandcell's own code (`session-closed`,
 * `file-error`, …); the hint is for someone in a conversation, who sends
 * questions, cells and uploads rather than calling routes, and whose stream has
 * no Retry-After header (the limit's own message says when to try again).
 */
import type { Logger } from 'pino';
import { SandcellError } from '../../errors.js';
import { type DoorWords, messageFor } from '../core/error-words.js';
import { LimitExceededError } from '../core/errors.js';
import { httpAnswer } from '../http/error-statuses.js';

export interface TurnError {
  code: string;
  message: string;
}

const TURN_WORDS: DoorWords = {
  /** What lifts each of the server's limits, in a conversation's terms. */
  limitHints: {
    'sessions-per-key':
      'Delete a conversation you no longer need; the server option --sessions-per-key sets the limit.',
    'server-sessions': 'Try again later; the server option --max-sessions sets the limit.',
    'queued-executions':
      "Send it again once the code already running in this conversation's session has finished; the server option --max-queued-executions sets the limit.",
    'executions-per-minute':
      "The model's code and commands count, as do cells and uploads: ask again then. The server option --executions-per-minute sets the limit.",
    'code-bytes': 'Upload large data to the conversation as a file and ask for code that reads it.',
    'snapshot-bytes':
      "Delete conversations you no longer need: each paused one keeps its session's snapshot. The server option --snapshot-bytes-per-key sets the limit.",
    'terminals-per-key': 'Close terminals this key no longer needs.',
  },
  // The session's own message names the library's createSession(); here a new conversation is the way on.
  sessionClosed: 'The session was closed; start a new conversation.',
};

/** The code and message of a turn's failure; anything but sandcell's own errors is logged and not shown. */
export function describeTurnError(error: unknown, logger: Logger): TurnError {
  if (error instanceof SandcellError) {
    // A limit reads as HTTP's code for it (`rate-limited`, …); any other error keeps sandcell's own code.
    const code = error instanceof LimitExceededError ? httpAnswer(error).code : error.code;
    return { code, message: messageFor(error, TURN_WORDS) };
  }
  logger.error({ err: error }, 'a conversation turn failed');
  return { code: 'internal-error', message: 'The turn failed unexpectedly; see the server log.' };
}
