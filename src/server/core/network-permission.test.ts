/**
 * What network a key may ask for, over real HTTP on the scripted backend: the operator's bound holds on
 * /v1 and on E2B's create, a request beyond it is refused (403) before any session starts, and what is
 * permitted reaches the sandbox's start as the session's gate channel.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { client, startScriptedServer } from '../../../test/support/server.js';
import type { NetworkGate } from '../../network/gate-channel.js';
import type { SandcellServer } from '../index.js';
import type { ServerOptions } from './options.js';

const KEY = 'network-key-0001';
let server: SandcellServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

async function startServer(options: ServerOptions) {
  const opened: { sessionId: string; allow: readonly string[] }[] = [];
  const started: (string | undefined)[] = [];
  const networkGate: NetworkGate = {
    openChannel: async (request) => {
      opened.push(request);
      return { socketPath: `/run/gates/${request.sessionId}.sock`, close: async () => undefined };
    },
  };
  const running = await startScriptedServer(
    undefined,
    { apiKeys: [KEY], poolSize: 0, ...options, sessionOptions: { ...options.sessionOptions, networkGate } },
    { onStart: ({ options: start }) => void started.push(start.network?.socketPath) },
  );
  server = running;
  return { api: client(running, KEY), opened, started, server: running };
}

const e2bCreate = (target: SandcellServer, body: Record<string, unknown>) =>
  fetch(`${target.url}/e2b/sandboxes`, {
    method: 'POST',
    headers: { 'x-api-key': KEY, 'content-type': 'application/json' },
    body: JSON.stringify({ templateID: 'base', ...body }),
  });

describe('network permission', () => {
  it('by default a server gives no network: asking for it is a 403 and starts nothing', async () => {
    const { api, opened, started } = await startServer({});
    const refused = await api('/v1/sessions', { method: 'POST', json: { network: { allow: ['pypi.org'] } } });
    expect(refused.status).toBe(403);
    expect(await refused.json()).toMatchObject({ error: { code: 'network-not-permitted' } });
    expect(opened).toEqual([]);
    expect(started).toEqual([]);
    // Without the field, and with 'none', a session starts as always, without a channel.
    for (const json of [{}, { network: 'none' }]) {
      const created = await api('/v1/sessions', { method: 'POST', json });
      expect(created.status).toBe(201);
    }
    expect(started).toEqual([undefined, undefined]);
  });

  it('permits exactly the operator’s hosts: a subset is served through the gate, anything else is refused', async () => {
    const { api, opened, started } = await startServer({ networkPermission: ['pypi.org', 'files.pythonhosted.org'] });
    const created = await api.json<{ id: string }>('/v1/sessions', {
      method: 'POST',
      json: { network: { allow: ['PyPI.org'] } },
    });
    expect(opened).toEqual([{ sessionId: created.id, allow: ['pypi.org'] }]);
    expect(started).toEqual([`/run/gates/${created.id}.sock`]);
    const beyond = await api('/v1/sessions', {
      method: 'POST',
      json: { network: { allow: ['pypi.org', 'evil.example.com'] } },
    });
    expect(beyond.status).toBe(403);
    expect(((await beyond.json()) as { error: { message: string } }).error.message).toContain('"evil.example.com"');
    const malformed = await api('/v1/sessions', { method: 'POST', json: { network: { allow: 'pypi.org' } } });
    expect(malformed.status).toBe(400);
    expect(opened).toHaveLength(1);
  });

  it("'any' permits other hosts, not this machine's own services, which the operator permits only by name", async () => {
    const { api, opened } = await startServer({ networkPermission: 'any' });
    const internet = await api.json<{ id: string }>('/v1/sessions', {
      method: 'POST',
      json: { network: { allow: ['example.com'] } },
    });
    expect(opened).toEqual([{ sessionId: internet.id, allow: ['example.com'] }]);
    // The server's own port, or a database on its loopback, is not "any host".
    const local = await api('/v1/sessions', {
      method: 'POST',
      json: { network: { allow: ['example.com', 'host.sandcell.internal:8080'] } },
    });
    expect(local.status).toBe(403);
    const { error } = (await local.json()) as { error: { code: string; message: string } };
    expect(error.code).toBe('network-not-permitted');
    expect(error.message).toContain('--permit-host host.sandcell.internal:8080');
    expect(opened).toHaveLength(1);
    await server?.close();
    const named = await startServer({ networkPermission: ['host.sandcell.internal:11434'] });
    const permitted = await named.api.json<{ id: string }>('/v1/sessions', {
      method: 'POST',
      json: { network: { allow: ['host.sandcell.internal:11434'] } },
    });
    expect(named.opened).toEqual([{ sessionId: permitted.id, allow: ['host.sandcell.internal:11434'] }]);
  });

  it('a server default allow-list is what sessions that ask nothing get, and the bound', async () => {
    const { api, opened } = await startServer({ sessionOptions: { network: { allow: ['pypi.org'] } } });
    const created = await api.json<{ id: string }>('/v1/sessions', { method: 'POST', json: {} });
    expect(opened).toEqual([{ sessionId: created.id, allow: ['pypi.org'] }]);
    const beyond = await api('/v1/sessions', { method: 'POST', json: { network: { allow: ['example.com'] } } });
    expect(beyond.status).toBe(403);
  });

  it("E2B's fields: allowOut is the allow-list, allow_internet_access true is the default, false is none", async () => {
    const { opened, started, server: running } = await startServer({ networkPermission: ['pypi.org'] });
    expect((await e2bCreate(running, { allow_internet_access: true })).status).toBe(201);
    expect((await e2bCreate(running, { allow_internet_access: false })).status).toBe(201);
    expect(started).toEqual([undefined, undefined]);
    const allowed = await e2bCreate(running, { network: { allowOut: ['pypi.org'], denyOut: ['0.0.0.0/0'] } });
    expect(allowed.status).toBe(201);
    expect(opened.map((request) => request.allow)).toEqual([['pypi.org']]);
    const beyond = await e2bCreate(running, { network: { allowOut: ['example.com'] } });
    expect(beyond.status).toBe(403);
    const transforms = await e2bCreate(running, {
      network: { allowOut: ['pypi.org'], rules: { 'pypi.org': [{ transform: { headers: { a: 'b' } } }] } },
    });
    expect(transforms.status).toBe(400);
    expect(opened).toHaveLength(1);
  });
});
