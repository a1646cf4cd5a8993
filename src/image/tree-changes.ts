/**
 * What one root filesystem changed of another it was made from: an environment's tree is the
 * runtime's as hard links plus the layer's own files (environments/layer-overlay.ts), so a path
 * whose inode is the runtime's is unchanged, and only the rest needs to travel. Deleted paths are
 * those of the base that the tree no longer has (or has as another kind of file). Directories are
 * never links: one whose owner or mode differs from the base's is listed itself, and every
 * directory is walked.
 */

import type { BigIntStats } from 'node:fs';
import { lstat, readdir } from 'node:fs/promises';
import path from 'node:path';

export interface TreeChanges {
  /** Paths (relative, `usr/lib/...`) to add or replace, each directory before what it holds. */
  changed: string[];
  /** Paths of the base to remove first: gone from the tree, or turned into another kind of file. */
  deleted: string[];
}

/**
 * Whether `tree` was made from `base` by links: a file both hold (`probe`, relative) is the same
 * inode in both. A tree copied instead shares nothing, and its changes would be all of it.
 */
export async function sharesFilesWith(base: string, tree: string, probe: string): Promise<boolean> {
  const [a, b] = await Promise.all([statOf(path.join(base, probe)), statOf(path.join(tree, probe))]);
  return a !== undefined && b !== undefined && !a.isDirectory() && sameFile(a, b);
}

export async function treeChanges(base: string, tree: string): Promise<TreeChanges> {
  const changes: TreeChanges = { changed: [], deleted: [] };
  await compareDirectories(base, tree, '', changes);
  return changes;
}

async function compareDirectories(base: string, tree: string, relative: string, changes: TreeChanges): Promise<void> {
  const [baseNames, treeNames] = await Promise.all([
    readdir(path.join(base, relative)).catch(() => [] as string[]),
    readdir(path.join(tree, relative)),
  ]);
  const kept = new Set(treeNames);
  for (const name of baseNames.sort()) if (!kept.has(name)) changes.deleted.push(path.posix.join(relative, name));
  for (const name of treeNames.sort()) {
    const entry = path.posix.join(relative, name);
    const [was, now] = await Promise.all([statOf(path.join(base, entry)), statOf(path.join(tree, entry))]);
    if (now === undefined) continue;
    if (now.isDirectory()) {
      if (was !== undefined && !was.isDirectory()) changes.deleted.push(entry);
      if (was === undefined || !was.isDirectory()) {
        await addTree(tree, entry, changes);
        continue;
      }
      if (was.mode !== now.mode || was.uid !== now.uid || was.gid !== now.gid) changes.changed.push(entry);
      await compareDirectories(base, tree, entry, changes);
    } else if (was === undefined || !sameFile(was, now)) {
      // A directory turned into a file goes first: extracting a file over a directory would merge, not replace.
      if (was?.isDirectory()) changes.deleted.push(entry);
      changes.changed.push(entry);
    }
  }
}

/** A path the base does not have (as this kind): it and all it holds. */
async function addTree(tree: string, entry: string, changes: TreeChanges): Promise<void> {
  changes.changed.push(entry);
  for (const name of (await readdir(path.join(tree, entry), { withFileTypes: true })).sort(byName)) {
    const child = path.posix.join(entry, name.name);
    if (name.isDirectory()) await addTree(tree, child, changes);
    else changes.changed.push(child);
  }
}

function byName(a: { name: string }, b: { name: string }): number {
  return a.name < b.name ? -1 : a.name > b.name ? 1 : 0;
}

function sameFile(a: BigIntStats, b: BigIntStats): boolean {
  return a.dev === b.dev && a.ino === b.ino;
}

function statOf(file: string): Promise<BigIntStats | undefined> {
  return lstat(file, { bigint: true }).catch(() => undefined);
}
