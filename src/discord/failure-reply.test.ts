import { describe, expect, it } from 'vitest';
import { ModelConfigurationError, ModelResponseError } from '../agents/index.js';
import { AbortError, FileOperationError, InvalidInputError, SessionClosedError, TimeoutError } from '../errors.js';
import { AttachmentRefusedError } from './attachment-limits.js';
import { PoolFullError } from './conversation-pool.js';
import { failureReply } from './failure-reply.js';

describe('failureReply', () => {
  it('says a model failure plainly, without the credentials in its URL', () => {
    const logged: string[] = [];
    const text = failureReply(
      new ModelResponseError('503 Service Unavailable from https://key:s3cret@llm.example.com/v1?api_key=abc'),
      [],
      (line) => logged.push(line),
    );
    expect(text).toBe('⚠️ The model provider failed: 503 Service Unavailable from https://llm.example.com/v1');
    expect(logged).toEqual([]);
  });

  it('passes a refusal through as it is worded', () => {
    expect(failureReply(new AttachmentRefusedError('big.csv is 30 MiB; the limit is 25 MiB'), [], () => {})).toBe(
      '⚠️ big.csv is 30 MiB; the limit is 25 MiB',
    );
  });

  it('logs an internal error with an id and gives the channel only the id', () => {
    const logged: string[] = [];
    const error = new TypeError("Cannot read properties of undefined (reading 'x') at /opt/bot/dist/discord/bot.js:10");
    const text = failureReply(error, ['TOKEN.secret'], (line) => logged.push(line));
    const id = text.match(/error id ([0-9a-f]{8})/)?.[1];
    expect(id).toBeDefined();
    expect(text).not.toMatch(/TypeError|\/opt\/bot/);
    expect(logged).toHaveLength(1);
    expect(logged[0]).toContain(id!);
    expect(logged[0]).toContain('TypeError');
  });

  it('places each kind of failure: said, stopped, or logged under an id', () => {
    const logged: string[] = [];
    const reply = (error: unknown) => failureReply(error, [], (line) => logged.push(line));
    expect(reply(new ModelConfigurationError('Set OPENAI_API_KEY.'))).toBe(
      '⚠️ The model is not configured right: Set OPENAI_API_KEY.',
    );
    expect(reply(new AbortError())).toBe('⏹ Stopped.');
    for (const error of [
      new PoolFullError(3),
      new InvalidInputError('The question is too long.'),
      new FileOperationError('too-large', 'big.csv is too large.'),
      new TimeoutError('The sandbox took too long.'),
    ]) {
      expect(reply(error)).toBe(`⚠️ ${error.message}`);
    }
    expect(logged).toEqual([]);
    expect(reply(new SessionClosedError('s1'))).toMatch(/error id [0-9a-f]{8}/);
    expect(logged).toHaveLength(1);
  });
});
