import { describe, expect, it } from 'vitest';
import { formatDuration, formatSizeFlag, parseDuration, parseSize } from './units.js';

describe('parseSize', () => {
  it('takes binary suffixes, with or without B/iB, and a bare number as bytes', () => {
    expect(parseSize('512')).toBe(512);
    expect(parseSize('512K')).toBe(512 * 1024);
    expect(parseSize('64M')).toBe(64 * 1024 ** 2);
    expect(parseSize('64mb')).toBe(64 * 1024 ** 2);
    expect(parseSize('2G')).toBe(2 * 1024 ** 3);
    expect(parseSize('1.5GiB')).toBe(1.5 * 1024 ** 3);
    expect(parseSize(' 100 b ')).toBe(100);
    expect(parseSize('0')).toBe(0);
  });

  it('answers undefined for what is not a size', () => {
    for (const text of ['', 'lots', '2X', '-1M', '1e6', 'M', '64MM', '5m30s'])
      expect(parseSize(text), text).toBeUndefined();
  });
});

describe('parseDuration', () => {
  it('takes ms, s, m, h and d, parts that add up, and a bare number as seconds', () => {
    expect(parseDuration('250ms')).toBe(250);
    expect(parseDuration('30s')).toBe(30_000);
    expect(parseDuration('5m')).toBe(300_000);
    expect(parseDuration('1h')).toBe(3_600_000);
    expect(parseDuration('1h30m')).toBe(5_400_000);
    expect(parseDuration('1.5s')).toBe(1500);
    expect(parseDuration('30')).toBe(30_000);
    expect(parseDuration('0.25')).toBe(250);
    expect(parseDuration(' 2 M ')).toBe(120_000);
  });

  it('reads a bare number in milliseconds when asked (the old …_MS variables)', () => {
    expect(parseDuration('2000', 'ms')).toBe(2000);
    expect(parseDuration('2s', 'ms')).toBe(2000);
  });

  it('answers undefined for what is not a duration', () => {
    for (const text of ['', 'soon', '-5s', '5x', '5mins', 's', '1e3', '64M5']) {
      expect(parseDuration(text), text).toBeUndefined();
    }
  });
});

describe('formatting for help texts', () => {
  it('writes sizes and durations as the flags take them', () => {
    expect(formatSizeFlag(64 * 1024 ** 2)).toBe('64M');
    expect(formatSizeFlag(2 * 1024 ** 2 + 64 * 1024)).toBe('2112K');
    expect(formatSizeFlag(1000)).toBe('1000');
    expect(formatDuration(20 * 60_000)).toBe('20m');
    expect(formatDuration(10_000)).toBe('10s');
    expect(formatDuration(90_000)).toBe('1m30s');
    expect(formatDuration(250)).toBe('250ms');
    expect(formatDuration(0)).toBe('0s');
  });

  it('round-trips through the parsers', () => {
    for (const ms of [250, 1000, 90_000, 3_600_000, 5_400_000]) expect(parseDuration(formatDuration(ms))).toBe(ms);
    for (const bytes of [1, 1024, 3 * 1024 ** 3]) expect(parseSize(formatSizeFlag(bytes))).toBe(bytes);
  });
});
