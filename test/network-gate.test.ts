/**
 * One file (over 500 lines): its cases share the test CA and the stand-in HTTP and HTTPS servers, made once.
 *
 * The network gate alone, over real sockets on 127.0.0.1: stand-in HTTP and HTTPS servers (with a
 * test CA) play the internet, a resolver stub plays DNS, and the policy allows 127.0.0.1 by an
 * explicit CIDR since loopback is refused by default.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { networkInterfaces, tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type Gate, type GateLog, type StartGateOptions, startGate } from '../src/network/gate.js';
import { parseNetworkPolicy } from '../src/network/policy.js';
import {
  connectToGate,
  getThroughGate,
  httpsThroughGate,
  openTunnel,
  readToEnd,
  sendRaw,
} from './support/gate-client.js';
import { type StandInServer, startStandInServer } from './support/stand-in-internet.js';
import { createTestCertificates, type TestCertificates } from './support/test-ca.js';

let certificates: TestCertificates;
let web: StandInServer;
let secureWeb: StandInServer;
const gates: Gate[] = [];

beforeAll(async () => {
  certificates = createTestCertificates(['allowed.test', 'other.test']);
  web = await startStandInServer({ label: 'web' });
  secureWeb = await startStandInServer({
    label: 'secure',
    tls: { key: certificates.serverKey, cert: certificates.serverCertificate },
  });
});

afterAll(async () => {
  await web.close();
  await secureWeb.close();
  rmSync(certificates.directory, { recursive: true, force: true });
});

afterEach(async () => {
  await Promise.all(gates.splice(0).map((gate) => gate.close()));
});

/** Names the stub resolver knows; anything else does not resolve. */
const DNS: Record<string, string[]> = {
  'allowed.test': ['127.0.0.1'],
  'other.test': ['127.0.0.1'],
  'metadata.test': ['169.254.169.254'],
  'lan.test': ['192.168.1.10'],
  'internal.test': ['127.0.0.2'],
  'mixed.test': ['127.0.0.1', '10.0.0.5'],
};

async function gateFor(
  allow: string[],
  extra: Partial<StartGateOptions> = {},
): Promise<{ gate: Gate; logs: GateLog[] }> {
  const logs: GateLog[] = [];
  const gate = await startGate({
    sessionId: 'session-a',
    policy: parseNetworkPolicy(allow),
    listen: { host: '127.0.0.1', port: 0 },
    logger: (entry) => logs.push(entry),
    resolve: async (name) => DNS[name] ?? [],
    ...extra,
  });
  gates.push(gate);
  return { gate, logs };
}

/** The usual test policy: the two stand-in ports by name, and 127.0.0.1 on them by CIDR. */
const standardAllow = () => [
  `allowed.test:${web.port}`,
  `allowed.test:${secureWeb.port}`,
  `127.0.0.1/32:${web.port}`,
  `127.0.0.1/32:${secureWeb.port}`,
];

