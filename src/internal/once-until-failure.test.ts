import { describe, expect, it } from 'vitest';
import { onceUntilFailure } from './once-until-failure.js';

describe('onceUntilFailure', () => {
  it('runs the work once for every caller while it succeeds', async () => {
    let runs = 0;
    const get = onceUntilFailure(async () => ++runs);
    expect(await Promise.all([get(), get()])).toEqual([1, 1]);
    expect(await get()).toBe(1);
    expect(runs).toBe(1);
  });

  it('forgets a failure, so the next call tries again', async () => {
    let runs = 0;
    const get = onceUntilFailure(async () => {
      runs += 1;
      if (runs === 1) throw new Error('not yet');
      return runs;
    });
    await expect(get()).rejects.toThrow('not yet');
    expect(await get()).toBe(2);
    expect(await get()).toBe(2);
  });
});
