import { describe, expect, it } from 'vitest';
import { InvalidPathError } from '../../errors.js';
import {
  absolutePath,
  entryBelowRoot,
  requestPath,
  resolveSandboxPath,
  sandboxPathOf,
  shellQuote,
} from './envd-paths.js';

describe('envd paths', () => {
  it('maps /home/user, /mnt/data, /workspace, ~ and relative paths to the session’s files', () => {
    expect(resolveSandboxPath('/workspace/notes.txt')).toEqual({ root: '/workspace', relative: 'notes.txt' });
    expect(resolveSandboxPath('/workspace', { allowRoot: true })).toEqual({ root: '/workspace', relative: '' });
    expect(resolveSandboxPath('/home/user/a/b.txt')).toEqual({ root: '/home/user', relative: 'a/b.txt' });
    expect(resolveSandboxPath('/mnt/data/a.txt')).toEqual({ root: '/mnt/data', relative: 'a.txt' });
    expect(resolveSandboxPath('~/x')).toEqual({ root: '/home/user', relative: 'x' });
    expect(resolveSandboxPath('notes/x.md')).toEqual({ root: '/home/user', relative: 'notes/x.md' });
    expect(resolveSandboxPath('/home/user', { allowRoot: true })).toEqual({ root: '/home/user', relative: '' });
    expect(resolveSandboxPath(undefined, { allowRoot: true })).toEqual({ root: '/home/user', relative: '' });
  });

  it('refuses other absolute paths, escapes and the root where a file is needed', () => {
    for (const path of [
      '/etc/passwd',
      '/home/userx',
      '/workspacex/a',
      '/workspace/../etc/passwd',
      '/home/user/../../etc/passwd',
      '../x',
      '/home/user',
      '',
    ]) {
      expect(() => resolveSandboxPath(path)).toThrow(InvalidPathError);
    }
  });

  it("reaches the sandbox's scratch /tmp as absolute request paths, and names its entries back below it", () => {
    const scratch = resolveSandboxPath('/tmp/job/run.py');
    expect(scratch).toEqual({ root: '/tmp', relative: 'job/run.py' });
    expect(requestPath(scratch)).toBe('/tmp/job/run.py');
    expect(requestPath(resolveSandboxPath('/tmp', { allowRoot: true }))).toBe('/tmp');
    expect(absolutePath(scratch)).toBe('/tmp/job/run.py');
    expect(entryBelowRoot(scratch, { path: '/tmp/job/run.py', type: 'file', size: 1, modifiedMs: 0 }).path).toBe(
      'job/run.py',
    );
    // The session's files keep their relative request paths, and commands see them under /mnt/data.
    const home = resolveSandboxPath('/workspace/a.txt');
    expect(requestPath(home)).toBe('a.txt');
    expect(absolutePath(home)).toBe('/mnt/data/a.txt');
    for (const path of ['/tmp/../etc/passwd', '/tmpx/a'])
      expect(() => resolveSandboxPath(path)).toThrow(InvalidPathError);
  });

  it('names files back under the root the client used, and quotes paths for the shell', () => {
    expect(sandboxPathOf('/home/user', 'a/b')).toBe('/home/user/a/b');
    expect(sandboxPathOf('/mnt/data', '')).toBe('/mnt/data');
    expect(shellQuote("it's")).toBe(`'it'\\''s'`);
  });
});
