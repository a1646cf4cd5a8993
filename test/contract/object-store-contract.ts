/**
 * What every object store keeps (src/store/object-store.ts), run on each
 * driver against the real thing or its emulator: objects written whole or
 * not at all, streamed in and out with their size and SHA-256 counted, listed
 * by prefix, deleted idempotently, read within a bound, keys checked, and
 * exactly one winner of a conditional write where the service enforces it.
 */
import { createHash, randomBytes } from 'node:crypto';
import { expect, it } from 'vitest';
import { listKeys, type ObjectStore } from '../../src/store/object-store.js';

export interface ObjectStoreContractOptions {
  /** A store with nothing under its prefix, for one case. */
  store: () => ObjectStore | Promise<ObjectStore>;
  /**
   * Whether the service refuses a second create of a key (If-None-Match: * on a put). Real S3 and
   * Azure do; an emulator that ignores the header cannot show it, and the driver's request is
   * then checked in its unit test.
   */
  conditionalWrites: boolean;
}

const text = (bytes: Uint8Array | undefined) => (bytes === undefined ? undefined : Buffer.from(bytes).toString());

async function* chunks(...parts: (string | Buffer)[]): AsyncIterable<Uint8Array> {
  for (const part of parts) yield Buffer.from(part);
}

async function* failingAfter(part: string): AsyncIterable<Uint8Array> {
  yield Buffer.from(part);
  throw new Error('the sandbox went away');
}

async function gathered(stream: AsyncIterable<Uint8Array> | undefined): Promise<Buffer> {
  const parts: Buffer[] = [];
  for await (const chunk of stream ?? []) parts.push(Buffer.from(chunk));
  return Buffer.concat(parts);
}

export function runObjectStoreContract({ store: make, conditionalWrites }: ObjectStoreContractOptions): void {
  it('writes, reads, streams, lists and deletes objects, counting size and SHA-256 as they go', async () => {
    const store = await make();
    const written = await store.write('snapshots/a/1/files.tar', chunks('hello ', 'world'));
    expect(written).toEqual({
      bytes: 11,
      sha256: 'b94d27b9934d3e08a52e52d7da7dabfac484efe37a5380ee9088f7ace2efcde9',
    });
    await store.write('snapshots/a/2/manifest.json', Buffer.from('{}'));
    await store.write('snapshots/b/1/manifest.json', Buffer.from('{}'));
    expect(text(await store.read('snapshots/a/1/files.tar', 100))).toBe('hello world');
    expect((await gathered(await store.open('snapshots/a/1/files.tar'))).toString()).toBe('hello world');
    const listed = [];
    for await (const object of store.list('snapshots/a/')) listed.push(object);
    expect(listed.map((object) => [object.key, object.bytes]).sort()).toEqual([
      ['snapshots/a/1/files.tar', 11],
      ['snapshots/a/2/manifest.json', 2],
    ]);
    expect(listed.every((object) => Math.abs(object.modifiedAt.getTime() - Date.now()) < 600_000)).toBe(true);
    expect((await listKeys(store, 'snapshots/')).length).toBe(3);
    expect(await listKeys(store, 'nothing/here/')).toEqual([]);
    await store.delete('snapshots/a/1/files.tar');
    await store.delete('snapshots/a/1/files.tar');
    expect(await store.read('snapshots/a/1/files.tar', 100)).toBeUndefined();
    expect(await store.open('snapshots/a/1/files.tar')).toBeUndefined();
  });

  it('streams a large object in and out whole (parts, for a service that has them)', async () => {
    const store = await make();
    const piece = randomBytes(1024 * 1024);
    const pieces = Array.from({ length: 20 }, (_, index) => Buffer.concat([piece, Buffer.from([index])]));
    const whole = Buffer.concat(pieces);
    const written = await store.write('large/archive', chunks(...pieces));
    expect(written).toEqual({ bytes: whole.length, sha256: createHash('sha256').update(whole).digest('hex') });
    const back = await gathered(await store.open('large/archive'));
    expect(back.length).toBe(whole.length);
    expect(back.equals(whole)).toBe(true);
    // Asked for no digest (a published output): the same bytes, only their count.
    expect(await store.write('large/output', chunks(...pieces), { digest: false })).toEqual({ bytes: whole.length });
    expect((await gathered(await store.open('large/output'))).equals(whole)).toBe(true);
  });

  it('keeps the old object whole when a new body fails half-way', async () => {
    const store = await make();
    await store.write('s/k', Buffer.from('old and whole'));
    await expect(store.write('s/k', failingAfter('new but half'))).rejects.toThrow('the sandbox went away');
    expect(text(await store.read('s/k', 100))).toBe('old and whole');
    await expect(store.write('s/new', failingAfter('half'))).rejects.toThrow('the sandbox went away');
    expect(await listKeys(store, 's/')).toEqual(['s/k']);
  });

  it.runIf(conditionalWrites)('lets exactly one of two writers create a key with writeIfAbsent', async () => {
    const store = await make();
    const outcomes = await Promise.all(
      ['first', 'second', 'third'].map((word) => store.writeIfAbsent('catalog/session', Buffer.from(word))),
    );
    expect(outcomes.filter((outcome) => outcome !== undefined)).toHaveLength(1);
    const winner = ['first', 'second', 'third'][outcomes.findIndex((outcome) => outcome !== undefined)];
    expect(text(await store.read('catalog/session', 100))).toBe(winner);
    expect(await store.writeIfAbsent('catalog/session', Buffer.from('late'))).toBeUndefined();
    expect(text(await store.read('catalog/session', 100))).toBe(winner);
  });

  it('refuses keys that could leave its prefix, writing nothing', async () => {
    const store = await make();
    for (const key of ['../x', 'a/../../x', '/etc/passwd', 'a//b', '.partial-x', 'A/b', 'a/b c', '', 'a/.']) {
      await expect(store.write(key, Buffer.from('x')), key).rejects.toThrow('Not a valid object key');
    }
    expect(await listKeys(store, '')).toEqual([]);
  });

  it('reads an object only up to the size the caller expects', async () => {
    const store = await make();
    await store.write('m/manifest.json', Buffer.alloc(2048));
    await expect(store.read('m/manifest.json', 1024)).rejects.toThrow('over the 1024 expected');
  });
}
