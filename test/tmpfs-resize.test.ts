/**
 * Resizing session tmpfs mounts (the data budget's remounts) on real mounts:
 * resizes asked for together run in one process, and each still succeeds or
 * fails on its own. Mounting needs root.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { resizeTmpfs, tmpfsUsedBytes } from '../src/backends/tmpfs.js';

const MiB = 1024 * 1024;
const root = process.getuid?.() === 0;
const mounted: string[] = [];
let parent: string | undefined;

function mountTmpfs(name: string, sizeBytes: number): string {
  parent ??= mkdtempSync(path.join(os.tmpdir(), 'sandcell-tmpfs-'));
  const directory = path.join(parent, name);
  mkdirSync(directory);
  execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${sizeBytes}`, 'sandcell-test', directory]);
  mounted.push(directory);
  return directory;
}

function sizeOf(directory: string): number {
  const [blocks, blockSize] = execFileSync('stat', ['-f', '-c', '%b %S', directory]).toString().trim().split(' ');
  return Number(blocks) * Number(blockSize);
}

afterEach(() => {
  for (const directory of mounted.splice(0)) execFileSync('umount', [directory]);
  if (parent) rmSync(parent, { recursive: true, force: true });
  parent = undefined;
});

(root ? describe : describe.skip)('resizing tmpfs mounts', () => {
  it('applies resizes asked for together, refusing only the one below what its files hold', async () => {
    const volumes = ['a', 'b', 'c'].map((name) => mountTmpfs(name, 8 * MiB));
    writeFileSync(path.join(volumes[1] as string, 'data'), Buffer.alloc(3 * MiB));
    const results = await Promise.allSettled([
      resizeTmpfs(volumes[0] as string, 4 * MiB),
      resizeTmpfs(volumes[1] as string, MiB),
      resizeTmpfs(volumes[2] as string, 16 * MiB),
    ]);
    expect(results.map((result) => result.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect(volumes.map(sizeOf)).toEqual([4 * MiB, 8 * MiB, 16 * MiB]);
    expect(await tmpfsUsedBytes(volumes[1] as string)).toBe(3 * MiB);
  });

  it('refuses a directory that is not a tmpfs mount, and a size of nothing', async () => {
    const volume = mountTmpfs('a', 8 * MiB);
    await expect(resizeTmpfs(path.dirname(volume), 4 * MiB)).rejects.toThrow(/remount/);
    await expect(resizeTmpfs(volume, 0)).rejects.toThrow(/below one page/);
    expect(sizeOf(volume)).toBe(8 * MiB);
  });
});
