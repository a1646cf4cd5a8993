/**
 * The recent arrival rate of new sessions, as an exponentially weighted
 * average: each arrival adds 1/τ, and the sum decays by e^(-Δt/τ). For steady
 * (Poisson) arrivals at λ per second it settles at λ, follows a change within
 * about τ, and needs no history kept: one number and one time per environment.
 */
export const DEFAULT_RATE_WINDOW_MS = 30_000;

export class ArrivalRate {
  private perMillisecond = 0;
  private updatedAt: number | undefined;

  constructor(private readonly windowMs = DEFAULT_RATE_WINDOW_MS) {}

  /** Counts one arrival at `now` (milliseconds). */
  record(now: number): void {
    this.perMillisecond = this.decayedTo(now) + 1 / this.windowMs;
    this.updatedAt = now;
  }

  /** Arrivals per second as of `now`. */
  perSecond(now: number): number {
    return this.decayedTo(now) * 1000;
  }

  private decayedTo(now: number): number {
    if (this.updatedAt === undefined) return 0;
    const elapsed = Math.max(0, now - this.updatedAt);
    return this.perMillisecond * Math.exp(-elapsed / this.windowMs);
  }
}
