/**
 * Internet access through the server, on real bubblewrap sandboxes and the server's own gate: a key
 * asks for a host the operator permits and reaches it, every allowed and refused connection is a log
 * line naming the session (no bodies), and asking beyond the bound starts nothing. The stand-in hosts
 * are services on this machine's 127.0.0.1, reached as `host.sandcell.internal` on their ports.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SandcellServer } from '../src/server/index.js';
import { client, type LogCapture, startTestServer } from './support/server.js';
import { type StandInServer, startStandInServer } from './support/stand-in-internet.js';

describe('internet access through the server', () => {
  let web: StandInServer;
  let other: StandInServer;
  let server: SandcellServer & { logs: LogCapture };

  beforeAll(async () => {
    web = await startStandInServer({ label: 'permitted' });
    other = await startStandInServer({ label: 'not-permitted' });
    server = await startTestServer({ poolSize: 0, networkPermission: [`host.sandcell.internal:${web.port}`] });
  });
  afterAll(async () => {
    await server?.close();
    await Promise.all([web?.close(), other?.close()]);
  });

  it('a permitted host is reached through the gate, and the server logs each connection by session', async () => {
    const api = client(server);
    const session = await api.json<{ id: string }>('/v1/sessions', {
      method: 'POST',
      json: { network: { allow: [`host.sandcell.internal:${web.port}`] } },
    });
    const run = (url: string) =>
      api.json<{ exitCode: number; stdout: string; stderr: string }>(`/v1/sessions/${session.id}/commands`, {
        method: 'POST',
        json: { command: `curl -sS --max-time 20 -o /dev/null -w '%{http_code}' ${url}` },
      });
    const allowed = await run(`http://host.sandcell.internal:${web.port}/hello`);
    expect(allowed.stdout, allowed.stderr).toBe('200');
    expect(web.received.map((request) => request.url)).toContain('/hello');
    const refused = await run(`http://host.sandcell.internal:${other.port}/`);
    expect(refused.stdout).toBe('403');
    expect(other.received).toEqual([]);
    // The gate writes a connection's line when it sees the connection end, which may be just after curl exits.
    const network = () =>
      server.logs.lines
        .map((line) => line.network as Record<string, unknown> | undefined)
        .filter((entry) => entry !== undefined);
    await expect
      .poll(network)
      .toContainEqual(expect.objectContaining({ event: 'connection-end', sessionId: session.id, port: web.port }));
    await expect
      .poll(network)
      .toContainEqual(expect.objectContaining({ event: 'request-refused', sessionId: session.id }));
    expect(JSON.stringify(network())).not.toContain('/hello');
  });

  it('a request beyond what the operator permits is refused before any session starts', async () => {
    const api = client(server);
    const before = (await api.json<{ sessions: unknown[] }>('/v1/sessions')).sessions.length;
    const refused = await api('/v1/sessions', {
      method: 'POST',
      json: { network: { allow: [`host.sandcell.internal:${other.port}`] } },
    });
    expect(refused.status).toBe(403);
    expect((await api.json<{ sessions: unknown[] }>('/v1/sessions')).sessions.length).toBe(before);
  });
});