describe('an allowed name', () => {
  it('is reached over HTTPS through CONNECT, with the test CA verified end to end', async () => {
    const { gate, logs } = await gateFor(standardAllow());
    const answer = await httpsThroughGate(gate.address, {
      host: 'allowed.test',
      port: secureWeb.port,
      path: '/hello',
      ca: certificates.caCertificate,
    });
    expect(answer.status).toBe(200);
    expect(JSON.parse(answer.body)).toMatchObject({ label: 'secure', url: '/hello' });
    await expect
      .poll(() => logs.find((entry) => entry.event === 'connection-end'))
      .toMatchObject({
        sessionId: 'session-a',
        kind: 'connect',
        host: 'allowed.test',
        port: secureWeb.port,
        address: '127.0.0.1',
        outcome: 'closed',
      });
    const entry = logs.find((log) => log.event === 'connection-end');
    expect(entry?.event === 'connection-end' && entry.bytesIn > 0 && entry.bytesOut > 0).toBe(true);
  });

  it('is reached over plain HTTP, rewritten to origin form with its Host, never with Proxy-Authorization', async () => {
    const { gate } = await gateFor(standardAllow());
    const answer = await getThroughGate(gate.address, `http://allowed.test:${web.port}/simple/?q=1`, {
      'Proxy-Authorization': 'Basic c2VjcmV0OnNlY3JldA==',
      'Proxy-Connection': 'keep-alive',
      'X-Kept': 'yes',
    });
    expect(answer.status).toBe(200);
    const received = JSON.parse(answer.body);
    expect(received.url).toBe('/simple/?q=1');
    expect(received.headers.host).toBe(`allowed.test:${web.port}`);
    expect(received.headers['x-kept']).toBe('yes');
    expect(received.headers['proxy-authorization']).toBeUndefined();
    expect(received.headers['proxy-connection']).toBeUndefined();
  });

  it('listens on a unix socket as well', async () => {
    const directory = mkdtempSync(path.join(tmpdir(), 'sandcell-gate-'));
    try {
      const { gate } = await gateFor(standardAllow(), { listen: { path: path.join(directory, 'gate.sock') } });
      expect(gate.address).toBe(path.join(directory, 'gate.sock'));
      const answer = await getThroughGate(gate.address, `http://allowed.test:${web.port}/via-socket`);
      expect(JSON.parse(answer.body).url).toBe('/via-socket');
    } finally {
      rmSync(directory, { recursive: true, force: true });
    }
  });
});

describe('refusals that say which rule refused', () => {
  it('refuses a name not on the list, and never resolves it', async () => {
    const asked: string[] = [];
    const { gate, logs } = await gateFor(standardAllow(), {
      resolve: async (name) => {
        asked.push(name);
        return DNS[name] ?? [];
      },
    });
    const answer = await getThroughGate(gate.address, `http://other.test:${web.port}/`);
    expect(answer.status).toBe(403);
    expect(answer.headers['x-sandcell-gate-rule']).toBe('host-not-allowed');
    expect(answer.body).toContain("other.test is not on this session's network allow-list");
    expect(asked).toEqual([]);
    expect(logs).toContainEqual(
      expect.objectContaining({ event: 'request-refused', rule: 'host-not-allowed', status: 403 }),
    );
  });

  it('refuses CONNECT to a port the rule does not name', async () => {
    const { gate } = await gateFor(standardAllow());
    const { answer } = await openTunnel(gate.address, 'allowed.test:22');
    expect(answer.status).toBe(403);
    expect(answer.headers['x-sandcell-gate-rule']).toBe('port-not-allowed');
    expect(answer.body).toContain(`add allowed.test:22`);
  });

  it('allows only 80 and 443 for a name written without a port', async () => {
    const { gate } = await gateFor(['allowed.test', `127.0.0.1/32:${secureWeb.port}`]);
    const { answer } = await openTunnel(gate.address, `allowed.test:${secureWeb.port}`);
    expect(answer.status).toBe(403);
    expect(answer.body).toContain('allowed: 80, 443');
  });

  it.each([
    ['metadata.test', '169.254.169.254', 'link-local'],
    ['lan.test', '192.168.1.10', 'private'],
    ['internal.test', '127.0.0.2', 'loopback'],
    ['mixed.test', '10.0.0.5', 'private'],
  ])('refuses the allowed name %s that resolves to %s (%s)', async (name, address, addressClass) => {
    const { gate, logs } = await gateFor([`${name}:${web.port}`, `127.0.0.1/32:${web.port}`]);
    const answer = await getThroughGate(gate.address, `http://${name}:${web.port}/`);
    expect(answer.status).toBe(403);
    expect(answer.headers['x-sandcell-gate-rule']).toBe('address-refused');
    expect(answer.body).toContain(`resolves to ${address} (${addressClass})`);
    expect(logs.some((entry) => entry.event === 'connection-end')).toBe(false);
  });

  it("refuses a name that resolves to one of this host's own addresses", async () => {
    const own = Object.values(networkInterfaces())
      .flatMap((entries) => entries ?? [])
      .find((entry) => entry.family === 'IPv4' && !entry.internal)?.address;
    if (own === undefined) return expect.fail('this machine has no non-loopback IPv4 address to test with');
    const { gate } = await gateFor([`self.test:${web.port}`], { resolve: async () => [own] });
    const answer = await getThroughGate(gate.address, `http://self.test:${web.port}/`);
    expect(answer.status).toBe(403);
    // Here the address may be private or reserved as well; the unit test of classifyAddress shows
    // that a public address of this host reads as this-host.
    expect(answer.headers['x-sandcell-gate-rule']).toBe('address-refused');
    expect(answer.body).toContain(`resolves to ${own}`);
  });

  it('refuses IP literals unless a CIDR rule allows them', async () => {
    const { gate } = await gateFor([`allowed.test:${web.port}`]);
    for (const target of [`127.0.0.1:${web.port}`, `[::1]:${web.port}`, '169.254.169.254:80']) {
      const { answer } = await openTunnel(gate.address, target);
      expect(answer.status, target).toBe(403);
      expect(answer.headers['x-sandcell-gate-rule'], target).toBe('address-literal');
    }
    const answer = await getThroughGate(gate.address, `http://[::ffff:127.0.0.1]:${web.port}/`);
    expect(answer.headers['x-sandcell-gate-rule']).toBe('address-literal');
    const allowed = await gateFor([`127.0.0.1/32:${web.port}`]);
    const reached = await getThroughGate(allowed.gate.address, `http://127.0.0.1:${web.port}/literal`);
    expect(JSON.parse(reached.body).url).toBe('/literal');
  });

  it('refuses shorthand address forms as names that are not on the list', async () => {
    const { gate } = await gateFor([`127.0.0.1/32:${web.port}`]);
    for (const host of ['127.1', '2130706433', '0x7f000001']) {
      const answer = await getThroughGate(gate.address, `http://${host}:${web.port}/`);
      expect(answer.status, host).toBe(403);
      expect(answer.headers['x-sandcell-gate-rule'], host).toBe('host-not-allowed');
    }
  });
});

