/**
 * What the channel is told when a question fails. Model failures and limits
 * are said plainly (with credentials and host paths removed); anything else
 * is the bot's own failure: its details go to the host's log under an id,
 * and the channel gets only the id.
 */
import { randomBytes } from 'node:crypto';
import { ModelConfigurationError, ModelResponseError, ModelUnavailableError } from '../agents/index.js';
import { AbortError, FileOperationError, InvalidInputError, TimeoutError } from '../errors.js';
import { AttachmentRefusedError } from './attachment-limits.js';
import { PoolFullError } from './conversation-pool.js';
import { safeText } from './safe-text.js';

export type ErrorLog = (line: string) => void;

/** The message for the channel; internal failures are logged through `log` with the id the message gives. */
export function failureReply(error: unknown, secrets: readonly string[], log: ErrorLog): string {
  const say = (text: string) => safeText(text, secrets).slice(0, 1500);
  if (error instanceof ModelUnavailableError || error instanceof ModelResponseError) {
    return `⚠️ The model provider failed: ${say(error.message)}`;
  }
  if (error instanceof ModelConfigurationError) return `⚠️ The model is not configured right: ${say(error.message)}`;
  if (error instanceof AbortError) return '⏹ Stopped.';
  if (
    error instanceof AttachmentRefusedError ||
    error instanceof PoolFullError ||
    error instanceof InvalidInputError ||
    error instanceof FileOperationError ||
    error instanceof TimeoutError
  ) {
    return `⚠️ ${say(error.message)}`;
  }
  const id = randomBytes(4).toString('hex');
  const detail = error instanceof Error ? (error.stack ?? error.message) : String(error);
  // The host's log keeps the whole detail (paths, stack) for the operator; only secrets go.
  let logged = detail;
  for (const secret of secrets) if (secret.length >= 4) logged = logged.split(secret).join('[redacted]');
  log(`sandcell discord: error ${id}: ${logged}`);
  return `⚠️ Something went wrong on my side (error id ${id}); the bot's operator can find it in the bot's log.`;
}
