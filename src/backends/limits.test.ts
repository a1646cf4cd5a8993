import { describe, expect, it } from 'vitest';
import { InvalidInputError } from '../errors.js';
import { DEFAULT_LIMITS, dataCapacityBytes, resolveLimits } from './limits.js';

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

describe('dataCapacityBytes', () => {
  const MiB = 1024 * 1024;

  it('is dataBytes while the memory budget leaves the kernel its reserve', () => {
    expect(dataCapacityBytes(DEFAULT_LIMITS)).toBe(DEFAULT_LIMITS.dataBytes);
    expect(dataCapacityBytes({ memoryBytes: 2048 * MiB, dataBytes: 4096 * MiB })).toBe(1920 * MiB);
  });

  it('keeps half of a small budget for the kernel', () => {
    expect(dataCapacityBytes({ memoryBytes: 256 * MiB, dataBytes: 1024 * MiB })).toBe(128 * MiB);
    expect(dataCapacityBytes({ memoryBytes: 128 * MiB, dataBytes: 1024 * MiB })).toBe(64 * MiB);
  });
});