describe('several addresses', () => {
  it('tries the next checked address when one does not answer, and says 502 when none does', async () => {
    const { gate, logs } = await gateFor(
      [`multi.test:${web.port}`, `dead.test:${web.port}`, `127.0.0.0/24:${web.port}`],
      {
        resolve: async (name) => (name === 'multi.test' ? ['127.0.0.3', '127.0.0.1'] : ['127.0.0.3']),
      },
    );
    const answer = await getThroughGate(gate.address, `http://multi.test:${web.port}/second-address`);
    expect(JSON.parse(answer.body).url).toBe('/second-address');
    await expect
      .poll(() => logs.find((entry) => entry.event === 'connection-end'))
      .toMatchObject({ address: '127.0.0.1' });
    const dead = await getThroughGate(gate.address, `http://dead.test:${web.port}/`);
    expect(dead.status).toBe(502);
    expect(dead.headers['x-sandcell-gate-rule']).toBe('upstream-unreachable');
    expect(dead.body).toContain('ECONNREFUSED');
  });
});

describe('DNS rebinding', () => {
  it('connects to the address it checked, however the name resolves afterwards', async () => {
    // The second answer points at a different server on 127.0.0.2, on the same port.
    const internal = await startStandInServer({ label: 'internal', host: '127.0.0.2', port: web.port });
    try {
      let lookups = 0;
      const { gate } = await gateFor([`rebind.test:${web.port}`, `127.0.0.1/32:${web.port}`], {
        resolve: async () => (lookups++ === 0 ? ['127.0.0.1'] : ['127.0.0.2']),
      });
      const answer = await getThroughGate(gate.address, `http://rebind.test:${web.port}/first`);
      expect(JSON.parse(answer.body).label).toBe('web');
      expect(lookups).toBe(1);
      expect(internal.connections()).toBe(0);
      // The next request resolves afresh, is checked afresh, and is refused.
      const second = await getThroughGate(gate.address, `http://rebind.test:${web.port}/second`);
      expect(second.headers['x-sandcell-gate-rule']).toBe('address-refused');
      expect(internal.connections()).toBe(0);
    } finally {
      await internal.close();
    }
  });
});

