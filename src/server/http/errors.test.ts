/** How the HTTP API answers sandcell's typed errors: status, code, and words for an HTTP client. */
import { describe, expect, it } from 'vitest';
import {
  LanguageUnavailableError,
  SessionClosedError,
  TooManyCommandsError,
  TooManyContextsError,
  UnknownContextError,
} from '../../errors.js';
import { ConversationBusyError, LimitExceededError } from '../core/errors.js';
import { toHttpError } from './errors.js';

describe('toHttpError', () => {
  it("answers a session's contexts and commands with their own statuses and codes, in an HTTP client's words", () => {
    const answers = [
      toHttpError(new UnknownContextError('r-1')),
      toHttpError(new LanguageUnavailableError('r', 'This sandbox has no r runtime; install r-base-core.')),
      toHttpError(new TooManyContextsError(8)),
      toHttpError(new TooManyCommandsError(64)),
    ];
    expect(answers.map(({ status, code }) => [status, code])).toEqual([
      [404, 'context-not-found'],
      [422, 'language-unavailable'],
      [429, 'too-many-contexts'],
      [429, 'too-many-commands'],
    ]);
    expect(answers[0]?.message).toContain('"r-1"');
    expect(answers[1]?.message).toContain('r-base-core');
    for (const answer of answers) expect(answer.message).not.toMatch(/session\.|createContext|removeContext/);
  });

  it('keeps answering what it answered before', () => {
    expect(toHttpError(new SessionClosedError('s1'))).toMatchObject({ status: 404, code: 'session-not-found' });
    expect(toHttpError(new TypeError('a bug'))).toMatchObject({ status: 500, code: 'internal-error' });
  });

  it('says a limit and a core refusal with the route or flag that is the way on', () => {
    expect(toHttpError(new LimitExceededError('sessions-per-key', 'Refused.', 999))).toMatchObject({
      status: 429,
      code: 'too-many-sessions',
      message: 'Refused. Delete one (DELETE /v1/sessions/{id}) or raise --sessions-per-key.',
      headers: { 'retry-after': '1' },
    });
    expect(toHttpError(new ConversationBusyError()).message).toMatch(/POST \/v1\/conversations\/\{id\}\/cancel\.$/);
  });
});
