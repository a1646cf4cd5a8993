/**
 * One error, every front door: the HTTP doors (/v1, Azure, E2B, Jupyter) answer
 * the same status, code and Retry-After, and each door says a limit in its own
 * words, never another door's.
 */
import { Hono } from 'hono';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { FileOperationError, PoolExhaustedError, type SandcellError, SessionClosedError } from '../errors.js';
import { toAzureError } from './azure/azure-errors.js';
import { describeTurnError } from './conversations/turn-errors.js';
import { ConversationNotFoundError, LimitExceededError, type LimitName, ShuttingDownError } from './core/errors.js';
import { toConnectError, toE2bError } from './e2b/errors.js';
import { HttpError, toHttpError } from './http/errors.js';
import { jupyterErrorResponse } from './jupyter/jupyter-errors.js';
import { toolErrorText } from './mcp/tool-errors.js';

const LIMITS: LimitName[] = [
  'sessions-per-key',
  'server-sessions',
  'queued-executions',
  'executions-per-minute',
  'code-bytes',
];
const silent = pino({ level: 'silent' });

/** What each HTTP door puts on the wire for `error`: status, code (where the door has one), message, Retry-After. */
async function httpDoors(error: SandcellError) {
  const jupyter = new Hono();
  jupyter.get('/', () => {
    throw error;
  });
  jupyter.onError((thrown, context) => jupyterErrorResponse(context, thrown));
  const response = await jupyter.request('/');
  const jupyterBody = (await response.json()) as { message: string; reason: string };
  const azure = toAzureError(error);
  const e2b = toE2bError(error);
  if (!(azure instanceof HttpError)) throw new Error('Azure left a SandcellError unmapped');
  return {
    v1: toHttpError(error),
    azure,
    e2b: { status: e2b.status, message: e2b.message, headers: e2b.headers },
    jupyter: {
      status: response.status,
      code: jupyterBody.reason,
      message: jupyterBody.message,
      retryAfter: response.headers.get('retry-after'),
    },
  };
}

describe('every front door', () => {
  it.each(LIMITS)('answers the limit %s with one status and code, each in its own words', async (limit) => {
    const error = new LimitExceededError(limit, 'Refused.', 1500);
    const { v1, azure, e2b, jupyter } = await httpDoors(error);
    for (const door of [azure, e2b, jupyter]) expect(door.status).toBe(v1.status);
    for (const door of [azure, jupyter]) expect('code' in door && door.code).toBe(v1.code);
    for (const door of [v1, azure, e2b]) expect(door.headers).toEqual({ 'retry-after': '2' });
    expect(jupyter.retryAfter).toBe('2');

    const texts = [
      v1.message,
      azure.message,
      e2b.message,
      jupyter.message,
      toolErrorText(error, 'stdio'),
      toolErrorText(error, 'http'),
      describeTurnError(error, silent).message,
    ];
    for (const text of texts) expect(text).toMatch(/^Refused\. \S/);
    // /v1's routes are only /v1's.
    for (const text of texts.slice(1)) expect(text).not.toMatch(/\/v1\//);
  });

  it('answers any other error with the HTTP API status and words on every HTTP door', async () => {
    const errors = [
      new SessionClosedError('s1'),
      new PoolExhaustedError(4),
      new FileOperationError('no-space', '/mnt/data is full.'),
      new ConversationNotFoundError('c1'),
      new ShuttingDownError(),
    ];
    for (const error of errors) {
      const { v1, azure, e2b, jupyter } = await httpDoors(error);
      expect([azure, e2b, jupyter].map(({ status, message }) => ({ status, message }))).toEqual(
        Array(3).fill({ status: v1.status, message: v1.message }),
      );
      expect(jupyter.code).toBe(v1.code);
      expect(azure.code).toBe(v1.code);
    }
    expect(toHttpError(new ShuttingDownError()).message).toBe(
      'The server is shutting down. Retry against another instance.',
    );
    expect(toConnectError(new PoolExhaustedError(4)).code).toBe('unavailable');
    expect(toConnectError(new FileOperationError('not-found', 'No file.')).code).toBe('not_found');
  });

  it('tells a closed session in each door’s own words', async () => {
    const error = new SessionClosedError('s1');
    expect((await httpDoors(error)).v1.message).toBe('The session was closed; create a new one.');
    expect(toolErrorText(error, 'stdio')).toMatch(/next call with its name starts a new one/);
    expect(describeTurnError(error, silent)).toEqual({
      code: 'session-closed',
      message: 'The session was closed; start a new conversation.',
    });
  });
});
