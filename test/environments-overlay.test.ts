/**
 * How an environment shares the runtime's files, on a small tree and for real (an overlay mount in a
 * mount namespace of its own, hard links, the upper directory applied): whatever the layer does to a
 * file it shares (append, truncate, chmod, remove, replace a directory), the runtime's stays as it
 * was, and what it does not touch stays one file for both. Needs root, as building does.
 */
import { execFileSync } from 'node:child_process';
import { chmod, mkdir, mkdtemp, readdir, readFile, rm, stat, symlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import {
  applyUpper,
  inOverlay,
  type LayerOverlay,
  linkTree,
  prepareOverlay,
} from '../src/environments/layer-overlay.js';
import { runProcess } from '../src/image/rootfs.js';
import { describeWhenAvailable } from './support/backends.js';

const reason = process.getuid?.() === 0 ? undefined : 'overlay mounts and hard links to root-owned files need root';

describeWhenAvailable("an environment's layer over the runtime's files", 'bubblewrap-rootfs', reason, () => {
  let directory: string;
  let lower: string;
  let target: string;
  let overlay: LayerOverlay;
  const inode = async (file: string) => (await stat(file)).ino;

  beforeAll(async () => {
    directory = await mkdtemp(path.join(os.tmpdir(), 'sandcell-overlay-'));
    lower = path.join(directory, 'runtime');
    target = path.join(directory, 'environment');
    for (const sub of ['etc', 'usr/share/kept', 'usr/share/removed', 'usr/share/replaced', 'usr/lib']) {
      await mkdir(path.join(lower, sub), { recursive: true });
    }
    await writeFile(path.join(lower, 'etc/appended'), 'runtime line\n');
    await writeFile(path.join(lower, 'etc/truncated'), 'runtime bytes\n');
    await writeFile(path.join(lower, 'usr/lib/chmodded'), 'runtime mode\n');
    await writeFile(path.join(lower, 'usr/share/kept/untouched'), 'shared\n');
    await writeFile(path.join(lower, 'usr/share/removed/file'), 'goes in the environment\n');
    await writeFile(path.join(lower, 'usr/share/replaced/old'), 'hidden in the environment\n');
    await symlink('kept/untouched', path.join(lower, 'usr/share/link'));
    await chmod(path.join(lower, 'usr/lib/chmodded'), 0o644);
    overlay = {
      lower,
      upper: path.join(directory, 'layer/upper'),
      work: path.join(directory, 'layer/work'),
      merged: path.join(directory, 'layer/merged'),
    };
    expect(await prepareOverlay(overlay)).toBeUndefined();
    const layer = [
      'echo layer line >> etc/appended',
      ': > etc/truncated',
      'chmod 600 usr/lib/chmodded',
      'rm -r usr/share/removed',
      'rm -r usr/share/replaced && mkdir usr/share/replaced && echo new > usr/share/replaced/new',
      'mkdir -p usr/share/added && echo added > usr/share/added/file',
      'ln -sfn added/file usr/share/link',
    ].join(' && ');
    const run = inOverlay(overlay, '/bin/sh', ['-c', `cd "$0" && ${layer}`, overlay.merged]);
    await runProcess(run.command, run.args, undefined, {}, () => undefined);
    expect(await linkTree(lower, target)).toBe(true);
    await applyUpper(overlay.upper, target);
  });

  afterAll(async () => {
    if (directory) await rm(directory, { recursive: true, force: true });
  });

  it("leaves the runtime's files as they were", async () => {
    expect(await readFile(path.join(lower, 'etc/appended'), 'utf8')).toBe('runtime line\n');
    expect(await readFile(path.join(lower, 'etc/truncated'), 'utf8')).toBe('runtime bytes\n');
    expect((await stat(path.join(lower, 'usr/lib/chmodded'))).mode & 0o777).toBe(0o644);
    expect(await readdir(path.join(lower, 'usr/share/removed'))).toEqual(['file']);
    expect(await readdir(path.join(lower, 'usr/share/replaced'))).toEqual(['old']);
    expect(await readdir(path.join(lower, 'usr/share'))).not.toContain('added');
  });

  it("gives the environment the layer's changes", async () => {
    expect(await readFile(path.join(target, 'etc/appended'), 'utf8')).toBe('runtime line\nlayer line\n');
    expect(await readFile(path.join(target, 'etc/truncated'), 'utf8')).toBe('');
    expect((await stat(path.join(target, 'usr/lib/chmodded'))).mode & 0o777).toBe(0o600);
    expect(await readdir(path.join(target, 'usr/share'))).not.toContain('removed');
    // Removed and made again: an opaque directory, nothing of the runtime's shows through.
    expect(await readdir(path.join(target, 'usr/share/replaced'))).toEqual(['new']);
    expect(await readFile(path.join(target, 'usr/share/added/file'), 'utf8')).toBe('added\n');
    expect(await readFile(path.join(target, 'usr/share/link'), 'utf8')).toBe('added\n');
  });

  it('shares what the layer did not touch, and only that', async () => {
    expect(await inode(path.join(target, 'usr/share/kept/untouched'))).toBe(
      await inode(path.join(lower, 'usr/share/kept/untouched')),
    );
    for (const changed of ['etc/appended', 'etc/truncated', 'usr/lib/chmodded']) {
      expect(await inode(path.join(target, changed)), changed).not.toBe(await inode(path.join(lower, changed)));
    }
    // Directories are the environment's own: setting their attributes never reaches the runtime.
    expect(await inode(path.join(target, 'usr/share'))).not.toBe(await inode(path.join(lower, 'usr/share')));
  });

  it("leaves no mount behind: the overlay lived in the build's own mount namespace", () => {
    const mounts = execFileSync('cat', ['/proc/self/mounts'], { encoding: 'utf8' });
    expect(mounts).not.toContain(overlay.merged);
  });
});
