/**
 * The directory store on a real file system: objects written whole or not at
 * all (a body that fails half-way leaves the old object and no stray file), one
 * winner of two `writeIfAbsent`, keys that cannot leave the root, and modes.
 */
import { mkdtemp, readdir, rm, stat, utimes, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FsObjectStore } from './fs-object-store.js';
import { listKeys } from './object-store.js';

let root: string;
let store: FsObjectStore;

beforeEach(async () => {
  root = await mkdtemp(path.join(os.tmpdir(), 'sandcell-store-'));
  store = new FsObjectStore(root);
});
afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

const text = (bytes: Uint8Array | undefined) => (bytes === undefined ? undefined : Buffer.from(bytes).toString());

async function* chunks(...parts: string[]): AsyncIterable<Uint8Array> {
  for (const part of parts) yield Buffer.from(part);
}

async function* failingAfter(part: string): AsyncIterable<Uint8Array> {
  yield Buffer.from(part);
  throw new Error('the sandbox went away');
}

describe('FsObjectStore', () => {
  it('writes, reads, streams, lists and deletes objects, counting size and SHA-256 as they go', async () => {
    const written = await store.write('snapshots/a/1/files.tar', chunks('hello ', 'world'));
    expect(written).toEqual({
      bytes: 11,
      sha256: 'b94d27b9934d3e08a52e52d7da7dabfac484efe37a5380ee9088f7ace2efcde9',
    });
    await store.write('snapshots/a/2/manifest.json', Buffer.from('{}'));
    await store.write('snapshots/b/1/manifest.json', Buffer.from('{}'));
    expect(text(await store.read('snapshots/a/1/files.tar', 100))).toBe('hello world');
    const streamed: Buffer[] = [];
    for await (const chunk of (await store.open('snapshots/a/1/files.tar'))!) streamed.push(Buffer.from(chunk));
    expect(Buffer.concat(streamed).toString()).toBe('hello world');
    expect((await listKeys(store, 'snapshots/a/')).sort()).toEqual([
      'snapshots/a/1/files.tar',
      'snapshots/a/2/manifest.json',
    ]);
    expect((await listKeys(store, 'snapshots/')).length).toBe(3);
    expect(await listKeys(store, 'nothing/here/')).toEqual([]);
    await store.delete('snapshots/a/1/files.tar');
    await store.delete('snapshots/a/1/files.tar');
    expect(await store.read('snapshots/a/1/files.tar', 100)).toBeUndefined();
    expect(await store.open('snapshots/a/1/files.tar')).toBeUndefined();
  });

  it('keeps the old object whole when a new body fails half-way, and leaves no stray file', async () => {
    await store.write('s/k', Buffer.from('old and whole'));
    await expect(store.write('s/k', failingAfter('new but half'))).rejects.toThrow('the sandbox went away');
    expect(text(await store.read('s/k', 100))).toBe('old and whole');
    expect(await readdir(path.join(root, 's'))).toEqual(['k']);
  });

  it('leaves no empty directory behind a deleted object or a write that failed, and writes there again', async () => {
    await store.write('snapshots/a/1/part', Buffer.from('one'));
    await store.write('snapshots/a/2/part', Buffer.from('two'));
    await store.delete('snapshots/a/1/part');
    await expect(store.write('snapshots/a/3/part', failingAfter('half'))).rejects.toThrow('the sandbox went away');
    expect(await readdir(path.join(root, 'snapshots', 'a'))).toEqual(['2']);
    await store.write('snapshots/a/1/part', Buffer.from('again'));
    expect(text(await store.read('snapshots/a/1/part', 100))).toBe('again');
  });

  it('lets exactly one of two writers create a key with writeIfAbsent', async () => {
    const outcomes = await Promise.all(
      ['first', 'second', 'third'].map((word) => store.writeIfAbsent('catalog/session', Buffer.from(word))),
    );
    expect(outcomes.filter((outcome) => outcome !== undefined)).toHaveLength(1);
    const winner = ['first', 'second', 'third'][outcomes.findIndex((outcome) => outcome !== undefined)];
    expect(text(await store.read('catalog/session', 100))).toBe(winner);
    expect(await readdir(path.join(root, 'catalog'))).toEqual(['session']);
  });

  it('refuses keys that could leave its directory or name a temporary file', async () => {
    for (const key of ['../x', 'a/../../x', '/etc/passwd', 'a//b', '.partial-x', 'A/b', 'a/b c', '', 'a/.']) {
      await expect(store.write(key, Buffer.from('x')), key).rejects.toThrow('Not a valid object key');
    }
    expect(await readdir(root)).toEqual([]);
  });

  it('reads an object only up to the size the caller expects', async () => {
    await store.write('m/manifest.json', Buffer.alloc(2048));
    await expect(store.read('m/manifest.json', 1024)).rejects.toThrow('2048 bytes, over the 1024 expected');
  });

  it('keeps objects 0600 in 0700 directories', async () => {
    await store.write('owner/snapshot/part', Buffer.from('x'));
    expect((await stat(path.join(root, 'owner'))).mode & 0o777).toBe(0o700);
    expect((await stat(path.join(root, 'owner/snapshot'))).mode & 0o777).toBe(0o700);
    expect((await stat(path.join(root, 'owner/snapshot/part'))).mode & 0o777).toBe(0o600);
  });

  it('never lists what a crash left half-written, and removes it once it is an hour old', async () => {
    await store.write('s/whole', Buffer.from('x'));
    const fresh = path.join(root, 's', '.partial-aaaaaaaaaaaa');
    const abandoned = path.join(root, 's', '.partial-bbbbbbbbbbbb');
    await writeFile(fresh, 'half');
    await writeFile(abandoned, 'half');
    const twoHoursAgo = new Date(Date.now() - 7_200_000);
    await utimes(abandoned, twoHoursAgo, twoHoursAgo);
    expect(await listKeys(store, 's/')).toEqual(['s/whole']);
    expect((await readdir(path.join(root, 's'))).sort()).toEqual(['.partial-aaaaaaaaaaaa', 'whole']);
  });
});
