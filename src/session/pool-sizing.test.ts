/** The arithmetic of sizing: the arrival rate estimate and the warm target it leads to. */
import { describe, expect, it } from 'vitest';
import { ArrivalRate } from './arrival-rate.js';
import { warmTarget } from './pool-sizing.js';

describe('ArrivalRate', () => {
  it('settles at the steady rate of arrivals, and decays once they stop', () => {
    const rate = new ArrivalRate(30_000);
    expect(rate.perSecond(0)).toBe(0);
    // Two a second for five minutes (ten time constants).
    for (let time = 0; time <= 300_000; time += 500) rate.record(time);
    expect(rate.perSecond(300_000)).toBeCloseTo(2, 1);
    // A minute of nothing: down by e² (about 7.4 times).
    expect(rate.perSecond(360_000)).toBeCloseTo(2 / Math.E ** 2, 1);
    expect(rate.perSecond(600_000)).toBeLessThan(0.01);
  });

  it('rises within seconds of a burst, before the average has caught up', () => {
    const rate = new ArrivalRate(30_000);
    for (let time = 0; time < 5_000; time += 500) rate.record(time);
    expect(rate.perSecond(5_000)).toBeGreaterThan(0.25);
    expect(rate.perSecond(5_000)).toBeLessThan(2);
  });
});

describe('warmTarget', () => {
  const target = (ratePerSecond: number, coldStartMs = 1_000, minimum = 2, maximum = 16) =>
    warmTarget({ ratePerSecond, coldStartMs, minimum, maximum });

  it('keeps the minimum when the environment is not in use, and one when a lone user comes now and then', () => {
    expect(target(0)).toBe(2);
    expect(target(0, 1_000, 0)).toBe(0);
    expect(target(1 / 600)).toBe(2);
    expect(target(1 / 30, 2_000, 0)).toBe(1);
  });

  it('covers the arrivals of one cold start in 99 windows of 100', () => {
    // 2/s × 1 s: a Poisson mean of 2, of which 6 or fewer come 99.5% of the time, 5 or fewer 98.3%.
    expect(target(2)).toBe(6);
    // Slower starts need more on the way.
    expect(target(2, 2_000)).toBeGreaterThan(target(2, 1_000));
    // More arrivals need more.
    expect(target(4)).toBeGreaterThan(target(2));
  });

  it('stays within the maximum, and never drops below the minimum', () => {
    expect(target(50)).toBe(16);
    expect(target(0.05, 100, 3)).toBe(3);
    // A minimum above the maximum gives way to the maximum.
    expect(target(0, 1_000, 5, 3)).toBe(3);
  });
});
