import { describe, expect, it } from 'vitest';
import { QuestionRateLimit } from './question-rate-limit.js';

describe('QuestionRateLimit', () => {
  it('allows the limit per minute per user, tells once, then allows again after the minute', () => {
    let now = 0;
    const limit = new QuestionRateLimit(2, () => now);
    expect(limit.take('alice').allowed).toBe(true);
    now = 10_000;
    expect(limit.take('alice').allowed).toBe(true);
    expect(limit.take('bob').allowed).toBe(true);
    now = 20_000;
    expect(limit.take('alice')).toEqual({ allowed: false, retryAfterSeconds: 40, tell: true });
    expect(limit.take('alice')).toMatchObject({ allowed: false, tell: false });
    now = 60_001;
    expect(limit.take('alice').allowed).toBe(true);
    expect(limit.take('alice').allowed).toBe(false);
  });

  it('does not limit with 0', () => {
    const limit = new QuestionRateLimit(0);
    for (let index = 0; index < 100; index += 1) expect(limit.take('alice').allowed).toBe(true);
  });
});
