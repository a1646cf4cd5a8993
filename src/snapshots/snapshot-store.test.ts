/**
 * Signed snapshots on the directory store: a snapshot exists only once its
 * manifest is written, verifies under the secret it was written with and for
 * the owner that wrote it, and a part that changed by one byte is refused.
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm, utimes, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FsObjectStore } from '../store/fs-object-store.js';
import { listKeys } from '../store/object-store.js';
import { SnapshotInvalidError, SnapshotNotFoundError } from './snapshot-errors.js';
import { type SnapshotManifest, SnapshotStore, snapshotOwner } from './snapshot-store.js';

let root: string;
let objects: FsObjectStore;
let snapshots: SnapshotStore;
const secret = randomBytes(32);

beforeEach(async () => {
  root = await mkdtemp(path.join(os.tmpdir(), 'sandcell-snapshots-'));
  objects = new FsObjectStore(root);
  snapshots = new SnapshotStore(objects, secret);
});
afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

async function readPart(store: SnapshotStore, manifest: SnapshotManifest, name: string): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of store.part(manifest, name)) chunks.push(Buffer.from(chunk));
  return Buffer.concat(chunks).toString();
}

async function take(owner = 'key-alice', parts: Record<string, string> = { 'files.tar': 'files', python: 'x = 1' }) {
  const writer = snapshots.begin(owner, 'session-1');
  for (const [name, body] of Object.entries(parts)) await writer.part(name, Buffer.from(body));
  return writer.commit({ contexts: ['python'] });
}

const manifestFile = (manifest: SnapshotManifest) =>
  path.join(root, 'snapshots', manifest.owner, manifest.id, 'manifest.json');

describe('SnapshotStore', () => {
  it('writes parts, then a signed manifest; reads both back for the owner that wrote them', async () => {
    const manifest = await take();
    expect(manifest).toMatchObject({ format: 1, sessionId: 'session-1', details: { contexts: ['python'] } });
    expect(manifest.parts.map((part) => [part.name, part.bytes])).toEqual([
      ['files.tar', 5],
      ['python', 5],
    ]);
    expect(await snapshots.manifest('key-alice', manifest.id)).toEqual(manifest);
    expect(await readPart(snapshots, manifest, 'python')).toBe('x = 1');
    expect((await snapshots.list('key-alice')).map((listed) => listed.id)).toEqual([manifest.id]);
    expect(await readFile(manifestFile(manifest), 'utf8')).not.toContain('key-alice');
  });

  it('has no snapshot until its manifest is written; a crash before that leaves parts that are pruned', async () => {
    const writer = snapshots.begin('key-alice', 'session-1');
    await writer.part('files.tar', Buffer.from('files'));
    expect(await snapshots.list('key-alice')).toEqual([]);
    await expect(snapshots.manifest('key-alice', writer.id)).rejects.toBeInstanceOf(SnapshotNotFoundError);
    // Younger than an hour: a snapshot may still be being written.
    expect(await snapshots.pruneOrphans()).toBe(0);
    const whole = await take();
    const orphan = path.join(root, 'snapshots', snapshotOwner('key-alice'), writer.id, 'files.tar');
    const twoHoursAgo = new Date(Date.now() - 7_200_000);
    await utimes(orphan, twoHoursAgo, twoHoursAgo);
    expect(await snapshots.pruneOrphans()).toBe(1);
    expect(await listKeys(objects, `snapshots/${snapshotOwner('key-alice')}/${writer.id}/`)).toEqual([]);
    expect(await readPart(snapshots, whole, 'files.tar')).toBe('files');
  });

  it("refuses another key's snapshot: not found by id, and refused when its manifest is copied over", async () => {
    const alices = await take('key-alice');
    await expect(snapshots.manifest('key-bob', alices.id)).rejects.toBeInstanceOf(SnapshotNotFoundError);
    expect(await snapshots.list('key-bob')).toEqual([]);
    const stolen = path.join(root, 'snapshots', snapshotOwner('key-bob'), alices.id, 'manifest.json');
    await objects.write(
      `snapshots/${snapshotOwner('key-bob')}/${alices.id}/manifest.json`,
      await readFile(manifestFile(alices)),
    );
    expect(await readFile(stolen, 'utf8')).toContain(alices.id);
    await expect(snapshots.manifest('key-bob', alices.id)).rejects.toThrow('it belongs to another key');
  });

  it('refuses a manifest that was edited, or signed with another secret', async () => {
    const manifest = await take();
    const signed = JSON.parse(await readFile(manifestFile(manifest), 'utf8'));
    signed.manifest.sessionId = 'session-2';
    await writeFile(manifestFile(manifest), JSON.stringify(signed));
    await expect(snapshots.manifest('key-alice', manifest.id)).rejects.toThrow('its signature does not verify');
    expect(await snapshots.list('key-alice')).toEqual([]);

    const other = await take();
    const elsewhere = new SnapshotStore(objects, randomBytes(32));
    await expect(elsewhere.manifest('key-alice', other.id)).rejects.toBeInstanceOf(SnapshotInvalidError);
    await writeFile(manifestFile(other), 'not json');
    await expect(snapshots.manifest('key-alice', other.id)).rejects.toThrow('its manifest is not JSON');
  });

  it('refuses a part changed by one byte, cut short, grown or missing, at the end of its stream', async () => {
    const manifest = await take('key-alice', { python: 'x = 1', r: 'y <- 2', bash: 'z=3' });
    const partFile = (name: string) => path.join(root, 'snapshots', manifest.owner, manifest.id, name);
    await writeFile(partFile('python'), 'x = 2');
    await expect(readPart(snapshots, manifest, 'python')).rejects.toThrow('its part python is not what was written');
    await writeFile(partFile('r'), 'y <- 2; system("id")');
    await expect(readPart(snapshots, manifest, 'r')).rejects.toThrow('its part r is longer than recorded');
    await rm(partFile('bash'));
    await expect(readPart(snapshots, manifest, 'bash')).rejects.toThrow('its part bash is missing');
    await expect(readPart(snapshots, manifest, 'nothing')).rejects.toThrow('it has no part "nothing"');
  });

  it('deletes a snapshot whole, and only its owner can', async () => {
    const manifest = await take();
    await expect(snapshots.delete('key-bob', manifest.id)).rejects.toBeInstanceOf(SnapshotNotFoundError);
    await snapshots.delete('key-alice', manifest.id);
    expect(await listKeys(objects, 'snapshots/')).toEqual([]);
    await expect(snapshots.manifest('key-alice', manifest.id)).rejects.toBeInstanceOf(SnapshotNotFoundError);
  });

  it('refuses part names that are not plain words, and ids that are not ids', async () => {
    const writer = snapshots.begin('key-alice', 'session-1');
    for (const name of ['manifest.json', '../x', 'a/b', '', 'UPPER']) {
      await expect(writer.part(name, Buffer.from('x')), name).rejects.toThrow('Not a valid or new snapshot part name');
    }
    await expect(snapshots.manifest('key-alice', '../../etc')).rejects.toBeInstanceOf(SnapshotNotFoundError);
  });
});
