import { describe, expect, it } from 'vitest';
import { InvalidPathError } from '../errors.js';
import { normalizeDataPath } from './data-path.js';

describe('normalizeDataPath', () => {
  it('accepts names, nested paths and the /mnt/data prefix', () => {
    expect(normalizeDataPath('a.csv')).toBe('a.csv');
    expect(normalizeDataPath('./dir//b.png')).toBe('dir/b.png');
    expect(normalizeDataPath('/mnt/data/c.txt')).toBe('c.txt');
    expect(normalizeDataPath('', { allowRoot: true })).toBe('');
    expect(normalizeDataPath(`d/${'n'.repeat(255)}`)).toBe(`d/${'n'.repeat(255)}`);
  });

  it('refuses a name over 255 bytes (in UTF-8), in any component', () => {
    expect(() => normalizeDataPath('n'.repeat(256))).toThrow(/at most 255 bytes/);
    expect(() => normalizeDataPath(`${'d'.repeat(300)}/a.csv`)).toThrow(InvalidPathError);
    expect(() => normalizeDataPath('é'.repeat(128))).toThrow(/256 bytes/);
  });

  it.each(['../../etc/passwd', '/etc/passwd', 'a/../../b', 'x\0y', '/mnt/database', '', '/mnt/data'])(
    'refuses %j',
    (path) => {
      expect(() => normalizeDataPath(path)).toThrow(InvalidPathError);
    },
  );
});
