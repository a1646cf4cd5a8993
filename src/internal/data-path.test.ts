import { describe, expect, it } from 'vitest';
import { InvalidPathError } from '../errors.js';
import { normalizeDataPath } from './data-path.js';

describe('normalizeDataPath', () => {
  it('accepts names, nested paths and the /mnt/data prefix', () => {
    expect(normalizeDataPath('a.csv')).toBe('a.csv');
    expect(normalizeDataPath('./dir//b.png')).toBe('dir/b.png');
    expect(normalizeDataPath('/mnt/data/c.txt')).toBe('c.txt');
    expect(normalizeDataPath('', { allowRoot: true })).toBe('');
  });

  it.each(['../../etc/passwd', '/etc/passwd', 'a/../../b', 'x\0y', '/mnt/database', '', '/mnt/data'])(
    'refuses %j',
    (path) => {
      expect(() => normalizeDataPath(path)).toThrow(InvalidPathError);
    },
  );
});
