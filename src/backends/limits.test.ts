import { describe, expect, it } from 'vitest';
import { InvalidInputError } from '../errors.js';
import { DEFAULT_LIMITS, resolveLimits } from './limits.js';

describe('resolveLimits', () => {
  it('fills defaults and keeps what the caller set', () => {
    expect(resolveLimits()).toEqual(DEFAULT_LIMITS);
    expect(resolveLimits({ memoryBytes: 512 * 1024 * 1024 }).memoryBytes).toBe(512 * 1024 * 1024);
  });

  it.each([
    [{ memoryBytes: -1 }, /memoryBytes/],
    [{ processes: Number.NaN }, /processes/],
    [{ tmpBytes: 10 }, /tmpBytes/],
    [{ colour: 3 } as never, /Unknown limit `colour`/],
  ])('refuses %j with a message naming the option', (limits, message) => {
    expect(() => resolveLimits(limits)).toThrow(InvalidInputError);
    expect(() => resolveLimits(limits)).toThrow(message);
  });
});
