/** Every error code, limit and file reason has its HTTP status; the compiler refuses one without. */
import { describe, expect, it } from 'vitest';
import {
  type FileErrorReason,
  FileOperationError,
  KernelRequestError,
  PoolExhaustedError,
  ResourceExhaustedError,
  type SandcellErrorCode,
  SessionClosedError,
} from '../../errors.js';
import type { DoorWords } from '../core/error-words.js';
import {
  ConversationBusyError,
  ConversationNotFoundError,
  LimitExceededError,
  type LimitName,
} from '../core/errors.js';
import { FILE_REASON_STATUSES, HTTP_ANSWERS, type HttpAnswer, httpAnswer, LIMIT_ANSWERS } from './error-statuses.js';

describe('the tables', () => {
  it('do not compile with a code, limit or reason left out', () => {
    // @ts-expect-error a table of statuses must give every code one: this one gives only 'invalid-input'
    const partial: Record<SandcellErrorCode, HttpAnswer> = { 'invalid-input': { status: 400 } };
    // A code added to SandcellErrorCode finds no status in the server's table:
    // @ts-expect-error 'brand-new-code' has no status in HTTP_ANSWERS
    const withNewCode: Record<SandcellErrorCode | 'brand-new-code', unknown> = HTTP_ANSWERS;
    // @ts-expect-error nor a new limit in LIMIT_ANSWERS
    const withNewLimit: Record<LimitName | 'brand-new-limit', unknown> = LIMIT_ANSWERS;
    // @ts-expect-error nor a new file reason in FILE_REASON_STATUSES
    const withNewReason: Record<FileErrorReason | 'brand-new-reason', unknown> = FILE_REASON_STATUSES;
    // @ts-expect-error and a front door must word every limit
    const words: DoorWords = { limitHints: { 'code-bytes': 'Upload it as a file.' } };
    for (const table of [partial, withNewCode, withNewLimit, withNewReason, words]) expect(table).toBeDefined();
  });
});

describe('httpAnswer', () => {
  it('answers a code by its entry, with the code a client reads and its Retry-After', () => {
    expect(httpAnswer(new SessionClosedError('s1'))).toEqual({ status: 404, code: 'session-not-found', headers: {} });
    expect(httpAnswer(new PoolExhaustedError(4))).toEqual({
      status: 503,
      code: 'pool-exhausted',
      headers: { 'retry-after': '5' },
    });
    expect(httpAnswer(new ResourceExhaustedError('data-budget-exhausted', 'Full.')).headers).toEqual({
      'retry-after': '30',
    });
    expect(httpAnswer(new KernelRequestError('reset', 'boom', 'it broke'))).toMatchObject({ status: 500 });
    expect(httpAnswer(new ConversationBusyError())).toMatchObject({ status: 409, code: 'conversation-busy' });
  });

  it('answers a limit by its name, a file error by its reason, and names what was not found', () => {
    expect(httpAnswer(new LimitExceededError('executions-per-minute', 'Refused.', 2500))).toEqual({
      status: 429,
      code: 'rate-limited',
      headers: { 'retry-after': '3' },
    });
    expect(httpAnswer(new LimitExceededError('code-bytes', 'Too large.'))).toEqual({
      status: 413,
      code: 'code-too-large',
      headers: {},
    });
    expect(httpAnswer(new FileOperationError('not-found', 'No file.'))).toMatchObject({
      status: 404,
      code: 'file-not-found',
    });
    expect(httpAnswer(new FileOperationError('no-space', 'Full.'))).toMatchObject({
      status: 507,
      code: 'file-no-space',
    });
    expect(httpAnswer(new FileOperationError('io', 'EIO.'))).toMatchObject({ status: 500, code: 'file-io' });
    expect(httpAnswer(new ConversationNotFoundError('c1'))).toMatchObject({
      status: 404,
      code: 'conversation-not-found',
    });
  });
});
