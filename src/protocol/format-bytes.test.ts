import { describe, expect, it } from 'vitest';
import { formatBytes } from './format-bytes.js';

describe('formatBytes', () => {
  it('reads in binary units with at most one decimal, none for a round size', () => {
    expect(formatBytes(0)).toBe('0 B');
    expect(formatBytes(1000)).toBe('1000 B');
    expect(formatBytes(1024)).toBe('1 KiB');
    expect(formatBytes(1536)).toBe('1.5 KiB');
    expect(formatBytes(527_462)).toBe('515.1 KiB');
    expect(formatBytes(256 * 2 ** 20)).toBe('256 MiB');
    expect(formatBytes(1.5 * 2 ** 30)).toBe('1.5 GiB');
    expect(formatBytes(3 * 2 ** 40)).toBe('3 TiB');
    expect(formatBytes(4096 * 2 ** 40)).toBe('4096 TiB');
  });

  it('moves to the next unit when rounding reaches 1024, and reads an unknown size as nothing', () => {
    expect(formatBytes(1023)).toBe('1023 B');
    expect(formatBytes(1024 * 1024 - 10)).toBe('1 MiB');
    expect(formatBytes(Number.NaN)).toBe('');
    expect(formatBytes(Number.POSITIVE_INFINITY)).toBe('');
  });
});
