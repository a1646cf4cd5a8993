/**
 * Secrets through the server, on real bubblewrap sandboxes: the operator's secret (`serve
 * --secret-header`) reaches every session whose allow-list covers its host, a key may add its own on
 * POST /v1/sessions for hosts it asked for, and neither value appears in an answer, a listing or
 * the log. The stand-in host is a service on this machine's 127.0.0.1, reached as
 * `host.sandcell.internal`, over HTTPS with a test CA the session trusts: secrets are added to HTTPS
 * requests only.
 */
import { rmSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SandcellServer } from '../src/server/index.js';
import { client, type LogCapture, startTestServer } from './support/server.js';
import { type StandInServer, startStandInServer } from './support/stand-in-internet.js';
import { createTestCertificates, type TestCertificates } from './support/test-ca.js';

const OPERATOR_KEY = 'Bearer operator-key-kept-by-the-server';
const OWN_KEY = 'own-key-sent-by-a-client';

describe('network secrets through the server', () => {
  let web: StandInServer;
  let certificates: TestCertificates;
  let server: SandcellServer & { logs: LogCapture };
  const HOST = 'host.sandcell.internal';
  const allow = () => [`${HOST}:${web.port}`];

  beforeAll(async () => {
    certificates = createTestCertificates([HOST]);
    web = await startStandInServer({
      label: 'api',
      tls: { key: certificates.serverKey, cert: certificates.serverCertificate },
    });
    server = await startTestServer({
      poolSize: 0,
      networkPermission: allow(),
      networkSecrets: [{ host: HOST, header: 'Authorization', value: OPERATOR_KEY }],
    });
  });
  afterAll(async () => {
    await server?.close();
    await web?.close();
    if (certificates) rmSync(certificates.directory, { recursive: true, force: true });
  });

  it("adds the operator's and the key's own secrets, and never answers or logs either", async () => {
    const api = client(server);
    const created = await api('/v1/sessions', {
      method: 'POST',
      json: {
        network: {
          allow: allow(),
          trustedCertificates: certificates.caCertificate,
          secrets: [{ host: HOST, header: 'X-Api-Key', value: OWN_KEY }],
        },
      },
    });
    expect(created.status).toBe(201);
    const answer = await created.text();
    const session = JSON.parse(answer) as { id: string };
    const run = await api.json<{ exitCode: number; stdout: string; stderr: string }>(
      `/v1/sessions/${session.id}/commands`,
      {
        method: 'POST',
        json: { command: `curl -sS --max-time 20 https://${HOST}:${web.port}/keys; env` },
      },
    );
    expect(run.stderr).toBe('');
    expect(web.received.at(-1)).toMatchObject({
      url: '/keys',
      headers: { authorization: OPERATOR_KEY, 'x-api-key': OWN_KEY },
    });
    // The sandbox's environment holds neither key (the echo's body shows them, as the server sent it).
    expect(run.stdout.slice(run.stdout.indexOf('}') + 1)).not.toMatch(/operator-key|own-key/);
    const listing = await (await api('/v1/sessions')).text();
    const one = await (await api(`/v1/sessions/${session.id}`)).text();
    for (const text of [answer, listing, one, JSON.stringify(server.logs.lines)]) {
      expect(text).not.toContain('operator-key');
      expect(text).not.toContain(OWN_KEY);
    }
  });

  it('refuses a secret for a host the session may not reach, naming neither value', async () => {
    const api = client(server);
    const refused = await api('/v1/sessions', {
      method: 'POST',
      json: {
        network: { allow: allow(), secrets: [{ host: 'elsewhere.example', header: 'Authorization', value: OWN_KEY }] },
      },
    });
    expect(refused.status).toBe(400);
    expect(await refused.text()).not.toContain(OWN_KEY);
  });
});
