/**
 * What a page in the user's browser can make a local server do, over real HTTP on 127.0.0.1 with
 * the headers a browser sends (forged with node:http): DNS rebinding (a foreign `Host`) and
 * cross-site requests that need no preflight (`Origin`, `Sec-Fetch-Site`), without and with keys.
 * Each refusal has its canary: the same request from the server's own origin, or with a key, works.
 * No code runs, so the kernels are the scripted backend's; `sandcell serve`'s own flags are tested
 * in test/server-browser-guard.test.ts.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { formWithFile, type RawRequest, rawRequest } from '../../../test/support/raw-http.js';
import { type LogCapture, startScriptedServer } from '../../../test/support/server.js';
import type { SandcellServer } from '../index.js';

const OLD_API = '2024-02-02-preview';
const NEW_API = '2024-10-02-preview';
const ATTACKER = 'http://attacker.example';
const KEY = 'browser-guard-test-key-41';
const INITIALIZE = JSON.stringify({
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-03-26', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
});
const MCP_HEADERS = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };

type Server = SandcellServer & { logs: LogCapture };

async function liveSessions(server: Server, headers: Record<string, string> = {}): Promise<string[]> {
  const listed = await rawRequest(server.port, '/v1/sessions', { headers });
  expect(listed.status).toBe(200);
  return (listed.json.sessions as { id: string; source: string }[]).map((session) => `${session.source}:${session.id}`);
}

/** What a page elsewhere can send without a preflight: forms, images, and `fetch` in no-cors mode. */
function crossSiteAttempts(port: number): { name: string; path: string; request: RawRequest }[] {
  const crossSite = { origin: ATTACKER, 'sec-fetch-site': 'cross-site', 'sec-fetch-mode': 'no-cors' };
  const form = formWithFile('planted.txt', 'planted by a page elsewhere');
  return [
    { name: 'empty POST /v1/sessions', path: '/v1/sessions', request: { method: 'POST', headers: crossSite } },
    {
      name: 'empty POST /v1/conversations',
      path: '/v1/conversations',
      request: { method: 'POST', headers: crossSite },
    },
    {
      name: '<img> GET /azure/files',
      path: `/azure/files?identifier=image-${port}&api-version=${OLD_API}`,
      // An image request carries no Origin, only the fetch metadata.
      request: { headers: { 'sec-fetch-site': 'cross-site', 'sec-fetch-mode': 'no-cors', 'sec-fetch-dest': 'image' } },
    },
    {
      name: '<form> POST /azure/files/upload',
      path: `/azure/files/upload?identifier=form-${port}&api-version=${OLD_API}`,
      request: {
        method: 'POST',
        headers: { ...crossSite, 'sec-fetch-mode': 'navigate', 'content-type': form.contentType },
        body: form.body,
      },
    },
  ];
}

