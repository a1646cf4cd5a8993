/**
 * Questions per minute per user, over a sliding minute. A user over the limit
 * is told once when they may ask again; further questions in the same wait
 * are ignored, so a flood does not become a flood of refusals.
 */

export type RateDecision = { allowed: true } | { allowed: false; retryAfterSeconds: number; tell: boolean };

const WINDOW_MS = 60_000;

export class QuestionRateLimit {
  private readonly asked = new Map<string, number[]>();
  private readonly told = new Set<string>();

  /** `perMinute` 0 means no limit. */
  constructor(
    private readonly perMinute: number,
    private readonly now: () => number = Date.now,
  ) {}

  /** Counts a question by `userId` when it is allowed. */
  take(userId: string): RateDecision {
    if (this.perMinute === 0) return { allowed: true };
    const now = this.now();
    const recent = (this.asked.get(userId) ?? []).filter((time) => now - time < WINDOW_MS);
    if (recent.length < this.perMinute) {
      recent.push(now);
      this.asked.set(userId, recent);
      this.told.delete(userId);
      return { allowed: true };
    }
    this.asked.set(userId, recent);
    const retryAfterSeconds = Math.max(1, Math.ceil((recent[0]! + WINDOW_MS - now) / 1000));
    const tell = !this.told.has(userId);
    this.told.add(userId);
    return { allowed: false, retryAfterSeconds, tell };
  }
}
