/** A failed turn's words: HTTP's code for the same refusal, and a hint for someone in a conversation. */
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { SessionClosedError } from '../../errors.js';
import { LimitExceededError, type LimitName } from '../core/errors.js';
import { toHttpError } from '../http/errors.js';
import { describeTurnError } from './turn-errors.js';

const LIMITS: LimitName[] = [
  'sessions-per-key',
  'server-sessions',
  'queued-executions',
  'executions-per-minute',
  'code-bytes',
];
const silent = pino({ level: 'silent' });

describe('describeTurnError', () => {
  it.each(LIMITS)("answers %s with HTTP's code and a hint of the conversation's own", (limit) => {
    const error = new LimitExceededError(limit, 'Refused.');
    const described = describeTurnError(error, silent);
    expect(described.code).toBe(toHttpError(error).code);
    expect(described.message).toMatch(/^Refused\. \S/);
    // Routes are HTTP's words: a conversation's user sends questions, cells and uploads.
    expect(described.message).not.toMatch(/\/v1|DELETE|POST/);
  });

  it('keeps its own words for a closed session, and hides an unexpected failure', () => {
    expect(describeTurnError(new SessionClosedError('s1'), silent)).toEqual({
      code: 'session-closed',
      message: 'The session was closed; start a new conversation.',
    });
    expect(describeTurnError(new TypeError('a bug at /home/x'), silent)).toEqual({
      code: 'internal-error',
      message: 'The turn failed unexpectedly; see the server log.',
    });
  });
});
