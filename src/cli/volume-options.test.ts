import { describe, expect, it } from 'vitest';
import { CliExit } from './exit-codes.js';
import { parseVolumeFlag, volumeSessionOptions } from './volume-options.js';

describe('--volume', () => {
  it('reads NAME[/SUBPATH]:/PATH[:ro]', () => {
    expect(parseVolumeFlag('data:/mnt/data-sets')).toEqual({ volume: 'data', path: '/mnt/data-sets' });
    expect(parseVolumeFlag('data:/mnt/d:ro')).toEqual({ volume: 'data', path: '/mnt/d', readOnly: true });
    expect(parseVolumeFlag('data/raw/2026:/mnt/raw')).toEqual({
      volume: 'data',
      path: '/mnt/raw',
      subPath: 'raw/2026',
    });
    expect(volumeSessionOptions({})).toEqual({});
    expect(volumeSessionOptions({ volume: ['a:/mnt/a', 'b:/mnt/b:ro'] }).mounts).toHaveLength(2);
  });

  it('refuses what is not a mount, as a usage error', () => {
    for (const value of ['data', ':/mnt/x', 'data:relative', 'data:/etc', 'data/../x:/mnt/x']) {
      expect(() => volumeSessionOptions({ volume: [value] }), value).toThrow(CliExit);
    }
  });
});
