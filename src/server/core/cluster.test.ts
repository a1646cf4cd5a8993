/**
 * Who is alive, as one node of a cluster sees the others through their records in a shared store
 * (a directory here): a node is dead once its record stops changing, not when this node's own
 * reading of the records is old (its heartbeats late on a busy machine).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { FsObjectStore } from '../../store/fs-object-store.js';
import { Cluster } from './cluster.js';

const scratch = mkdtempSync(path.join(os.tmpdir(), 'sandcell-cluster-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));
afterEach(() => vi.useRealTimers());

/** Heartbeats a minute apart, so that only the test moves the nodes' clocks and readings. */
const HEARTBEAT_MS = 60_000;

function nodesOn(directory: string) {
  const objects = new FsObjectStore(directory);
  return (node: string) =>
    new Cluster({
      node,
      url: `http://${node}:8080`,
      objects: async () => objects,
      logger: pino({ level: 'silent' }),
      load: () => ({ live: 0, max: 10, draining: false }),
      heartbeatMs: HEARTBEAT_MS,
    });
}

describe('Cluster: who is alive', () => {
  it('a peer whose record changed since this node last read it is alive, however late that reading', async () => {
    const node = nodesOn(mkdtempSync(path.join(scratch, 'late-')));
    const ant = node('ant');
    const bee = node('bee');
    await ant.start();
    await bee.start();
    expect(await bee.isAlive('ant')).toBe(true);
    vi.useFakeTimers({ toFake: ['Date'] });
    // Five heartbeats on, ant has beaten (its record changed); bee has not read the records since.
    vi.setSystemTime(Date.now() + 5 * HEARTBEAT_MS);
    await ant.announce();
    expect(await bee.isAlive('ant')).toBe(true);
    expect((await bee.peerOf(ant.newSessionId()))?.node).toBe('ant');
    await Promise.all([ant.stop(), bee.stop()]);
  });

  it('a peer whose record stopped changing is dead, and one whose record is gone has left', async () => {
    const node = nodesOn(mkdtempSync(path.join(scratch, 'dead-')));
    const ant = node('ant');
    const bee = node('bee');
    const cow = node('cow');
    await Promise.all([ant.start(), bee.start(), cow.start()]);
    await bee.announce();
    expect(await bee.isAlive('ant')).toBe(true);
    vi.useFakeTimers({ toFake: ['Date'] });
    // ant stops beating (killed, its record left behind); cow leaves the cluster.
    vi.setSystemTime(Date.now() + 5 * HEARTBEAT_MS);
    await cow.stop();
    expect(await bee.isAlive('ant')).toBe(false);
    expect(await bee.peerOf(ant.newSessionId())).toBeUndefined();
    expect(await bee.isAlive('cow')).toBe(false);
    expect(bee.livePeers()).toEqual([]);
    await Promise.all([ant.stop(), bee.stop()]);
  });

  it('a node that joins just after a reading is found by the next question, not taken for gone', async () => {
    const node = nodesOn(mkdtempSync(path.join(scratch, 'joined-')));
    const ant = node('ant');
    const bee = node('bee');
    await bee.start();
    // bee has just read the records (none but its own); ant joins, and bee is asked about it at once.
    await ant.start();
    expect(await bee.isAlive('ant')).toBe(true);
    await Promise.all([ant.stop(), bee.stop()]);
  });
});
