import { execFileSync } from 'node:child_process';
import { chmod, copyFile, mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { sharesFilesWith, treeChanges } from './tree-changes.js';

let directory: string;
let base: string;
let tree: string;

beforeEach(async () => {
  directory = await mkdtemp(path.join(os.tmpdir(), 'sandcell-tree-changes-'));
  base = path.join(directory, 'base');
  tree = path.join(directory, 'tree');
  await mkdir(path.join(base, 'etc'), { recursive: true });
  await mkdir(path.join(base, 'usr/lib/old'), { recursive: true });
  await mkdir(path.join(base, 'var/cache'), { recursive: true });
  await writeFile(path.join(base, 'etc/version'), '1\n');
  await writeFile(path.join(base, 'etc/config'), 'old\n');
  await writeFile(path.join(base, 'usr/lib/old/a.py'), 'a\n');
  await writeFile(path.join(base, 'usr/lib/old/b.py'), 'b\n');
  await writeFile(path.join(base, 'var/cache/was-a-file'), 'f\n');
  await mkdir(path.join(base, 'var/was-a-directory'));
  await writeFile(path.join(base, 'var/was-a-directory/inside'), 'i\n');
  await symlink('config', path.join(base, 'etc/link'));
  // The tree the way an environment's is made: the base as hard links (new directories, the same files).
  execFileSync('cp', ['-al', base, tree]);
});

afterEach(async () => {
  await rm(directory, { recursive: true, force: true });
});

it('a tree of links to its base has no changes', async () => {
  expect(await treeChanges(base, tree)).toEqual({ changed: [], deleted: [] });
  expect(await sharesFilesWith(base, tree, 'etc/version')).toBe(true);
});

it('lists what the tree replaced, added and removed, and no file it still shares', async () => {
  // Replaced, never written through the link: a new inode, as the layer's copy-up gives.
  await rm(path.join(tree, 'etc/config'));
  await writeFile(path.join(tree, 'etc/config'), 'new\n');
  await rm(path.join(tree, 'usr/lib/old/b.py'));
  await mkdir(path.join(tree, 'usr/lib/new/sub'), { recursive: true });
  await writeFile(path.join(tree, 'usr/lib/new/sub/c.py'), 'c\n');
  await chmod(path.join(tree, 'usr/lib/old'), 0o700);
  await rm(path.join(tree, 'var/cache/was-a-file'));
  await mkdir(path.join(tree, 'var/cache/was-a-file'));
  await writeFile(path.join(tree, 'var/cache/was-a-file/now'), 'n\n');
  await rm(path.join(tree, 'var/was-a-directory'), { recursive: true });
  await writeFile(path.join(tree, 'var/was-a-directory'), 'now a file\n');

  expect(await treeChanges(base, tree)).toEqual({
    changed: [
      'etc/config',
      'usr/lib/new',
      'usr/lib/new/sub',
      'usr/lib/new/sub/c.py',
      'usr/lib/old',
      'var/cache/was-a-file',
      'var/cache/was-a-file/now',
      'var/was-a-directory',
    ],
    deleted: ['usr/lib/old/b.py', 'var/cache/was-a-file', 'var/was-a-directory'],
  });
});

it('a tree of copies shares no files with its base', async () => {
  const copies = path.join(directory, 'copies');
  await mkdir(path.join(copies, 'etc'), { recursive: true });
  await copyFile(path.join(base, 'etc/version'), path.join(copies, 'etc/version'));
  expect(await sharesFilesWith(base, copies, 'etc/version')).toBe(false);
  expect(await sharesFilesWith(base, copies, 'etc/missing')).toBe(false);
});
