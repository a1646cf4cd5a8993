import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { InvalidInputError, InvalidPathError } from '../errors.js';
import { locateForModel, locateForUser, readDataFile, resolveDataRoots } from './data-roots.js';

const workspace = mkdtempSync(path.join(os.tmpdir(), 'sandcell-roots-'));
const dataDir = path.join(workspace, 'data');
mkdirSync(path.join(dataDir, 'sub'), { recursive: true });
writeFileSync(path.join(dataDir, 'a.csv'), 'x\n1\n');
writeFileSync(path.join(dataDir, 'sub', 'b.json'), '[{"x": 1}]');
writeFileSync(path.join(dataDir, 'big.csv'), 'x'.repeat(2000));
writeFileSync(path.join(workspace, 'outside.txt'), 'secret');
symlinkSync(path.join(workspace, 'outside.txt'), path.join(dataDir, 'link-out.csv'));
symlinkSync(path.join(dataDir, 'a.csv'), path.join(dataDir, 'link-in.csv'));
symlinkSync('/dev/zero', path.join(dataDir, 'zero'));
execFileSync('mkfifo', [path.join(dataDir, 'pipe.csv')]);
const single = path.join(workspace, 'single.tsv');
writeFileSync(single, 'a\tb\n1\t2\n');
afterAll(() => rmSync(workspace, { recursive: true, force: true }));

async function readForModel(requested: string, roots = [dataDir], maxBytes?: number) {
  return readDataFile(await locateForModel(await resolveDataRoots(roots), requested), maxBytes);
}

describe('data roots', () => {
  it('reads files inside a directory root, including through links that stay inside', async () => {
    expect((await readForModel('a.csv')).bytes.toString()).toBe('x\n1\n');
    expect((await readForModel('sub/b.json')).name).toBe('sub/b.json');
    expect((await readForModel('./sub//b.json')).name).toBe('sub/b.json');
    expect((await readForModel('link-in.csv')).bytes.toString()).toBe('x\n1\n');
  });

  it('refuses what the model must not read', async () => {
    await expect(readForModel('../outside.txt')).rejects.toThrow('".." is not allowed');
    await expect(readForModel('sub/../../outside.txt')).rejects.toThrow('".." is not allowed');
    await expect(readForModel(path.join(workspace, 'outside.txt'))).rejects.toThrow('absolute paths are not allowed');
    await expect(readForModel('~/x')).rejects.toThrow('absolute paths are not allowed');
    await expect(readForModel('link-out.csv')).rejects.toThrow('points outside the shared data');
    await expect(readForModel('zero')).rejects.toThrow('points outside the shared data');
    await expect(readForModel('pipe.csv')).rejects.toThrow('it is a FIFO, not a regular file');
    await expect(readForModel('sub')).rejects.toThrow('it is a directory');
    await expect(readForModel('nope.csv')).rejects.toThrow('No data file "nope.csv". Shared data: data/…');
    await expect(readForModel('big.csv', [dataDir], 1000)).rejects.toThrow('the limit is 1000 B');
    await expect(readForModel('a\0b')).rejects.toBeInstanceOf(InvalidPathError);
  });

  it('refuses devices even inside a root', async () => {
    await expect(readForModel('null', ['/dev'])).rejects.toThrow('it is a device, not a regular file');
  });

  it('a file root gives only that file, by its name', async () => {
    expect((await readForModel('single.tsv', [single])).bytes.toString()).toBe('a\tb\n1\t2\n');
    await expect(readForModel('outside.txt', [single])).rejects.toThrow('No data file');
  });

  it('resolves paths the user gave, which must be under a root', async () => {
    const roots = await resolveDataRoots([dataDir, single]);
    expect(locateForUser(roots, single).name).toBe('single.tsv');
    expect(locateForUser(roots, path.join(dataDir, 'sub', 'b.json')).name).toBe('sub/b.json');
    expect(() => locateForUser(roots, path.join(workspace, 'outside.txt'))).toThrow(InvalidPathError);
  });

  it('checks the roots themselves', async () => {
    await expect(resolveDataRoots([path.join(workspace, 'missing')])).rejects.toBeInstanceOf(InvalidInputError);
    await expect(resolveDataRoots([path.join(dataDir, 'pipe.csv')])).rejects.toThrow(
      'neither a regular file nor a directory',
    );
  });
});
