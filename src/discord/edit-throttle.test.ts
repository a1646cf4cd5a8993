import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { EditThrottle } from './edit-throttle.js';

describe('EditThrottle', () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  it('applies many updates within a second once, then the latest after the interval', async () => {
    const applied: number[] = [];
    let state = 0;
    const throttle = new EditThrottle(async () => void applied.push(state), 1000);
    for (state = 1; state <= 20; state += 1) throttle.request();
    state = 20;
    await vi.advanceTimersByTimeAsync(0);
    expect(applied).toEqual([20]);
    state = 21;
    throttle.request();
    state = 22;
    throttle.request();
    await vi.advanceTimersByTimeAsync(500);
    expect(applied).toEqual([20]);
    await vi.advanceTimersByTimeAsync(600);
    expect(applied).toEqual([20, 22]);
  });

  it('flush applies the final state at once', async () => {
    const applied: string[] = [];
    let state = 'a';
    const throttle = new EditThrottle(async () => void applied.push(state), 1000);
    throttle.request();
    await vi.advanceTimersByTimeAsync(0);
    state = 'final';
    throttle.request();
    await throttle.flush();
    expect(applied).toEqual(['a', 'final']);
  });
});
