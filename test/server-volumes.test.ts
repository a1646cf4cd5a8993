/**
 * Volumes through /v1 on real bubblewrap sandboxes: made, listed with the key's quota, mounted by a
 * session's creation, written in the sandbox and read through the API (and the other way), another
 * key's refused everywhere, not deleted while mounted (409 naming the session), a fork and a
 * pause/resume mounting them again, and a resume after the volume was deleted saying so.
 */
import { mkdtemp } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SandcellServer } from '../src/server/index.js';
import { type Client, client, startTestServer } from './support/server.js';
import { removeStateDirectory } from './support/volumes.js';

const KEY = 'volume-key-one';
const OTHER = 'volume-key-two';
let server: SandcellServer;
let api: Client;
let other: Client;
let stateDirectory: string;

beforeAll(async () => {
  stateDirectory = await mkdtemp(path.join(os.tmpdir(), 'sandcell-v1-volumes-'));
  server = await startTestServer({ apiKeys: [KEY, OTHER], stateDirectory });
  api = client(server, KEY);
  other = client(server, OTHER);
});
afterAll(async () => {
  await server?.close();
  removeStateDirectory(stateDirectory);
});

async function run(id: string, code: string): Promise<string> {
  const execution = await api.json<{ stdout: string; error?: unknown }>(`/v1/sessions/${id}/executions`, {
    method: 'POST',
    json: { code },
  });
  expect(execution.error).toBeUndefined();
  return execution.stdout.trim();
}

describe('/v1 volumes', () => {
  it('made, mounted, written on both sides, refused to another key, kept from deletion while mounted', async () => {
    const made = await api.json<{ id: string; name: string }>('/v1/volumes', {
      method: 'POST',
      json: { name: 'work' },
    });
    expect(made.name).toBe('work');
    expect((await api('/v1/volumes', { method: 'POST', json: { name: 'work' } })).status).toBe(409);
    expect((await api('/v1/volumes', { method: 'POST', json: { name: '../up' } })).status).toBe(400);
    const listed = await api.json<{ volumes: { name: string }[]; quotaBytes: number; enforced: boolean }>(
      '/v1/volumes',
    );
    expect(listed.volumes.map((volume) => volume.name)).toEqual(['work']);
    expect(listed.quotaBytes).toBe(10 * 1024 ** 3);

    const session = await api.json<{ id: string; volumes: unknown[] }>('/v1/sessions', {
      method: 'POST',
      json: {
        volumes: [
          { volume: 'work', path: '/mnt/work' },
          { volume: made.id, path: '/mnt/ro', readOnly: true },
        ],
      },
    });
    expect(session.volumes).toEqual([
      { volumeId: made.id, volume: 'work', path: '/mnt/work', readOnly: false },
      { volumeId: made.id, volume: 'work', path: '/mnt/ro', readOnly: true },
    ]);
    expect(await run(session.id, "open('/mnt/work/notes.txt', 'w').write('written inside'); print('ok')")).toBe('ok');
    const read = await api('/v1/volumes/work/files/notes.txt');
    expect([read.status, await read.text()]).toEqual([200, 'written inside']);
    const put = await api('/v1/volumes/work/files/in/deep/data.csv', { method: 'PUT', body: 'a,b\n1,2\n' });
    expect(put.status).toBe(201);
    expect(await run(session.id, "print(open('/mnt/ro/in/deep/data.csv').read().split()[1])")).toBe('1,2');
    const listing = await api.json<{ entries: { path: string }[] }>('/v1/volumes/work/files?depth=3');
    expect(listing.entries.map((entry) => entry.path)).toEqual(['/in', '/in/deep', '/in/deep/data.csv', '/notes.txt']);
    expect((await api.json<{ mountedBy: string[] }>('/v1/volumes/work')).mountedBy).toEqual([session.id]);

    // Another key: no such volume, by name or id, for a mount, its files or a delete.
    for (const target of ['/v1/volumes/work', `/v1/volumes/${made.id}`, '/v1/volumes/work/files/notes.txt']) {
      expect((await other(target)).status).toBe(404);
    }
    expect((await other('/v1/volumes/work', { method: 'DELETE' })).status).toBe(404);
    const foreign = await other('/v1/sessions', {
      method: 'POST',
      json: { volumes: [{ volume: made.id, path: '/mnt/x' }] },
    });
    expect(foreign.status).toBe(404);
    expect((await other.json<{ volumes: unknown[] }>('/v1/volumes')).volumes).toEqual([]);

    // Paths that leave the volume or the sandbox's room are refused.
    expect((await api('/v1/volumes/work/files/..%2F..%2Fcatalog.json')).status).toBe(400);
    const badMount = await api('/v1/sessions', {
      method: 'POST',
      json: { volumes: [{ volume: 'work', path: '/etc' }] },
    });
    expect(badMount.status).toBe(400);

    const refused = await api('/v1/volumes/work', { method: 'DELETE' });
    expect(refused.status).toBe(409);
    expect(await refused.text()).toContain(`session ${session.id}`);
    expect((await api(`/v1/sessions/${session.id}`, { method: 'DELETE' })).status).toBe(204);
    expect((await api('/v1/volumes/work', { method: 'DELETE' })).status).toBe(204);
    expect((await api('/v1/volumes/work/files/notes.txt')).status).toBe(404);
  });

  it('a fork and a resume mount the volumes again; a resume after a delete says the volume is gone', async () => {
    await api.json('/v1/volumes', { method: 'POST', json: { name: 'kept' } });
    await api.json('/v1/volumes', { method: 'POST', json: { name: 'dropped' } });
    const session = await api.json<{ id: string }>('/v1/sessions', {
      method: 'POST',
      json: {
        volumes: [
          { volume: 'kept', path: '/mnt/kept' },
          { volume: 'dropped', path: '/mnt/dropped' },
        ],
      },
    });
    await run(session.id, "open('/mnt/kept/state.txt', 'w').write('kept'); x = 7");
    const fork = await api.json<{ id: string; volumes: { path: string }[] }>(`/v1/sessions/${session.id}/fork`, {
      method: 'POST',
    });
    expect(fork.volumes.map((volume) => volume.path)).toEqual(['/mnt/kept', '/mnt/dropped']);
    expect(await run(fork.id, "print(x, open('/mnt/kept/state.txt').read())")).toBe('7 kept');
    await api(`/v1/sessions/${fork.id}`, { method: 'DELETE' });

    expect((await api(`/v1/sessions/${session.id}/pause`, { method: 'POST' })).status).toBe(200);
    // Paused: nothing mounts it, so it may go; the resume says so.
    const dropped = await api('/v1/volumes/dropped', { method: 'DELETE' });
    expect([dropped.status, await dropped.text()]).toEqual([204, '']);
    const resumed = await api.json<{
      volumes: { path: string }[];
      restored: { notKept: { name: string; reason: string }[] };
    }>(`/v1/sessions/${session.id}/resume`, { method: 'POST' });
    expect(resumed.volumes.map((volume) => volume.path)).toEqual(['/mnt/kept']);
    expect(resumed.restored.notKept).toContainEqual({
      name: 'volume dropped at /mnt/dropped',
      reason: 'the volume was deleted after the snapshot, so it is not mounted',
    });
    expect(await run(session.id, "print(x, open('/mnt/kept/state.txt').read())")).toBe('7 kept');
    await api(`/v1/sessions/${session.id}`, { method: 'DELETE' });
  });
});
