import { describe, expect, it } from 'vitest';
import { CliExit } from './exit-codes.js';
import { limitSessionOptions, parseSize } from './limit-options.js';

describe('size flags', () => {
  it('read binary units, with or without B or iB', () => {
    expect(parseSize('--memory', '512M')).toBe(512 * 1024 ** 2);
    expect(parseSize('--memory', '2G')).toBe(2 * 1024 ** 3);
    expect(parseSize('--memory', '1.5GiB')).toBe(1.5 * 1024 ** 3);
    expect(parseSize('--memory', '64mb')).toBe(64 * 1024 ** 2);
    expect(parseSize('--memory', '100K')).toBe(102_400);
    expect(parseSize('--memory', '4096')).toBe(4096);
  });

  it('refuse what is not a positive size as a usage error naming the flag', () => {
    for (const value of ['lots', '0', '-1G', '2X', '', '1..2G']) {
      expect(() => parseSize('--max-data', value)).toThrow(CliExit);
      expect(() => parseSize('--max-data', value)).toThrow(
        `--max-data takes a size such as 512M or 2G; got ${JSON.stringify(value)}.`,
      );
    }
  });

  it('make session options whose limit errors name the flags', () => {
    expect(limitSessionOptions({ memory: '1G', maxUpload: '8M', maxData: '256M' })).toMatchObject({
      limits: { memoryBytes: 1024 ** 3, dataBytes: 256 * 1024 ** 2 },
      fileTransferBytes: 8 * 1024 ** 2,
      limitNames: { memoryBytes: expect.stringContaining('--memory') },
    });
    expect(limitSessionOptions({})).toEqual({ limits: {}, limitNames: expect.any(Object) });
  });
});
