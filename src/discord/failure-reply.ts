/**
 * What the channel is told when a question fails. Model failures and refusals
 * are said plainly (with credentials and host paths removed); anything else
 * is the bot's own failure: its details go to the host's log under an id,
 * and the channel gets only the id. Every error code is placed, so a new one
 * is a decision, not a silent "something went wrong".
 */
import { randomBytes } from 'node:crypto';
import { SandcellError, type SandcellErrorCode } from '../errors.js';
import { AttachmentRefusedError } from './attachment-limits.js';
import { PoolFullError } from './conversation-pool.js';
import { safeText } from './safe-text.js';

export type ErrorLog = (line: string) => void;

/** How the channel hears of a failure: its message said (after a prefix), or only an id to the log. */
type Telling = 'say' | 'model-provider' | 'model-configuration' | 'stopped' | 'log';

const TELLING: Readonly<Record<SandcellErrorCode, Telling>> = {
  'model-unavailable': 'model-provider',
  'model-error': 'model-provider',
  'model-configuration': 'model-configuration',
  aborted: 'stopped',
  // The question or its code asked for too much, or too slowly: the message says what.
  'invalid-input': 'say',
  'file-error': 'say',
  timeout: 'say',
  // The bot's own failures, or refusals the bot's settings should not meet: for the operator's log.
  'invalid-path': 'log',
  'backend-unavailable': 'log',
  'sandbox-start-failed': 'log',
  'sandbox-crashed': 'log',
  'session-closed': 'log',
  'protocol-error': 'log',
  'kernel-request-failed': 'log',
  'unknown-context': 'log',
  'language-unavailable': 'log',
  'too-many-contexts': 'log',
  'too-many-commands': 'log',
  'too-many-terminals': 'log',
  'pool-exhausted': 'log',
  'data-budget-exhausted': 'log',
  'image-build-failed': 'log',
  'environment-not-found': 'log',
  'environment-in-use': 'log',
  // The bot serves no ports.
  'port-closed': 'log',
  'port-busy': 'log',
  'port-unreachable': 'log',
  'ports-unavailable': 'log',
  // The bot takes no snapshots.
  'snapshot-not-found': 'log',
  'snapshot-invalid': 'log',
  'snapshot-too-large': 'log',
  'snapshot-failed': 'log',
  'snapshot-incompatible': 'log',
  'session-lost': 'say',
  // The bot mounts no volumes.
  'volume-not-found': 'log',
  'volume-exists': 'log',
  'volume-in-use': 'log',
  'volumes-unavailable': 'log',
  'volumes-elsewhere': 'log',
  // The server's core: the bot does not run on it.
  'limit-exceeded': 'log',
  'shutting-down': 'log',
  'not-found': 'log',
  'approval-decided': 'log',
  'conversation-busy': 'log',
  'session-elsewhere': 'log',
  'conversation-expired': 'log',
  // Sent again, it resumes the session: the bot's next turn does.
  'conversation-paused': 'say',
  'conversation-active': 'log',
  'model-not-configured': 'log',
};

function tellingOf(error: unknown): Telling {
  if (error instanceof SandcellError) return TELLING[error.code];
  // The bot's own refusals, worded for the channel.
  return error instanceof AttachmentRefusedError || error instanceof PoolFullError ? 'say' : 'log';
}

/** The message for the channel; internal failures are logged through `log` with the id the message gives. */
export function failureReply(error: unknown, secrets: readonly string[], log: ErrorLog): string {
  const say = () => safeText(error instanceof Error ? error.message : String(error), secrets).slice(0, 1500);
  switch (tellingOf(error)) {
    case 'model-provider':
      return `⚠️ The model provider failed: ${say()}`;
    case 'model-configuration':
      return `⚠️ The model is not configured right: ${say()}`;
    case 'stopped':
      return '⏹ Stopped.';
    case 'say':
      return `⚠️ ${say()}`;
    case 'log':
      return logged(error, secrets, log);
  }
}

function logged(error: unknown, secrets: readonly string[], log: ErrorLog): string {
  const id = randomBytes(4).toString('hex');
  const detail = error instanceof Error ? (error.stack ?? error.message) : String(error);
  // The host's log keeps the whole detail (paths, stack) for the operator; only secrets go.
  let text = detail;
  for (const secret of secrets) if (secret.length >= 4) text = text.split(secret).join('[redacted]');
  log(`sandcell discord: error ${id}: ${text}`);
  return `⚠️ Something went wrong on my side (error id ${id}); the bot's operator can find it in the bot's log.`;
}
