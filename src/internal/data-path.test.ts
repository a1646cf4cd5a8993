import { describe, expect, it } from 'vitest';
import { InvalidPathError } from '../errors.js';
import { normalizeDataPath, normalizeSessionPath } from './data-path.js';

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

describe('normalizeSessionPath', () => {
  it("keeps paths under the scratch /tmp absolute, checked as the session's files are", () => {
    expect(normalizeSessionPath('/tmp/a//b/./c.txt')).toBe('/tmp/a/b/c.txt');
    expect(normalizeSessionPath('/tmp', { allowRoot: true })).toBe('/tmp');
    expect(normalizeSessionPath('notes/a.txt')).toBe('notes/a.txt');
    expect(normalizeSessionPath('/mnt/data/a.txt')).toBe('a.txt');
    for (const path of ['/tmp', '/tmp/../etc/passwd', '/tmpfile', '/etc/passwd', `/tmp/${'x'.repeat(256)}`]) {
      expect(() => normalizeSessionPath(path)).toThrow(InvalidPathError);
    }
    // Where a path is a host path too (saved downloads), /tmp stays refused.
    expect(() => normalizeDataPath('/tmp/a.txt')).toThrow(InvalidPathError);
  });
});
