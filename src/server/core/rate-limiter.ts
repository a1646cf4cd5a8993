/** Executions (and uploads, which share the bucket) per minute per owner: a token bucket that refills continuously. */
import { LimitExceededError } from './errors.js';

interface Bucket {
  tokens: number;
  updatedAt: number;
}

export class RateLimiter {
  private readonly buckets = new Map<string, Bucket>();

  /** `perMinute` 0 means no limit. */
  constructor(
    private readonly perMinute: number,
    private readonly now: () => number = Date.now,
  ) {}

  /** Takes one token for `owner`, or throws a `LimitExceededError` saying when to retry. */
  take(owner: string): void {
    if (this.perMinute === 0) return;
    const now = this.now();
    const bucket = this.buckets.get(owner) ?? { tokens: this.perMinute, updatedAt: now };
    const refill = ((now - bucket.updatedAt) / 60_000) * this.perMinute;
    bucket.tokens = Math.min(this.perMinute, bucket.tokens + refill);
    bucket.updatedAt = now;
    this.buckets.set(owner, bucket);
    if (bucket.tokens < 1) {
      const retryAfterSeconds = Math.max(1, Math.ceil(((1 - bucket.tokens) / this.perMinute) * 60));
      throw new LimitExceededError(
        'executions-per-minute',
        `This key may start ${this.perMinute} executions, commands or uploads per minute; retry in ${retryAfterSeconds} s.`,
        retryAfterSeconds * 1000,
      );
    }
    bucket.tokens -= 1;
  }
}
