/**
 * Destination-bound secrets over HTTPS, at the gate alone: a stand-in HTTPS server (a test CA)
 * plays the secret host and echoes what it received. The client trusts only the session's own
 * authority, as a sandbox would for that host, and never holds the key; the gate adds it.
 */
import { rmSync } from 'node:fs';
import { connect as connectTls } from 'node:tls';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type Gate, type GateLog, type StartGateOptions, startGate } from '../src/network/gate.js';
import { parseNetworkPolicy } from '../src/network/policy.js';
import { httpsThroughGate, openTunnel, parseAnswer, readToEnd } from './support/gate-client.js';
import { type StandInServer, startStandInServer } from './support/stand-in-internet.js';
import { createTestCertificates, type TestCertificates } from './support/test-ca.js';

const KEY = 'Bearer key-that-stays-on-the-host';
let certificates: TestCertificates;
let api: StandInServer;
const gates: Gate[] = [];

beforeAll(async () => {
  certificates = createTestCertificates(['api.test', 'plain.test']);
  api = await startStandInServer({
    label: 'api',
    tls: { key: certificates.serverKey, cert: certificates.serverCertificate },
  });
});
afterAll(async () => {
  await api.close();
  rmSync(certificates.directory, { recursive: true, force: true });
});
afterEach(async () => {
  await Promise.all(gates.splice(0).map((gate) => gate.close()));
});

async function secretGate(extra: Partial<StartGateOptions> = {}): Promise<{ gate: Gate; logs: GateLog[] }> {
  const logs: GateLog[] = [];
  const gate = await startGate({
    sessionId: 'secret-session',
    policy: parseNetworkPolicy([`api.test:${api.port}`, `plain.test:${api.port}`, `127.0.0.1/32:${api.port}`]),
    listen: { host: '127.0.0.1', port: 0 },
    logger: (entry) => logs.push(entry),
    resolve: async (name) => (name.endsWith('.test') ? ['127.0.0.1'] : []),
    secrets: [{ host: 'api.test', header: 'Authorization', value: KEY }],
    trustedCertificates: certificates.caCertificate,
    ...extra,
  });
  gates.push(gate);
  return { gate, logs };
}

/** A TLS client inside a CONNECT tunnel that sends `request` as written and reads the whole answer. */
async function rawHttps(
  gate: Gate,
  host: string,
  request: string,
  tlsOptions: { ca: string; ALPNProtocols?: string[] },
): Promise<{ raw: string; alpn: string | false | null }> {
  const { answer, socket } = await openTunnel(gate.address, `${host}:${api.port}`);
  expect(answer.status).toBe(200);
  const secure = connectTls({ socket, servername: host, ...tlsOptions });
  await new Promise<void>((resolve, reject) => {
    secure.once('secureConnect', () => resolve());
    secure.once('error', reject);
  });
  const whole = readToEnd(secure as never);
  secure.write(request);
  return { raw: (await whole).toString('latin1'), alpn: secure.alpnProtocol };
}

describe('secrets over HTTPS', () => {
  it('adds the secret to a request for its host, replacing a forged one, under the session authority', async () => {
    const { gate, logs } = await secretGate();
    expect(gate.certificateAuthority).toContain('BEGIN CERTIFICATE');
    const answer = await httpsThroughGate(gate.address, {
      host: 'api.test',
      port: api.port,
      path: '/v1/models',
      ca: gate.certificateAuthority as string,
    });
    expect(answer.status).toBe(200);
    const echoed = JSON.parse(answer.body);
    expect(echoed).toMatchObject({ label: 'api', url: '/v1/models' });
    expect(echoed.headers.authorization).toBe(KEY);
    const forged = await rawHttps(
      gate,
      'api.test',
      `GET /forged HTTP/1.1\r\nHost: api.test:${api.port}\r\nAuthorization: Bearer forged\r\n\r\n`,
      { ca: gate.certificateAuthority as string },
    );
    expect(JSON.parse(parseAnswer(Buffer.from(forged.raw, 'latin1')).body).headers.authorization).toBe(KEY);
    // The first connection's log line is written by now (the second's may still be on its way).
    const ended = logs.filter((entry) => entry.event === 'connection-end');
    expect(ended[0]).toMatchObject({ kind: 'intercept', host: 'api.test', port: api.port });
    expect(JSON.stringify(logs)).not.toContain('key-that-stays');
  });

  it('keeps a host without a secret a blind tunnel: the real certificate reaches the client', async () => {
    const { gate } = await secretGate();
    const answer = await httpsThroughGate(gate.address, {
      host: 'plain.test',
      port: api.port,
      path: '/plain',
      ca: certificates.caCertificate,
    });
    expect(JSON.parse(answer.body).headers.authorization).toBeUndefined();
    // The session authority vouches for its secret hosts alone (a name constraint).
    await expect(
      httpsThroughGate(gate.address, {
        host: 'plain.test',
        port: api.port,
        path: '/plain',
        ca: gate.certificateAuthority as string,
      }),
    ).rejects.toThrow();
  });

  it('refuses to send the secret to a host whose certificate does not verify', async () => {
    const { gate, logs } = await secretGate({ trustedCertificates: undefined });
    const before = api.received.length;
    const { answer, socket } = await openTunnel(gate.address, `api.test:${api.port}`);
    socket.destroy();
    expect(answer.status).toBe(502);
    expect(answer.headers['x-sandcell-gate-rule']).toBe('upstream-certificate');
    expect(api.received.length).toBe(before);
    expect(logs.some((entry) => entry.event === 'request-refused' && entry.rule === 'upstream-certificate')).toBe(true);
  });

  it('speaks HTTP/1.1 only: a client that insists on h2 fails its handshake', async () => {
    const { gate } = await secretGate();
    const offered = await rawHttps(gate, 'api.test', `GET /alpn HTTP/1.1\r\nHost: api.test:${api.port}\r\n\r\n`, {
      ca: gate.certificateAuthority as string,
      ALPNProtocols: ['h2', 'http/1.1'],
    });
    expect(offered.alpn).toBe('http/1.1');
    await expect(
      rawHttps(gate, 'api.test', 'GET / HTTP/1.1\r\n\r\n', {
        ca: gate.certificateAuthority as string,
        ALPNProtocols: ['h2'],
      }),
    ).rejects.toThrow();
  });

  it('refuses a request naming another host, a pipelined second request, and carries one request per connection', async () => {
    const { gate } = await secretGate();
    const ca = gate.certificateAuthority as string;
    const before = api.received.length;
    const misdirected = await rawHttps(gate, 'api.test', 'GET / HTTP/1.1\r\nHost: plain.test\r\n\r\n', { ca });
    expect(parseAnswer(Buffer.from(misdirected.raw, 'latin1')).status).toBe(421);
    const pipelined = await rawHttps(
      gate,
      'api.test',
      `GET /one HTTP/1.1\r\nHost: api.test:${api.port}\r\n\r\nGET /two HTTP/1.1\r\nHost: api.test:${api.port}\r\n\r\n`,
      { ca },
    );
    expect(parseAnswer(Buffer.from(pipelined.raw, 'latin1')).status).toBe(400);
    expect(api.received.length).toBe(before);
    // A keep-alive client gets its answer, then the connection ends: a second request needs a new one.
    const kept = await rawHttps(gate, 'api.test', `GET /kept HTTP/1.1\r\nHost: api.test:${api.port}\r\n\r\n`, { ca });
    expect(parseAnswer(Buffer.from(kept.raw, 'latin1')).status).toBe(200);
    expect(api.received.at(-1)?.headers.connection).toBe('close');
  });
});