describe('a server without keys', () => {
  let server: Server;

  beforeAll(async () => {
    server = await startScriptedServer(undefined, {
      limits: { maxSessions: 4 },
      allowedHosts: ['sandcell.proxy.example'],
    });
  });
  afterAll(async () => {
    await server?.close();
  });

  it('answers only loopback names (and allowed ones) in Host: a rebinding name gets 421 on every route', async () => {
    const port = server.port;
    for (const host of [
      `127.0.0.1:${port}`,
      `localhost:${port}`,
      `[::1]:${port}`,
      'localhost',
      'sandcell.proxy.example',
    ]) {
      const health = await rawRequest(port, '/healthz', { headers: { host } });
      expect(health.status, host).toBe(200);
    }
    const rebinding = { host: `rebind.attacker.example:${port}` };
    for (const [method, path] of [
      ['GET', '/'],
      ['GET', '/v1/conversations'],
      ['GET', '/v1/sessions'],
      ['POST', '/v1/sessions'],
      ['GET', `/azure/files?identifier=rebind-1&api-version=${OLD_API}`],
      ['GET', '/healthz'],
    ] as const) {
      const refused = await rawRequest(port, path, { method, headers: { ...rebinding, accept: 'text/html' } });
      expect(refused.status, `${method} ${path}`).toBe(421);
      expect(refused.json.error.code).toBe('host-not-allowed');
      expect(refused.json.error.message).toContain('--allowed-host');
    }
    const mcp = await rawRequest(port, '/mcp', {
      method: 'POST',
      headers: { ...rebinding, ...MCP_HEADERS },
      body: INITIALIZE,
    });
    expect(mcp.status).toBe(421);
    expect(await liveSessions(server)).toEqual([]);
  });

  it('refuses requests from another site that would create sessions or plant files; none is created', async () => {
    const port = server.port;
    const attempts = crossSiteAttempts(port);
    let sent = 0;
    // 30 of them used to fill the owner's session cap (4 here).
    while (sent < 30) {
      const attempt = attempts[sent % attempts.length]!;
      const refused = await rawRequest(port, attempt.path, attempt.request);
      expect(refused.status, attempt.name).toBe(403);
      expect(refused.json.error.code, attempt.name).toBe('cross-site-request');
      sent++;
    }
    // Another origin on this machine, and a same-site fetch, are other pages too.
    const otherLocalPage = await rawRequest(port, '/v1/sessions', {
      method: 'POST',
      headers: { origin: 'http://localhost:3000', 'sec-fetch-site': 'same-site', 'sec-fetch-mode': 'cors' },
    });
    expect(otherLocalPage.status).toBe(403);
    const sandboxedFrame = await rawRequest(port, '/v1/sessions', { method: 'POST', headers: { origin: 'null' } });
    expect(sandboxedFrame.status).toBe(403);
    expect(await liveSessions(server)).toEqual([]);

    // The canary: the same requests from the server's own origin (the web UI) work, within the cap.
    const own = { origin: `http://127.0.0.1:${port}`, 'sec-fetch-site': 'same-origin', 'sec-fetch-mode': 'cors' };
    for (const attempt of attempts) {
      const headers = { ...attempt.request.headers, ...own };
      delete (headers as Record<string, string>)['sec-fetch-dest'];
      const allowed = await rawRequest(port, attempt.path, { ...attempt.request, headers });
      expect(allowed.status, attempt.name).toBeLessThan(300);
    }
    // Three of the four create a session; the GET creates nothing (below).
    expect((await liveSessions(server)).map((session) => session.split(':')[0]).sort()).toEqual([
      'azure',
      'conversation',
      'v1',
    ]);
    const viaProxy = await rawRequest(port, '/v1/sessions', {
      headers: { origin: 'https://sandcell.proxy.example' },
    });
    expect(viaProxy.status).toBe(200);
  });

  it('lets a link from another site open the web UI (a top-level GET navigation)', async () => {
    const page = await rawRequest(server.port, '/', {
      headers: { accept: 'text/html', 'sec-fetch-site': 'cross-site', 'sec-fetch-mode': 'navigate' },
    });
    expect(page.status).toBe(200);
    expect(page.headers['content-type']).toContain('text/html');
  });

  it('creates no session on a GET of an unknown Azure identifier: no files, as a fresh session has', async () => {
    const before = await liveSessions(server);
    const identifier = `fresh-${server.port}`;
    const query = (version: string) => `identifier=${identifier}&api-version=${version}`;
    const oldList = await rawRequest(server.port, `/azure/files?${query(OLD_API)}`);
    expect(oldList.status).toBe(200);
    expect(oldList.json).toEqual({ $id: '1', value: [] });
    const newList = await rawRequest(server.port, `/azure/files?${query(NEW_API)}`);
    expect(newList.json).toEqual({ value: [] });
    for (const path of [
      `/azure/files/content/data.csv?${query(OLD_API)}`,
      `/azure/files/data.csv?${query(NEW_API)}`,
      `/azure/files/data.csv/content?${query(NEW_API)}`,
    ]) {
      const missing = await rawRequest(server.port, path);
      expect(missing.status, path).toBe(404);
      expect(missing.json.error.code).toBe('file-not-found');
    }
    expect(await liveSessions(server)).toEqual(before);

    // The first POST creates it, and then GET sees its files.
    const form = formWithFile('data.csv', 'a,b\n1,2\n');
    const uploaded = await rawRequest(server.port, `/azure/files/upload?${query(OLD_API)}`, {
      method: 'POST',
      headers: { 'content-type': form.contentType },
      body: form.body,
    });
    expect(uploaded.status).toBe(200);
    const listed = await rawRequest(server.port, `/azure/files?${query(NEW_API)}`);
    expect(listed.json.value.map((file: { name: string }) => file.name)).toEqual(['data.csv']);
    expect((await rawRequest(server.port, `/azure/files/data.csv/content?${query(NEW_API)}`)).text).toBe('a,b\n1,2\n');
    expect((await liveSessions(server)).length).toBe(before.length + 1);
  });

  it('guards /mcp the same way, and binds an MCP session to the Host it was opened with', async () => {
    const port = server.port;
    const crossSite = await rawRequest(port, '/mcp', {
      method: 'POST',
      headers: { ...MCP_HEADERS, origin: ATTACKER, 'sec-fetch-site': 'cross-site' },
      body: INITIALIZE,
    });
    expect(crossSite.status).toBe(403);
    expect(crossSite.json.error.code).toBe('cross-site-request');

    const opened = await rawRequest(port, '/mcp', { method: 'POST', headers: MCP_HEADERS, body: INITIALIZE });
    expect(opened.status).toBe(200);
    const sessionId = opened.headers['mcp-session-id'] as string;
    expect(sessionId).toBeTruthy();
    const listTools = JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list' });
    const session = { ...MCP_HEADERS, 'mcp-session-id': sessionId, 'mcp-protocol-version': '2025-03-26' };
    const sameHost = await rawRequest(port, '/mcp', { method: 'POST', headers: session, body: listTools });
    expect(sameHost.status).toBe(200);
    expect(sameHost.json.result.tools.length).toBe(8);
    // Another loopback name passes our guard, but the SDK's DNS-rebinding check holds the session to its Host.
    const otherHost = await rawRequest(port, '/mcp', {
      method: 'POST',
      headers: { ...session, host: `localhost:${port}` },
      body: listTools,
    });
    expect(otherHost.status).toBe(403);
    expect(otherHost.json.error.message).toContain('Invalid Host header');
    const closed = await rawRequest(port, '/mcp', { method: 'DELETE', headers: session });
    expect(closed.status).toBe(200);
  });
});

