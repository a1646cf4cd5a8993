/**
 * envd's polled watches (CreateWatcher, GetWatcherEvents, RemoveWatcher) on
 * the scripted backend: what is queued between two polls, a watcher honoured
 * only on its own sandbox, removal, and the sandbox's bound shared with
 * streamed watches. E2B's Python sync SDK drives them on real sandboxes in
 * test/python/e2b_sync.py.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type LogCapture, startScriptedServer } from '../../../test/support/server.js';
import type { SandcellServer } from '../index.js';

const KEY = 'e2b_00112233445566778899aabbccddeeff';
let server: SandcellServer & { logs: LogCapture };

beforeAll(async () => {
  server = await startScriptedServer(undefined, { apiKeys: [KEY] });
});
afterAll(async () => {
  await server?.close();
});

interface Sandbox {
  sandboxID: string;
  envdAccessToken: string;
}

async function createSandbox(): Promise<Sandbox> {
  const response = await fetch(`${server.url}/e2b/sandboxes`, {
    method: 'POST',
    headers: { 'x-api-key': KEY, 'content-type': 'application/json' },
    body: JSON.stringify({ templateID: 'base' }),
  });
  expect(response.status).toBe(201);
  return (await response.json()) as Sandbox;
}

const envdHeaders = (sandbox: Sandbox) => ({
  'e2b-sandbox-id': sandbox.sandboxID,
  'e2b-sandbox-port': '49983',
  'x-access-token': sandbox.envdAccessToken,
});

async function rpc(sandbox: Sandbox, method: string, body: unknown) {
  const response = await fetch(`${server.url}/e2b/filesystem.Filesystem/${method}`, {
    method: 'POST',
    headers: { ...envdHeaders(sandbox), 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

async function upload(sandbox: Sandbox, path: string, text: string) {
  const response = await fetch(`${server.url}/e2b/files?path=${encodeURIComponent(path)}`, {
    method: 'POST',
    headers: { ...envdHeaders(sandbox), 'content-type': 'application/octet-stream' },
    body: text,
  });
  expect(response.status).toBe(200);
}

/** Asks for events until some arrive (the watcher lists every half second), within a few seconds. */
async function nextEvents(sandbox: Sandbox, watcherId: string) {
  for (let attempt = 0; attempt < 40; attempt += 1) {
    const answer = await rpc(sandbox, 'GetWatcherEvents', { watcherId });
    expect(answer.status).toBe(200);
    const events = answer.body.events as { name: string; type: string }[];
    if (events.length > 0) return events;
    await sleep(150);
  }
  throw new Error('no events within 6 s');
}

describe("envd's polled watchers (scripted)", () => {
  it('queues what changed between two asks, named relative to the directory, and forgets a removed watcher', async () => {
    const sandbox = await createSandbox();
    await upload(sandbox, '/home/user/watched/old.txt', 'old');
    const created = await rpc(sandbox, 'CreateWatcher', { path: '/home/user/watched' });
    expect(created.status).toBe(200);
    const watcherId = created.body.watcherId as string;
    expect(watcherId).toMatch(/^[0-9a-f]{32}$/);
    expect(await rpc(sandbox, 'GetWatcherEvents', { watcherId })).toEqual({ status: 200, body: { events: [] } });

    await upload(sandbox, '/home/user/watched/new.txt', 'hello');
    expect(await nextEvents(sandbox, watcherId)).toEqual([
      { name: 'new.txt', type: 'EVENT_TYPE_CREATE' },
      { name: 'new.txt', type: 'EVENT_TYPE_WRITE' },
    ]);
    await rpc(sandbox, 'Remove', { path: '/home/user/watched/old.txt' });
    const removed = await nextEvents(sandbox, watcherId);
    expect(removed).toEqual([{ name: 'old.txt', type: 'EVENT_TYPE_REMOVE' }]);

    // The proto's own field name is read too, as protobuf's JSON parsers do.
    expect(await rpc(sandbox, 'RemoveWatcher', { watcher_id: watcherId })).toEqual({ status: 200, body: {} });
    const after = await rpc(sandbox, 'GetWatcherEvents', { watcherId });
    expect(after.status).toBe(404);
    expect(after.body).toMatchObject({ code: 'not_found' });
  });

  it('honours a watcher only on the sandbox that made it, and refuses a missing directory or a bad id', async () => {
    const owner = await createSandbox();
    const other = await createSandbox();
    const watcherId = (await rpc(owner, 'CreateWatcher', { path: '/home/user' })).body.watcherId as string;
    for (const method of ['GetWatcherEvents', 'RemoveWatcher']) {
      const refused = await rpc(other, method, { watcherId });
      expect(refused.status).toBe(404);
      expect(refused.body).toMatchObject({ code: 'not_found' });
    }
    expect((await rpc(owner, 'GetWatcherEvents', { watcherId })).status).toBe(200);
    const missing = await rpc(owner, 'CreateWatcher', { path: '/home/user/nowhere' });
    expect(missing).toMatchObject({ status: 404, body: { code: 'not_found' } });
    const bad = await rpc(owner, 'GetWatcherEvents', { watcherId: 'x'.repeat(65) });
    expect(bad).toMatchObject({ status: 400, body: { code: 'invalid_argument' } });
    expect((await rpc(owner, 'RemoveWatcher', { watcherId })).status).toBe(200);
  });

  it('bounds watchers per sandbox, and gives the room back when one is removed', async () => {
    const sandbox = await createSandbox();
    const ids: string[] = [];
    for (let count = 0; count < 8; count += 1) {
      const created = await rpc(sandbox, 'CreateWatcher', { path: '/home/user', recursive: true });
      expect(created.status).toBe(200);
      ids.push(created.body.watcherId as string);
    }
    const ninth = await rpc(sandbox, 'CreateWatcher', { path: '/home/user' });
    expect(ninth).toMatchObject({ status: 429, body: { code: 'resource_exhausted' } });
    await rpc(sandbox, 'RemoveWatcher', { watcherId: ids.pop() });
    expect((await rpc(sandbox, 'CreateWatcher', { path: '/home/user' })).status).toBe(200);
  });
});
