/**
 * The store and the content API on plain directories (no image: the quota measured), as they run
 * without root: names per owner, tokens, the quota held on the content API, symlinks never followed,
 * deletes refused while held and waited for while leaving.
 */
import { mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FileOperationError, InvalidPathError } from '../errors.js';
import { VolumeExistsError, VolumeInUseError, VolumeNotFoundError } from './volume-errors.js';
import { VolumeStore } from './volume-store.js';

const MiB = 1024 * 1024;
let directory: string;
let store: VolumeStore;

async function* bytes(...chunks: (string | Buffer)[]): AsyncIterable<Uint8Array> {
  for (const chunk of chunks) yield Buffer.from(chunk);
}

async function text(stream: AsyncIterable<Uint8Array>): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(Buffer.from(chunk));
  return Buffer.concat(chunks).toString('utf8');
}

beforeEach(async () => {
  directory = await mkdtemp(path.join(os.tmpdir(), 'sandcell-volume-store-'));
  store = new VolumeStore({ directory, bytesPerOwner: 2 * MiB, useImages: false });
});
afterEach(async () => {
  await store.close();
  await rm(directory, { recursive: true, force: true });
});

describe('VolumeStore on plain directories', () => {
  it('names are per owner; an id, a name or a token opens only its own', async () => {
    const mine = await store.create('alice', 'data');
    await expect(store.create('alice', 'data')).rejects.toBeInstanceOf(VolumeExistsError);
    const theirs = await store.create('bob', 'data');
    expect((await store.get('alice', mine.id)).name).toBe('data');
    await expect(store.get('bob', mine.id)).rejects.toBeInstanceOf(VolumeNotFoundError);
    expect((await store.byToken(mine.id, mine.token))?.owner).toBe('alice');
    expect(await store.byToken(mine.id, theirs.token)).toBeUndefined();
    expect(await store.byToken('../../etc', mine.token)).toBeUndefined();
    expect((await store.list('bob')).map((volume) => volume.id)).toEqual([theirs.id]);
    await store.delete('alice', 'data');
    expect(await store.byToken(mine.id, mine.token)).toBeUndefined();
  });

  it('the quota holds on the content API (measured), and a refused write leaves the old file', async () => {
    const record = await store.create('alice', 'data');
    const content = await store.content('alice', record);
    await content.write('/kept.txt', bytes('old'));
    const refusal = await content
      .write('/kept.txt', bytes(Buffer.alloc(MiB), Buffer.alloc(MiB), Buffer.alloc(MiB)))
      .catch((error: unknown) => error);
    expect(refusal).toBeInstanceOf(FileOperationError);
    expect((refusal as FileOperationError).reason).toBe('no-space');
    expect(await text((await content.read('/kept.txt')).stream)).toBe('old');
    expect((await content.list('/')).map((entry) => entry.name)).toEqual(['kept.txt']);
    const { bounded, quotaBytes } = await store.usage('alice');
    expect([bounded, quotaBytes]).toEqual([false, 2 * MiB]);
  });

  it('never follows a symlink: not through a directory, not at the end, not for a listing', async () => {
    const record = await store.create('alice', 'data');
    const content = await store.content('alice', record);
    const top = (await store.location('alice', record)).directory;
    const outside = path.join(directory, 'outside');
    await writeFile(outside, 'secret');
    await symlink(directory, path.join(top, 'up'));
    await symlink(outside, path.join(top, 'file-link'));
    await expect(content.read('/file-link')).rejects.toMatchObject({ reason: 'symlink' });
    await expect(content.read('/up/outside')).rejects.toBeInstanceOf(FileOperationError);
    await expect(content.write('/up/planted.txt', bytes('x'))).rejects.toBeInstanceOf(FileOperationError);
    await expect(content.list('/up')).rejects.toBeInstanceOf(FileOperationError);
    expect((await content.stat('/file-link')).type).toBe('symlink');
    expect((await content.stat('/file-link')).target).toBe(outside);
    await content.remove('/up');
    expect(await text((await import('node:fs')).createReadStream(outside))).toBe('secret');
    await expect(content.read('../outside')).rejects.toBeInstanceOf(InvalidPathError);
  });

  it('a held volume is not deleted; a leaving session is waited for', async () => {
    const record = await store.create('alice', 'data');
    const hold = store.hold(record.id, 'session-1');
    const refusal = await store.delete('alice', 'data').catch((error: unknown) => error);
    expect(refusal).toBeInstanceOf(VolumeInUseError);
    expect((refusal as VolumeInUseError).sessions).toEqual(['session-1']);
    let leave: () => void = () => {};
    hold.leave(new Promise<void>((resolve) => (leave = resolve)).then(() => hold.release()));
    const deleting = store.delete('alice', 'data');
    setTimeout(() => leave(), 50);
    expect((await deleting).name).toBe('data');
  });
});