describe('a server with keys', () => {
  let server: Server;

  beforeAll(async () => {
    server = await startScriptedServer(undefined, { apiKeys: [KEY], poolSize: 0 });
  });
  afterAll(async () => {
    await server?.close();
  });

  it('lets a request with a valid key through whatever its origin; without one, refuses it', async () => {
    const port = server.port;
    const keyed = { authorization: `Bearer ${KEY}` };
    const crossSite = { origin: ATTACKER, 'sec-fetch-site': 'cross-site' };
    expect((await rawRequest(port, '/v1/sessions', { headers: { ...crossSite, ...keyed } })).status).toBe(200);
    const noKey = await rawRequest(port, '/v1/sessions', { method: 'POST', headers: crossSite });
    expect(noKey.status).toBe(403);
    const wrongKey = await rawRequest(port, '/v1/sessions', {
      method: 'POST',
      headers: { ...crossSite, authorization: 'Bearer not-the-key-000' },
    });
    expect(wrongKey.status).toBe(403);
    // Outside the browser, without a key: the usual 401.
    expect((await rawRequest(port, '/v1/sessions', { method: 'POST' })).status).toBe(401);
    expect(await liveSessions(server, keyed)).toEqual([]);
  });

  it('does not restrict Host (every route that matters needs the key, which a rebinding page cannot read)', async () => {
    const port = server.port;
    const host = { host: `sandcell.internal:${port}` };
    expect(
      (await rawRequest(port, '/v1/sessions', { headers: { ...host, authorization: `Bearer ${KEY}` } })).status,
    ).toBe(200);
    expect((await rawRequest(port, '/v1/sessions', { headers: host })).status).toBe(401);
  });

  it('the official MCP client with the key still connects', async () => {
    const client = new Client({ name: 'guard-test', version: '1.0.0' });
    const transport = new StreamableHTTPClientTransport(new URL(`${server.url}/mcp`), {
      requestInit: { headers: { authorization: `Bearer ${KEY}` } },
    });
    await client.connect(transport);
    expect((await client.listTools()).tools.length).toBe(8);
    await transport.terminateSession();
    await client.close();
  });
});
