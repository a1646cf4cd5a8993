/**
 * PausedSessions on a named store (`fs://`, a directory, whose conditional
 * writes are O_EXCL): the start-time check, the secret a named store needs,
 * claims of two servers on one paused session, and the markers that tell a
 * session live on another server from one lost here.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, utimesSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { FsObjectStore } from '../../store/fs-object-store.js';
import { listKeys } from '../../store/object-store.js';
import { type PausedRecord, PausedSessions } from './paused-sessions.js';

const scratch = mkdtempSync(path.join(os.tmpdir(), 'sandcell-paused-sessions-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

const SECRET = randomBytes(32).toString('hex');
const record = (snapshotId?: string, node?: string): PausedRecord => ({
  id: 'session1',
  source: 'v1',
  environment: 'default',
  reason: 'requested',
  pausedAt: new Date().toISOString(),
  ...(snapshotId ? { snapshotId } : { lost: 'stopped' }),
  ...(node ? { node } : {}),
});

function onStore(directory: string, node: string, environment: Record<string, string> = {}): PausedSessions {
  return new PausedSessions({
    stateDirectory: false,
    store: `fs://${directory}`,
    environment: { SANDCELL_SNAPSHOT_SECRET: SECRET, SANDCELL_NODE_NAME: node, ...environment },
  });
}

describe('paused sessions on a named store', () => {
  it('check() writes, reads back, lists and deletes a probe, leaving nothing behind', async () => {
    const directory = mkdtempSync(path.join(scratch, 'check-'));
    const { location, clockSkewMs } = await onStore(directory, 'a').check();
    expect(location).toBe(`fs://${directory}`);
    expect(clockSkewMs).toBe(0);
    expect(await listKeys(new FsObjectStore(directory), '')).toEqual([]);
  });

  it('check() names the store and its error when it cannot be written', async () => {
    const file = path.join(scratch, 'a-file');
    await new FsObjectStore(scratch).write('a-file', Buffer.from('x'));
    await expect(onStore(file, 'a').check()).rejects.toThrow(`Cannot use the store fs://${file}:`);
  });

  it('a named store needs SANDCELL_SNAPSHOT_SECRET, unless it is a directory beside a state directory', async () => {
    const directory = mkdtempSync(path.join(scratch, 'secret-'));
    const without = new PausedSessions({ stateDirectory: false, store: `fs://${directory}`, environment: {} });
    await expect(without.check()).rejects.toThrow('needs SANDCELL_SNAPSHOT_SECRET');
    const beside = new PausedSessions({
      stateDirectory: mkdtempSync(path.join(scratch, 'state-')),
      store: `fs://${directory}`,
      environment: {},
    });
    await expect(beside.check()).resolves.toMatchObject({ location: `fs://${directory}` });
  });

  it('of two servers claiming one paused session, exactly one wins; the winner may claim again, a released claim is free', async () => {
    const directory = mkdtempSync(path.join(scratch, 'claims-'));
    const [a, b] = [onStore(directory, 'a'), onStore(directory, 'b')];
    const paused = record('0123456789abcdef0123456789abcdef');
    const claims = await Promise.all([a.claim('owner', paused), b.claim('owner', paused)]);
    expect(claims.filter(Boolean)).toHaveLength(1);
    const [winner, loser] = claims[0] ? [a, b] : [b, a];
    expect(await winner.claim('owner', paused)).toBe(true);
    expect(await loser.claim('owner', paused)).toBe(false);
    await winner.release('owner', paused.snapshotId as string);
    expect(await loser.claim('owner', paused)).toBe(true);
  });

  it('a claim left by a server that died resuming goes stale after ten minutes', async () => {
    const directory = mkdtempSync(path.join(scratch, 'stale-'));
    const paused = record('fedcba9876543210fedcba9876543210');
    expect(await onStore(directory, 'a').claim('owner', paused)).toBe(true);
    const [claim] = await listKeys(new FsObjectStore(directory), 'claims/');
    // The claim says when it was made; a day-old one is rewritten in place by the next claimant.
    const stale = Buffer.from(JSON.stringify({ holder: 'dead', at: Date.now() - 86_400_000 }));
    await new FsObjectStore(directory).write(claim as string, stale);
    expect(await onStore(directory, 'b').claim('owner', paused)).toBe(true);
    // A claim of an earlier process of this server (the same node name) is a dead one's, whatever its age.
    expect(await onStore(directory, 'c').claim('owner', paused)).toBe(false);
    expect(await onStore(directory, 'b').claim('owner', paused)).toBe(true);
    // Retention removes claims whose snapshot is long gone.
    utimesSync(path.join(directory, claim as string), new Date(0), new Date(0));
    await onStore(directory, 'b').expire(60_000);
    expect(await listKeys(new FsObjectStore(directory), 'claims/')).toEqual([]);
  });

  it('a new name claimed by one node is respected by another while its session starts, and taken over once stale', async () => {
    const directory = mkdtempSync(path.join(scratch, 'names-'));
    const [a, b] = [onStore(directory, 'a'), onStore(directory, 'b')];
    // Both nodes are asked for the same new name: a claims it first; b is told a's id, not given the name.
    expect(await a.claimName('owner', 'azure', 'my-pool-1', 'aaaaaaaa-1')).toBeUndefined();
    expect(await b.claimName('owner', 'azure', 'my-pool-1', 'bbbbbbbb-1')).toBe('aaaaaaaa-1');
    expect(await a.claimName('owner', 'azure', 'my-pool-1', 'aaaaaaaa-1')).toBeUndefined();
    // Once a's session is recorded, its name finds it.
    const started = { ...record(undefined, 'a'), id: 'aaaaaaaa-1', name: 'my-pool-1', scope: 'azure' };
    await a.record('owner', started);
    expect((await b.findByName('owner', 'azure', 'my-pool-1'))?.id).toBe('aaaaaaaa-1');
    expect(await b.claimName('owner', 'azure', 'my-pool-1', 'bbbbbbbb-2')).toBe('aaaaaaaa-1');
    // A claim whose session never started (no record), older than CLAIM_STALE_MS, is free to take.
    const store = new FsObjectStore(directory);
    const [nameKey] = await listKeys(store, 'paused-names/');
    expect(nameKey).toBeDefined();
    await a.remove('owner', started);
    expect(await listKeys(store, 'paused-names/')).toEqual([]);
    await store.write(
      nameKey as string,
      Buffer.from(JSON.stringify({ id: 'dead0000-1', claimedAt: Date.now() - 600_000 })),
    );
    expect(await b.claimName('owner', 'azure', 'my-pool-1', 'bbbbbbbb-3')).toBeUndefined();
    expect(await a.claimName('owner', 'azure', 'my-pool-1', 'aaaaaaaa-4')).toBe('bbbbbbbb-3');
    // A claim from a node whose clock runs a few seconds ahead is a fresh one, not a stale one.
    await store.write(
      nameKey as string,
      Buffer.from(JSON.stringify({ id: 'cccccccc-1', claimedAt: Date.now() + 5_000 })),
    );
    expect(await a.claimName('owner', 'azure', 'my-pool-1', 'aaaaaaaa-6')).toBe('cccccccc-1');
    // Bytes that are no claim and no id do not stand for a session: the name is free.
    await store.write(nameKey as string, Buffer.from('{"claimedAt": "soon"}'));
    expect(await a.claimName('owner', 'azure', 'my-pool-1', 'aaaaaaaa-5')).toBeUndefined();
  });

  it("a lost marker names its server: another server's is elsewhere, this server's (or an unnamed one) is lost", () => {
    const a = onStore(scratch, 'node-a');
    expect(a.elsewhere(record(undefined, 'node-b'))).toBe(true);
    expect(a.elsewhere(record(undefined, 'node-a'))).toBe(false);
    expect(a.elsewhere(record(undefined))).toBe(false);
    expect(a.elsewhere(record('0123456789abcdef0123456789abcdef', 'node-b'))).toBe(false);
  });
});