describe('smuggling and pipelining', () => {
  const target = () => `http://allowed.test:${web.port}`;
  const host = () => `allowed.test:${web.port}`;

  it.each([
    [
      'Content-Length with Transfer-Encoding',
      (t: string, h: string) =>
        `POST ${t}/ HTTP/1.1\r\nHost: ${h}\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n`,
      'smuggling',
    ],
    [
      'two Content-Lengths',
      (t: string, h: string) => `POST ${t}/ HTTP/1.1\r\nHost: ${h}\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab`,
      'smuggling',
    ],
    [
      'a Content-Length that is not a number',
      (t: string, h: string) => `POST ${t}/ HTTP/1.1\r\nHost: ${h}\r\nContent-Length: +2\r\n\r\nab`,
      'smuggling',
    ],
    [
      'an obs-fold header',
      (t: string, h: string) => `GET ${t}/ HTTP/1.1\r\nHost: ${h}\r\nX-A: 1\r\n X-B: 2\r\n\r\n`,
      'smuggling',
    ],
    [
      'a space before the colon',
      (t: string, h: string) => `GET ${t}/ HTTP/1.1\r\nHost: ${h}\r\nContent-Length : 0\r\n\r\n`,
      'smuggling',
    ],
    [
      'a bare LF inside the head',
      (t: string, h: string) => `GET ${t}/ HTTP/1.1\r\nHost: ${h}\nX-A: 1\r\n\r\n`,
      'smuggling',
    ],
    [
      'two Host headers',
      (t: string, h: string) => `GET ${t}/ HTTP/1.1\r\nHost: ${h}\r\nHost: other.test\r\n\r\n`,
      'smuggling',
    ],
    [
      'Connection naming Content-Length',
      (t: string, h: string) =>
        `POST ${t}/ HTTP/1.1\r\nHost: ${h}\r\nConnection: Content-Length\r\nContent-Length: 2\r\n\r\nab`,
      'smuggling',
    ],
    [
      'a double space in the request line',
      (t: string, h: string) => `GET  ${t}/ HTTP/1.1\r\nHost: ${h}\r\n\r\n`,
      'bad-request',
    ],
    ['HTTP/2 in the request line', (t: string, h: string) => `GET ${t}/ HTTP/2.0\r\nHost: ${h}\r\n\r\n`, 'bad-request'],
    [
      'user information in the URL',
      (_t: string, h: string) => `GET http://user@${h}/ HTTP/1.1\r\nHost: ${h}\r\n\r\n`,
      'bad-request',
    ],
    [
      'a chunked body',
      (t: string, h: string) => `POST ${t}/ HTTP/1.1\r\nHost: ${h}\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n`,
      'body-unsupported',
    ],
    [
      'a request in origin form',
      (_t: string, h: string) => `GET / HTTP/1.1\r\nHost: ${h}\r\n\r\n`,
      'not-a-proxy-request',
    ],
    [
      'a second request pipelined behind the first',
      (t: string, h: string) =>
        `GET ${t}/one HTTP/1.1\r\nHost: ${h}\r\n\r\nGET ${t}/two HTTP/1.1\r\nHost: ${h}\r\n\r\n`,
      'pipelining',
    ],
    [
      'bytes right behind CONNECT',
      (_t: string, h: string) => `CONNECT ${h} HTTP/1.1\r\nHost: ${h}\r\n\r\nGET http://${h}/ HTTP/1.1\r\n\r\n`,
      'pipelining',
    ],
  ])('refuses %s before anything reaches the destination', async (_name, request, rule) => {
    const { gate } = await gateFor(standardAllow());
    const before = web.connections();
    const answer = await sendRaw(gate.address, request(target(), host()));
    expect(answer.status).toBeGreaterThanOrEqual(400);
    expect(answer.headers['x-sandcell-gate-rule']).toBe(rule);
    expect(web.connections()).toBe(before);
  });

  it('refuses a head over the size limit with 431', async () => {
    const { gate } = await gateFor(standardAllow(), { limits: { maxHeadBytes: 4096 } });
    const answer = await sendRaw(
      gate.address,
      `GET ${target()}/ HTTP/1.1\r\nHost: ${host()}\r\nX-Big: ${'a'.repeat(5000)}\r\n\r\n`,
    );
    expect(answer.status).toBe(431);
  });

  it('carries a body of the stated length and nothing behind it', async () => {
    const { gate } = await gateFor(standardAllow());
    const answer = await sendRaw(
      gate.address,
      `POST ${target()}/upload HTTP/1.1\r\nHost: ${host()}\r\nContent-Length: 5\r\n\r\nhello`,
    );
    expect(JSON.parse(answer.body)).toMatchObject({ method: 'POST', url: '/upload', body: 'hello' });
  });
});

