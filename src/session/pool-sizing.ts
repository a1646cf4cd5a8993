/**
 * How many sessions the pool keeps warm or starting for one environment.
 *
 * A session handed out is replaced by one that takes a cold start to be ready,
 * so at a rate λ about λ × coldStart replacements are always on their way
 * (Little's law). Arrivals are bursty: over one cold start, a Poisson stream
 * with mean m = λ × coldStart brings more than m + 3√m arrivals rarely (about
 * one window in a thousand for the rates that matter), so that is the target,
 * plus one so that a lone arrival in a quiet spell still finds a warm session.
 * Clamped to [minimum, maximum]: the minimum is today's fixed size, the maximum
 * what memory and the session cap allow.
 */
export interface WarmTargetInput {
  /** Recent arrivals per second (ArrivalRate). */
  ratePerSecond: number;
  /** How long a session of this environment takes to start, lately. */
  coldStartMs: number;
  minimum: number;
  maximum: number;
}

/** Below this rate an environment is not in use: it keeps only its minimum (one arrival per ~2 min). */
export const IDLE_RATE_PER_SECOND = 1 / 120;

export function warmTarget({ ratePerSecond, coldStartMs, minimum, maximum }: WarmTargetInput): number {
  if (ratePerSecond < IDLE_RATE_PER_SECOND) return Math.min(minimum, maximum);
  const expected = ratePerSecond * (coldStartMs / 1000);
  const wanted = Math.ceil(expected + 3 * Math.sqrt(expected)) + 1;
  return Math.max(Math.min(minimum, maximum), Math.min(maximum, wanted));
}
