import { describe, expect, it } from 'vitest';
import { InvalidInputError, InvalidPathError } from '../errors.js';
import { checkMountPath, checkMountRequests, checkSubPath, checkVolumeName, volumePath } from './volume-paths.js';

describe('volume names and paths', () => {
  it('names: letters, digits, ".", "_", "-", starting with a letter or digit, at most 63', () => {
    for (const name of ['data', 'Data-2026', 'a.b_c', '9', 'x'.repeat(63)]) expect(checkVolumeName(name)).toBe(name);
    for (const name of ['', '.hidden', '-x', 'a/b', '..', 'a b', 'x'.repeat(64), 'é', 42]) {
      expect(() => checkVolumeName(name)).toThrow(InvalidInputError);
    }
  });

  it('mount paths: absolute, normal, outside the system, below the session’s directories, not over them', () => {
    for (const target of ['/mnt/vol', '/home/user/data', '/workspace/x', '/tmp/cache', '/data', '/srv/models']) {
      expect(checkMountPath(target)).toBe(target);
    }
    for (const target of [
      'relative',
      '/',
      '/mnt',
      '/mnt/data',
      '/mnt/data/inside',
      '/home/user',
      '/workspace',
      '/tmp',
      '/usr/lib',
      '/etc',
      '/proc/self',
      '/dev/shm',
      '/sys',
      '/run/sandcell/x',
      '/opt/sandcell',
      '/mnt/../etc',
      '/mnt/./x',
      '/mnt//x',
      '/mnt/x/',
      '/mnt/a\u0000b',
      '/mnt/a\\b',
      `/mnt/${'x'.repeat(300)}`,
    ]) {
      expect(() => checkMountPath(target), target).toThrow(InvalidPathError);
    }
  });

  it('paths inside a volume: a leading "/" is its top; no "..", ".", empty names or control characters', () => {
    expect(volumePath('/')).toBe('');
    expect(volumePath('')).toBe('');
    expect(volumePath('/a/b.txt')).toBe('a/b.txt');
    expect(volumePath('a/b/')).toBe('a/b');
    for (const given of ['..', '/a/../b', './a', 'a//b', '//a', 'a/\u0007', 'a\\b', 'x/'.repeat(70), 7]) {
      expect(() => volumePath(given), String(given)).toThrow(InvalidPathError);
    }
    expect(checkSubPath(undefined)).toBe('');
    expect(checkSubPath('/')).toBe('');
    expect(checkSubPath('raw/2026')).toBe('raw/2026');
    expect(() => checkSubPath('../x')).toThrow(InvalidPathError);
  });

  it('a session’s mounts: each checked, at most 16, none at a path another covers', () => {
    expect(checkMountRequests([{ volume: 'a', path: '/mnt/a', readOnly: true, subPath: '/x/' }])).toEqual([
      { volume: 'a', path: '/mnt/a', readOnly: true, subPath: 'x' },
    ]);
    expect(checkMountRequests(undefined)).toEqual([]);
    expect(() =>
      checkMountRequests([
        { volume: 'a', path: '/mnt/a' },
        { volume: 'b', path: '/mnt/a/b' },
      ]),
    ).toThrow(InvalidPathError);
    expect(() =>
      checkMountRequests([
        { volume: 'a', path: '/mnt/a' },
        { volume: 'b', path: '/mnt/a' },
      ]),
    ).toThrow(InvalidPathError);
    expect(
      checkMountRequests([
        { volume: 'a', path: '/mnt/a' },
        { volume: 'a', path: '/mnt/ab' },
      ]),
    ).toHaveLength(2);
    const many = Array.from({ length: 17 }, (_, index) => ({ volume: 'a', path: `/mnt/m${index}` }));
    expect(() => checkMountRequests(many)).toThrow(InvalidInputError);
    expect(() => checkMountRequests('a:/mnt/a')).toThrow(InvalidInputError);
    expect(() => checkMountRequests([{ volume: '', path: '/mnt/a' }])).toThrow(InvalidInputError);
    expect(() => checkMountRequests([{ volume: 'a', path: '/mnt/a', readOnly: 'yes' }])).toThrow(InvalidInputError);
  });
});
