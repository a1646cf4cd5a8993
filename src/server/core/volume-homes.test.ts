/**
 * Where a key's volumes live in a cluster (volume-homes.ts), as two nodes sharing a store (a
 * directory here) see it: nodes asked for a key's first volume at once agree on one home; a volume's
 * id names its node; a home that serves is asked, one that is draining still serves files but starts
 * no session, and one gone is said to be gone.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { FsObjectStore } from '../../store/fs-object-store.js';
import { VolumesElsewhereError } from '../../volumes/volume-errors.js';
import { Cluster } from './cluster.js';
import { VolumeHomes } from './volume-homes.js';

const scratch = mkdtempSync(path.join(os.tmpdir(), 'sandcell-volume-homes-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

function nodesOn(directory: string) {
  const objects = new FsObjectStore(directory);
  return (node: string, draining = false) => {
    const cluster = new Cluster({
      node,
      url: `http://${node}:8080`,
      objects: async () => objects,
      logger: pino({ level: 'silent' }),
      load: () => ({ live: 0, max: 10, draining }),
      heartbeatMs: 60_000,
    });
    return { cluster, homes: new VolumeHomes(cluster, async () => objects) };
  };
}

describe('VolumeHomes', () => {
  it('nodes asked for a key’s first volume at once agree on one home, and a key without volumes has none', async () => {
    const node = nodesOn(mkdtempSync(path.join(scratch, 'claim-')));
    const ant = node('ant');
    const bee = node('bee');
    expect(await ant.homes.homeOf('key-1')).toBeUndefined();
    const [byAnt, byBee] = await Promise.all([ant.homes.homeOf('key-1', true), bee.homes.homeOf('key-1', true)]);
    expect(byAnt).toBe(byBee);
    expect(['ant', 'bee']).toContain(byAnt);
    // Another key's home is its own.
    expect(await bee.homes.homeOf('key-2', true)).toBe('bee');
    expect(await ant.homes.homeOf('key-2')).toBe('bee');
  });

  it('a home that serves is asked (a draining one for files, not sessions); one gone is named, with nothing to ask', async () => {
    const node = nodesOn(mkdtempSync(path.join(scratch, 'elsewhere-')));
    const ant = node('ant');
    const bee = node('bee', true);
    await ant.cluster.start();
    await bee.cluster.start();
    // Each reads the other's record (a heartbeat's reading, now).
    await ant.cluster.announce();
    const files = await ant.homes.elsewhere('bee', 'files');
    expect(files).toBeInstanceOf(VolumesElsewhereError);
    expect(files.relayTo).toEqual({ node: 'bee', url: 'http://bee:8080' });
    const sessions = await ant.homes.elsewhere('bee', 'sessions');
    expect(sessions.relayTo).toBeUndefined();
    expect(sessions.message).toMatch(/node bee, which is draining/);
    const gone = await ant.homes.elsewhere('cat', 'files');
    expect(gone.relayTo).toBeUndefined();
    expect(gone.message).toMatch(/node cat, which is not in the cluster now/);
    // A draining node asked for a key's first volume has a peer that is not draining make it: none here.
    expect((await bee.homes.elsewhere(undefined, 'files')).relayTo).toEqual({ node: 'ant', url: 'http://ant:8080' });
    expect((await ant.homes.elsewhere(undefined, 'files')).relayTo).toBeUndefined();

    // A volume's id names its node by its tag: this node's, and what is no volume id, are this node's to answer.
    const tagged = (cluster: Cluster) => `vol${cluster.tag}${'0'.repeat(12)}`;
    expect(await ant.homes.homeOfVolume(tagged(ant.cluster))).toBeUndefined();
    expect(await ant.homes.homeOfVolume('not-a-volume-id')).toBeUndefined();
    expect(await ant.homes.homeOfVolume(tagged(bee.cluster))).toBe('bee');
    await bee.cluster.stop();
    const away = `vol${'ab'.repeat(4)}${'0'.repeat(12)}`;
    await expect(ant.homes.homeOfVolume(away)).rejects.toThrow(/kept on a node that is not in the cluster now/);
    await ant.cluster.stop();
  });
});