describe('destination-bound secrets', () => {
  it('refuses plain HTTP to a host with a secret (the key would cross the network in clear), and carries it to others', async () => {
    const { gate, logs } = await gateFor([...standardAllow(), `other.test:${web.port}`], {
      secrets: [{ host: 'allowed.test', header: 'Authorization', value: 'Bearer real-key' }],
    });
    // The canary: plain HTTP to an allowed host without a secret is carried, and gets no header.
    const elsewhere = await getThroughGate(gate.address, `http://other.test:${web.port}/`);
    expect(elsewhere.status).toBe(200);
    expect(JSON.parse(elsewhere.body).headers.authorization).toBeUndefined();
    const before = web.received.length;
    const refused = await getThroughGate(gate.address, `http://allowed.test:${web.port}/`);
    expect(refused.status).toBe(403);
    expect(refused.headers['x-sandcell-gate-rule']).toBe('secret-needs-https');
    expect(refused.body).toContain('https://');
    expect(web.received.length).toBe(before);
    expect(JSON.stringify(logs)).not.toContain('real-key');
  });

  it('refuses a secret whose header could frame the request', async () => {
    await expect(
      gateFor(standardAllow(), { secrets: [{ host: 'allowed.test', header: 'Content-Length', value: '0' }] }),
    ).rejects.toThrow('cannot be set by the gate');
  });
});

