import { describe, expect, it } from 'vitest';
import { CliExit } from './exit-codes.js';
import { limitSessionOptions } from './limit-options.js';
import { durationFlag, sizeFlag } from './unit-flags.js';

describe('size flags', () => {
  it('read binary units, with or without B or iB', () => {
    expect(sizeFlag('--memory', '512M')).toBe(512 * 1024 ** 2);
    expect(sizeFlag('--memory', '2G')).toBe(2 * 1024 ** 3);
    expect(sizeFlag('--memory', '1.5GiB')).toBe(1.5 * 1024 ** 3);
    expect(sizeFlag('--memory', '64mb')).toBe(64 * 1024 ** 2);
    expect(sizeFlag('--memory', '100K')).toBe(102_400);
    expect(sizeFlag('--memory', '4096')).toBe(4096);
  });

  it('refuse what is not a positive size as a usage error naming the flag', () => {
    for (const value of ['lots', '0', '-1G', '2X', '', '1..2G']) {
      expect(() => sizeFlag('--max-data', value)).toThrow(CliExit);
      expect(() => sizeFlag('--max-data', value)).toThrow(
        `--max-data takes a size such as 512M or 2G; got ${JSON.stringify(value)}.`,
      );
    }
  });

  it('make session options whose limit errors name the flags', () => {
    expect(
      limitSessionOptions({ memory: '1G', maxUpload: '8M', maxData: '256M', maxOutput: '4M', maxResults: '64M' }),
    ).toMatchObject({
      limits: { memoryBytes: 1024 ** 3, dataBytes: 256 * 1024 ** 2 },
      fileTransferBytes: 8 * 1024 ** 2,
      outputBytes: 4 * 1024 ** 2,
      resultBytes: 64 * 1024 ** 2,
      limitNames: { memoryBytes: expect.stringContaining('--memory') },
    });
    expect(limitSessionOptions({})).toEqual({ limits: {}, limitNames: expect.any(Object) });
  });

  it('say when --max-data is more than --memory can hold, to what it is cut, and which flag raises it', () => {
    const notes: string[] = [];
    limitSessionOptions({ maxData: '4G' }, (text) => notes.push(text));
    expect(notes).toEqual([
      'note: /mnt/data will hold at most 1.9 GiB, not the 4 GiB of --max-data: its files are RAM within --memory (2 GiB, the default), which keeps 128 MiB for the kernel; raise --memory to hold more (e.g. --memory 5G).',
    ]);
    notes.length = 0;
    limitSessionOptions({ maxData: '4G', memory: '8G' }, (text) => notes.push(text));
    limitSessionOptions({ maxData: '1G' }, (text) => notes.push(text));
    expect(notes).toEqual([]);
  });
});

describe('duration flags', () => {
  it('take units, and a bare number as seconds', () => {
    expect(durationFlag('--timeout', '30')).toBe(30_000);
    expect(durationFlag('--timeout', '30s')).toBe(30_000);
    expect(durationFlag('--timeout', '5m')).toBe(300_000);
    expect(durationFlag('--timeout', '250ms')).toBe(250);
    expect(durationFlag('--timeout', '1h')).toBe(3_600_000);
  });

  it('refuse what is not a positive duration, naming the flag and the grammar', () => {
    for (const value of ['soon', '0', '-5s', '5x', '']) {
      expect(() => durationFlag('--timeout', value)).toThrow(
        `--timeout takes a duration such as 30s, 5m or 1h (a bare number is seconds); got ${JSON.stringify(value)}.`,
      );
    }
    expect(durationFlag('--shutdown-grace', '0', 0)).toBe(0);
  });
});
