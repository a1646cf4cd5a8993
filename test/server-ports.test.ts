/**
 * A /v1 session's ports on real bubblewrap sandboxes: a command starts a web app, the session
 * lists it with its URL and can be waited on until it listens, and the URL reaches it with the
 * key or a preview link (whose token becomes a cookie of that host alone), never with another
 * key's, nor without either; neither the key nor the token reaches the app. On a server without
 * keys, this machine's clients reach it as they reach the API, and a page of another site does not.
 */
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SandcellServer } from '../src/server/index.js';
import { portRequest } from './support/port-request.js';
import { client, type LogCapture, startTestServer } from './support/server.js';

const APP = readFileSync(new URL('./fixtures/ports/app.py', import.meta.url), 'utf8');
const KEY = 'ports-test-key-0000000000000001';
const OTHER = 'ports-test-key-0000000000000002';

type Server = SandcellServer & { logs: LogCapture };

/** A session running the test app on `port`, started by a background command; its id. */
async function sessionWithApp(server: Server, key: string | undefined, port: number): Promise<string> {
  const api = client(server, key);
  const { id } = await api.json<{ id: string }>('/v1/sessions', { method: 'POST', json: {} });
  const wrote = await api.json<{ stdout: string }>(`/v1/sessions/${id}/executions`, {
    method: 'POST',
    json: { code: `open("/mnt/data/app.py", "w").write(${JSON.stringify(APP)})\nprint("written")` },
  });
  expect(wrote.stdout).toBe('written\n');
  const started = await api(`/v1/sessions/${id}/commands`, {
    method: 'POST',
    json: { command: `python3 /mnt/data/app.py ${port}`, background: true },
  });
  expect(started.status).toBe(202);
  return id;
}

describe('a /v1 session’s ports, on a server with keys', () => {
  let server: Server;
  let id: string;
  const api = () => client(server, KEY);
  const host = () => `8000-${id}.localhost:${server.port}`;

  beforeAll(async () => {
    server = await startTestServer({ apiKeys: [KEY, OTHER] });
    id = await sessionWithApp(server, KEY, 8000);
  });
  afterAll(async () => {
    await server?.close();
  });

  it('waits until the app listens, then lists it with its URL', async () => {
    const waited = await api().json<{ port: number; url: string }>(`/v1/sessions/${id}/ports/8000?waitMs=20000`);
    expect(waited).toEqual({ port: 8000, address: '127.0.0.1', url: `http://${host()}/` });
    const listed = await api().json<{ ports: unknown[] }>(`/v1/sessions/${id}/ports`);
    expect(listed.ports).toContainEqual(waited);
    const none = await api()(`/v1/sessions/${id}/ports/8001`);
    expect(none.status).toBe(404);
    expect(((await none.json()) as { error: { code: string } }).error.code).toBe('port-not-listening');
    // Another key sees no such session.
    expect((await client(server, OTHER)(`/v1/sessions/${id}/ports`)).status).toBe(404);
  });

  it('serves the URL with the key, which the app never sees; another key’s request and none are not found', async () => {
    await api().json(`/v1/sessions/${id}/ports/8000?waitMs=20000`);
    const seen = await portRequest(server.port, host(), '/headers', { headers: { authorization: `Bearer ${KEY}` } });
    expect(seen.status).toBe(200);
    expect(seen.json.path).toBe('/headers');
    expect(seen.json.headers.authorization).toBeUndefined();
    const refusals: Record<string, string>[] = [
      {},
      { authorization: `Bearer ${OTHER}` },
      { authorization: 'Bearer not-a-key' },
    ];
    for (const headers of refusals) {
      const refused = await portRequest(server.port, host(), '/headers', { headers });
      expect(refused.status).toBe(404);
      expect(refused.json).toMatchObject({ sandboxId: id, code: 404 });
    }
  });

  it('a preview link becomes a cookie of that host, which reaches that port alone until it expires', async () => {
    await api().json(`/v1/sessions/${id}/ports/8000?waitMs=20000`);
    const link = await api().json<{ url: string; expiresAt: string }>(`/v1/sessions/${id}/ports/8000/preview`, {
      method: 'POST',
      json: { expiresInSeconds: 600 },
    });
    const url = new URL(link.url);
    expect(url.host).toBe(host());
    expect(Date.parse(link.expiresAt)).toBeGreaterThan(Date.now());
    const opened = await portRequest(server.port, url.host, `/headers?x=1&${url.search.slice(1)}`);
    expect(opened.status).toBe(303);
    expect(opened.headers.location).toBe('/headers?x=1');
    const cookie = String(opened.headers['set-cookie']);
    // One a frame of another site sends (PORT-ID.localhost is a site of its own), partitioned by that site.
    expect(cookie).toMatch(/^sandcell_preview=[^;]+; Path=\/; HttpOnly; SameSite=None; Secure; Partitioned$/);
    // The frame's next requests carry the cookie (beside the app's own), which the app never sees.
    const token = cookie.split(';')[0] as string;
    const framed = await portRequest(server.port, url.host, '/headers?x=1', {
      headers: { cookie: `app=own; ${token}`, 'sec-fetch-site': 'same-site' },
    });
    expect(framed.status).toBe(200);
    expect(framed.json.headers.cookie).toBe('app=own');
    // The token is for this session's port 8000: not another port, not a changed token.
    expect(
      (await portRequest(server.port, `8001-${id}.localhost:${server.port}`, '/', { headers: { cookie: token } }))
        .status,
    ).toBe(404);
    expect((await portRequest(server.port, host(), '/', { headers: { cookie: `${token}x` } })).status).toBe(404);
    // A POST with the token in the query is served (no redirect), the token taken out.
    const posted = await portRequest(server.port, url.host, `/upload${url.search}`, {
      method: 'POST',
      body: Buffer.from('data'),
    });
    expect(posted.json).toMatchObject({ bytes: 4 });
  });
});

