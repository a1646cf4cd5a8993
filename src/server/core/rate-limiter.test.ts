import { describe, expect, it } from 'vitest';
import { LimitExceededError } from './errors.js';
import { RateLimiter } from './rate-limiter.js';

describe('RateLimiter', () => {
  it('allows a burst of the per-minute count, then refills continuously', () => {
    let now = 0;
    const limiter = new RateLimiter(6, () => now);
    for (let index = 0; index < 6; index++) limiter.take('a');
    let refused: unknown;
    try {
      limiter.take('a');
    } catch (error) {
      refused = error;
    }
    expect(refused).toBeInstanceOf(LimitExceededError);
    expect(refused).toMatchObject({ limit: 'executions-per-minute', retryAfterMs: 10_000 });
    limiter.take('b'); // owners are counted apart
    now += 10_000; // one token per 10 s
    limiter.take('a');
    expect(() => limiter.take('a')).toThrow(LimitExceededError);
  });

  it('never limits with 0', () => {
    const limiter = new RateLimiter(0);
    for (let index = 0; index < 10_000; index++) limiter.take('a');
  });
});
