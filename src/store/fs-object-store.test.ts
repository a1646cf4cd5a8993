/**
 * The directory store on a real file system: what every store keeps
 * (test/contract/object-store-contract.ts), and what is a directory's own: no
 * stray or temporary file listed or left, no empty directory left, modes.
 */
import { mkdtemp, readdir, rm, stat, utimes, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { runObjectStoreContract } from '../../test/contract/object-store-contract.js';
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

async function* failingAfter(part: string): AsyncIterable<Uint8Array> {
  yield Buffer.from(part);
  throw new Error('the sandbox went away');
}

describe('FsObjectStore: what every store keeps', () => {
  runObjectStoreContract({
    store: () => new FsObjectStore(path.join(root, 'contract')),
    conditionalWrites: true,
  });
});

describe('FsObjectStore', () => {
  it('leaves no stray file behind a body that failed half-way', async () => {
    await store.write('s/k', Buffer.from('old and whole'));
    await expect(store.write('s/k', failingAfter('new but half'))).rejects.toThrow('the sandbox went away');
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

  it('leaves no stray file behind the writers that lost a writeIfAbsent', async () => {
    await Promise.all(['first', 'second'].map((word) => store.writeIfAbsent('catalog/session', Buffer.from(word))));
    expect(await readdir(path.join(root, 'catalog'))).toEqual(['session']);
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