describe('a paused /v1 session’s ports', () => {
  let server: Server;
  beforeAll(async () => {
    server = await startTestServer({ apiKeys: [KEY] });
  });
  afterAll(async () => {
    await server?.close();
  });

  it('lists none, and asking does not resume it (a pause keeps no process)', async () => {
    const id = await sessionWithApp(server, KEY, 8000);
    const api = client(server, KEY);
    await api.json(`/v1/sessions/${id}/ports/8000?waitMs=20000`);
    expect((await api(`/v1/sessions/${id}/pause`, { method: 'POST', json: {} })).status).toBe(200);
    expect(await api.json(`/v1/sessions/${id}/ports`)).toEqual({ ports: [] });
    expect((await api.json<{ state: string }>(`/v1/sessions/${id}`)).state).toBe('paused');
    expect((await api('/v1/sessions/nosuchsession/ports')).status).toBe(404);
  });
});

describe('a /v1 session’s ports, on a server without keys', () => {
  let server: Server;
  let id: string;

  beforeAll(async () => {
    server = await startTestServer();
    id = await sessionWithApp(server, undefined, 8000);
    await client(server).json(`/v1/sessions/${id}/ports/8000?waitMs=20000`);
  });
  afterAll(async () => {
    await server?.close();
  });

  it('serves this machine’s clients and the user’s own navigations, not another site’s page', async () => {
    const host = `8000-${id}.localhost:${server.port}`;
    expect((await portRequest(server.port, host, '/')).status).toBe(200);
    expect((await portRequest(server.port, host, '/', { headers: { 'sec-fetch-site': 'none' } })).status).toBe(200);
    const foreign: Record<string, string>[] = [{ 'sec-fetch-site': 'cross-site' }, { origin: 'http://evil.example' }];
    for (const headers of foreign) {
      expect((await portRequest(server.port, host, '/', { headers })).status).toBe(404);
    }
    // The page another site frames gets in with a preview link.
    const link = await client(server).json<{ url: string }>(`/v1/sessions/${id}/ports/8000/preview`, {
      method: 'POST',
    });
    const url = new URL(link.url);
    const opened = await portRequest(server.port, host, `/${url.search}`, {
      headers: { 'sec-fetch-site': 'cross-site' },
    });
    expect(opened.status).toBe(303);
  });
});
