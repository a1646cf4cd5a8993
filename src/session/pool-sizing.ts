/**
 * How many sessions the pool keeps warm or starting for one environment.
 *
 * A session handed out is replaced by one that takes a cold start to be ready,
 * so a caller finds none warm only when more callers came within one cold start
 * than there were warm sessions. With arrivals at λ (a Poisson stream, as many
 * independent users make) the count in one cold start has mean m = λ × coldStart,
 * and the target is the fewest sessions that cover it in 99 windows of 100: so
 * 2 new sessions a second with 1 s starts keep 6, and a lone user keeps 1.
 * Clamped to [minimum, maximum]: the minimum is the fixed size asked for, the
 * maximum what memory and the caps allow.
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
/** The share of cold-start windows whose arrivals the target covers. */
export const COVERED_SHARE = 0.99;

export function warmTarget({ ratePerSecond, coldStartMs, minimum, maximum }: WarmTargetInput): number {
  const floor = Math.min(minimum, maximum);
  if (ratePerSecond < IDLE_RATE_PER_SECOND) return floor;
  const covering = poissonQuantile(ratePerSecond * (coldStartMs / 1000), COVERED_SHARE, maximum);
  return Math.max(floor, Math.min(maximum, Math.max(1, covering)));
}

/** The smallest k with P(N ≤ k) ≥ share for N ~ Poisson(mean), or `ceiling` if that is smaller. */
function poissonQuantile(mean: number, share: number, ceiling: number): number {
  let probability = Math.exp(-mean);
  let cumulative = probability;
  let k = 0;
  while (cumulative < share && k < ceiling) {
    k++;
    probability *= mean / k;
    cumulative += probability;
  }
  return k;
}