describe('per-session limits', () => {
  it('refuses a connection over the concurrent limit with 429', async () => {
    const { gate } = await gateFor(standardAllow(), { limits: { maxConnections: 1 } });
    const { answer, socket } = await openTunnel(gate.address, `allowed.test:${secureWeb.port}`);
    expect(answer.status).toBe(200);
    try {
      const refused = await getThroughGate(gate.address, `http://allowed.test:${web.port}/`);
      expect(refused.status).toBe(429);
      expect(refused.headers['x-sandcell-gate-rule']).toBe('too-many-connections');
    } finally {
      socket.destroy();
    }
    await expect.poll(() => gate.usage().openConnections).toBe(0);
    const after = await getThroughGate(gate.address, `http://allowed.test:${web.port}/`);
    expect(after.status).toBe(200);
  });

  it('cuts a download at the byte limit and refuses the session afterwards', async () => {
    const { gate, logs } = await gateFor(standardAllow(), { limits: { maxBytesIn: 64 * 1024 } });
    const answer = await getThroughGate(gate.address, `http://allowed.test:${web.port}/bytes/1000000`);
    expect(answer.body.length).toBeLessThan(1_000_000);
    await expect
      .poll(() => logs.find((entry) => entry.event === 'connection-end'))
      .toMatchObject({ outcome: 'byte-limit' });
    const next = await getThroughGate(gate.address, `http://allowed.test:${web.port}/`);
    expect(next.status).toBe(429);
    expect(next.headers['x-sandcell-gate-rule']).toBe('byte-limit');
  });

  it('cuts an upload at the outgoing byte limit', async () => {
    const { gate, logs } = await gateFor(standardAllow(), { limits: { maxBytesOut: 16 * 1024 } });
    const body = 'x'.repeat(200_000);
    const before = web.received.length;
    const answer = await sendRaw(
      gate.address,
      `POST http://allowed.test:${web.port}/upload HTTP/1.1\r\nHost: allowed.test\r\nContent-Length: ${body.length}\r\n\r\n${body}`,
    );
    expect(answer.status).not.toBe(200);
    // Cut mid-stream (connection-end) or, when the gate already holds too much, refused outright.
    await expect
      .poll(() =>
        logs.some((entry) => (entry.event === 'connection-end' ? entry.outcome : entry.rule) === 'byte-limit'),
      )
      .toBe(true);
    expect(web.received.slice(before).some((request) => request.url === '/upload')).toBe(false);
  });

  it('closes a tunnel that stays idle', async () => {
    const { gate, logs } = await gateFor(standardAllow(), { limits: { idleTimeoutMs: 300 } });
    const { answer, socket } = await openTunnel(gate.address, `allowed.test:${secureWeb.port}`);
    expect(answer.status).toBe(200);
    socket.resume();
    await readToEnd(socket);
    await expect
      .poll(() => logs.find((entry) => entry.event === 'connection-end'))
      .toMatchObject({ outcome: 'idle-timeout' });
  });

  it('frees the slot of a client that never finishes its request head', async () => {
    const { gate } = await gateFor(standardAllow(), { limits: { maxConnections: 1, idleTimeoutMs: 300 } });
    const slow = await connectToGate(gate.address);
    slow.write(`GET http://allowed.test:${web.port}/ HTTP/1.1\r\nHost: allowed`);
    await readToEnd(slow);
    await expect.poll(() => gate.usage().openConnections).toBe(0);
    expect((await getThroughGate(gate.address, `http://allowed.test:${web.port}/`)).status).toBe(200);
  });

  it('keeps one gate per session: another session’s gate has its own policy and budget', async () => {
    const first = await gateFor(standardAllow(), { limits: { maxBytesIn: 1024 } });
    const second = await gateFor([`other.test:${web.port}`, `127.0.0.1/32:${web.port}`], { sessionId: 'session-b' });
    await getThroughGate(first.gate.address, `http://allowed.test:${web.port}/bytes/100000`);
    expect((await getThroughGate(second.gate.address, `http://allowed.test:${web.port}/`)).status).toBe(403);
    expect((await getThroughGate(second.gate.address, `http://other.test:${web.port}/`)).status).toBe(200);
  });
});

describe('a logger that throws', () => {
  it('changes nothing for the client', async () => {
    const { gate } = await gateFor(standardAllow(), {
      logger: () => {
        throw new Error('log store is down');
      },
    });
    expect((await getThroughGate(gate.address, `http://other.test:${web.port}/`)).status).toBe(403);
    const answer = await httpsThroughGate(gate.address, {
      host: 'allowed.test',
      port: secureWeb.port,
      path: '/after',
      ca: certificates.caCertificate,
    });
    expect(JSON.parse(answer.body).url).toBe('/after');
  });
});

describe('close', () => {
  it('ends open tunnels and stops listening', async () => {
    const { gate, logs } = await gateFor(standardAllow());
    const { answer, socket } = await openTunnel(gate.address, `allowed.test:${secureWeb.port}`);
    expect(answer.status).toBe(200);
    socket.resume();
    const ended = readToEnd(socket);
    await gate.close();
    await ended;
    await expect
      .poll(() => logs.find((entry) => entry.event === 'connection-end'))
      .toMatchObject({ outcome: 'gate-closed' });
    await expect(getThroughGate(gate.address, `http://allowed.test:${web.port}/`)).rejects.toThrow();
  });
});
