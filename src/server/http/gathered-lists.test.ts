/**
 * A list every node of a cluster answers in part (sessions, kernels, sandboxes, conversations),
 * when a peer does not give its part: one real node on the scripted backend and a peer whose
 * heartbeat is real (a Cluster on the same directory store) and whose HTTP the test decides. A
 * peer reached that gives no list makes the list a 503 in the door's shape, never a list with its
 * sessions missing; a peer that cannot be reached is taken for dead and left out.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { byCode } from '../../../test/support/kernel-script.js';
import { freePort } from '../../../test/support/readme.js';
import { startScriptedServer } from '../../../test/support/server.js';
import { FsObjectStore } from '../../store/fs-object-store.js';
import { Cluster } from '../core/cluster.js';

const scratch = mkdtempSync(path.join(os.tmpdir(), 'sandcell-lists-'));
const HEARTBEAT_MS = 500;
const KEY = 'e2b_00112233445566778899aabbccddeeff';
const AUTH = { authorization: `Bearer ${KEY}` };
let server: Awaited<ReturnType<typeof startScriptedServer>>;

beforeAll(async () => {
  process.env.SANDCELL_SNAPSHOT_SECRET = randomBytes(32).toString('hex');
  const port = await freePort();
  server = await startScriptedServer(byCode({}), {
    port,
    store: `fs://${path.join(scratch, 'store')}`,
    nodeName: 'node-a',
    advertiseUrl: `http://127.0.0.1:${port}`,
    heartbeatMs: HEARTBEAT_MS,
    apiKeys: [KEY],
  });
});

afterAll(async () => {
  await server?.close();
  rmSync(scratch, { recursive: true, force: true });
});

describe('a list every node answers in part', () => {
  it("is a 503 in the door's shape while a live peer is reached but gives no list, and leaves out a peer that cannot be reached", async () => {
    // A peer whose heartbeat is real (a Cluster on the same store) and whose HTTP answers the test decides.
    let behaviour: 'refuse' | 'hang-up' = 'refuse';
    const peer = createServer((request, response) => {
      if (behaviour === 'hang-up') request.socket.destroy();
      else response.writeHead(500, { 'content-type': 'application/json' }).end('{}');
    });
    await new Promise<void>((resolve) => peer.listen(0, '127.0.0.1', resolve));
    const { port } = peer.address() as AddressInfo;
    const mute = new Cluster({
      node: 'node-mute',
      url: `http://127.0.0.1:${port}`,
      objects: async () => new FsObjectStore(path.join(scratch, 'store')),
      logger: pino({ level: 'silent' }),
      load: () => ({ live: 0, max: 10, draining: false }),
      heartbeatMs: HEARTBEAT_MS,
    });
    await mute.start();
    try {
      await vi.waitFor(
        async () => {
          const metrics = await (await fetch(`${server.url}/metrics`, { headers: AUTH })).text();
          expect(metrics).toContain('sandcell_cluster_peer_alive{peer="node-mute"} 1');
        },
        { timeout: 10_000, interval: 100 },
      );
      const list = (route: string) => fetch(`${server.url}${route}`, { headers: AUTH });
      for (const mode of ['refuse', 'hang-up'] as const) {
        behaviour = mode;
        const sessions = await list('/v1/sessions');
        expect(sessions.status).toBe(503);
        expect(sessions.headers.get('retry-after')).toBe('1');
        expect(await sessions.json()).toEqual({
          error: { code: 'list-incomplete', message: expect.stringContaining('node-mute did not give its part') },
        });
        const kernels = await list('/jupyter/api/kernels');
        expect(kernels.status).toBe(503);
        expect(await kernels.json()).toEqual({ reason: 'list-incomplete', message: expect.any(String) });
        const sandboxes = await list('/e2b/v2/sandboxes');
        expect(sandboxes.status).toBe(503);
        expect(await sandboxes.json()).toEqual({ code: 503, message: expect.stringContaining('node-mute') });
      }
      // Gone from its address (its record still fresh): taken for dead, and the list is the others'.
      await new Promise<void>((resolve) => peer.close(() => resolve()));
      const sessions = await list('/v1/sessions');
      expect(sessions.status).toBe(200);
      expect(await sessions.json()).toEqual({ sessions: expect.any(Array) });
    } finally {
      await mute.stop();
      peer.close();
    }
  });
});
