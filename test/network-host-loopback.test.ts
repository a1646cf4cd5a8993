/**
 * `host.sandcell.internal`, the gate alone over real sockets: stand-in services on this machine's
 * 127.0.0.1 (a model server, a database) are reached by the reserved name on the port a rule names,
 * and by nothing else: not another port, a wildcard, a literal, a name that resolves there, a CIDR
 * that covers it. The clients a sandbox has (curl, urllib, requests, and httpx, which the OpenAI SDK
 * is built on) get a sandbox's own proxy variables, NO_PROXY included. And every refusal, of the
 * gate or of the allow-list's parser, suggests a rule that, applied as a user would, lets the
 * request through.
 */
import { execFile } from 'node:child_process';
import { rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { promisify } from 'node:util';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type Gate, startGate } from '../src/network/gate.js';
import { resolveNetworkOption } from '../src/network/network-option.js';
import { parseNetworkPolicy } from '../src/network/policy.js';
import { proxyEnvironment } from '../src/network/sandbox-proxy.js';
import { type GateAnswer, getThroughGate, httpsThroughGate, openTunnel } from './support/gate-client.js';
import { type StandInServer, startStandInServer } from './support/stand-in-internet.js';
import { createTestCertificates, type TestCertificates } from './support/test-ca.js';

const HOST = 'host.sandcell.internal';
const run = promisify(execFile);
let certificates: TestCertificates;
let service: StandInServer;
let secureService: StandInServer;
let unlisted: StandInServer;
const gates: Gate[] = [];
/** Every name the stub resolver was asked for: the reserved name must never be among them. */
const lookups: string[] = [];
const DNS: Record<string, string[]> = { 'local.test': ['127.0.0.1'], 'rebind.test': ['127.0.0.1'] };

beforeAll(async () => {
  certificates = createTestCertificates([HOST]);
  service = await startStandInServer({ label: 'service' });
  secureService = await startStandInServer({
    label: 'secure-service',
    tls: { key: certificates.serverKey, cert: certificates.serverCertificate },
  });
  unlisted = await startStandInServer({ label: 'unlisted' });
});

afterAll(async () => {
  await Promise.all([service?.close(), secureService?.close(), unlisted?.close()]);
  if (certificates) rmSync(certificates.directory, { recursive: true, force: true });
});

afterEach(async () => {
  await Promise.all(gates.splice(0).map((gate) => gate.close()));
});

/** A gate for a session's allow-list, read as a session's is (the option's parser first). */
async function gateFor(allow: string[]): Promise<Gate> {
  const checked = resolveNetworkOption({ allow })?.allow ?? [];
  const gate = await startGate({
    sessionId: 'host-loopback',
    policy: parseNetworkPolicy(checked),
    listen: { host: '127.0.0.1', port: 0 },
    resolve: async (name) => {
      lookups.push(name);
      return DNS[name] ?? [];
    },
  });
  gates.push(gate);
  return gate;
}

describe('host.sandcell.internal', () => {
  it("reaches a service on this machine's loopback over HTTP and HTTPS, without a lookup", async () => {
    const gate = await gateFor([`${HOST}:${service.port}`, `${HOST}:${secureService.port}`]);
    const plain = await getThroughGate(gate.address, `http://${HOST}:${service.port}/api/tags`);
    expect(plain.status).toBe(200);
    expect(JSON.parse(plain.body)).toMatchObject({
      label: 'service',
      url: '/api/tags',
      headers: { host: `${HOST}:${service.port}` },
    });
    const secure = await httpsThroughGate(gate.address, {
      host: HOST,
      port: secureService.port,
      path: '/secure',
      ca: certificates.caCertificate,
    });
    expect(JSON.parse(secure.body)).toMatchObject({ label: 'secure-service', url: '/secure' });
    expect(lookups).not.toContain(HOST);
  });

  it('reaches only the ports named, and no wildcard reaches it', async () => {
    const gate = await gateFor([`${HOST}:${service.port}`, `*.sandcell.internal:${unlisted.port}`]);
    const before = unlisted.connections();
    const other = await getThroughGate(gate.address, `http://${HOST}:${unlisted.port}/`);
    expect(other.status).toBe(403);
    expect(other.headers['x-sandcell-gate-rule']).toBe('port-not-allowed');
    const tunnel = await openTunnel(gate.address, `${HOST}:${unlisted.port}`);
    expect(tunnel.answer.status).toBe(403);
    tunnel.socket.destroy();
    expect(unlisted.connections()).toBe(before);
  });

  it('is the only way there: a wide CIDR opens no loopback, to a name that resolves there or a literal', async () => {
    const gate = await gateFor([`rebind.test:${unlisted.port}`, `0.0.0.0/0:${unlisted.port}`, `::/0`]);
    const before = unlisted.connections();
    for (const url of [
      `http://rebind.test:${unlisted.port}/`,
      `http://127.0.0.1:${unlisted.port}/`,
      `http://0.0.0.0:${unlisted.port}/`,
      `http://[::ffff:127.0.0.1]:${unlisted.port}/`,
    ]) {
      const answer = await getThroughGate(gate.address, url);
      expect(answer.status, url).toBe(403);
      expect(answer.body, url).toContain(`${HOST}:${unlisted.port}`);
    }
    expect(unlisted.connections()).toBe(before);
  });

  it('says plainly when nothing listens on the port named', async () => {
    const closed = await startStandInServer();
    const port = closed.port;
    await closed.close();
    const gate = await gateFor([`${HOST}:${port}`]);
    const answer = await getThroughGate(gate.address, `http://${HOST}:${port}/`);
    expect(answer.status).toBe(502);
    expect(answer.body).toContain(
      `nothing on this machine's loopback (127.0.0.1, ::1) accepted a connection on port ${port}`,
    );
  });
});

describe("a sandbox's clients, with its proxy variables", () => {
  /** The sandbox's environment, pointed at this gate and this CA instead of its forwarder and bundle. */
  function sandboxEnvironment(gate: Gate): Record<string, string> {
    const proxy = `http://127.0.0.1:${(gate.address as AddressInfo).port}`;
    const inside = proxyEnvironment();
    const environment: Record<string, string> = { PATH: '/usr/bin:/bin' };
    for (const [name, value] of Object.entries(inside)) {
      environment[name] = value.startsWith('http://127.0.0.1:')
        ? proxy
        : value.endsWith('.crt')
          ? certificates.caCertificatePath
          : value;
    }
    return environment;
  }

  it('curl, urllib, requests and httpx reach the service by name; NO_PROXY does not cover it', async () => {
    const gate = await gateFor([`${HOST}:${service.port}`, `${HOST}:${secureService.port}`]);
    const env = sandboxEnvironment(gate);
    expect(env.NO_PROXY).toBe('localhost,127.0.0.1,::1');
    const plainUrl = `http://${HOST}:${service.port}`;
    const secureUrl = `https://${HOST}:${secureService.port}`;
    const curl = await run('curl', ['-sS', '--fail', `${plainUrl}/curl`, `${secureUrl}/curl-secure`], { env });
    expect(curl.stdout).toContain('"url":"/curl"');
    expect(curl.stdout).toContain('"url":"/curl-secure"');
    // Debian's Python, as in the sandbox (httpx is the transport of the OpenAI and Anthropic SDKs).
    const python = await run(
      '/usr/bin/python3',
      [
        '-c',
        [
          'import json, urllib.request, requests, httpx',
          `print(json.load(urllib.request.urlopen("${plainUrl}/urllib"))["url"])`,
          `print(requests.get("${secureUrl}/requests").json()["url"])`,
          `print(httpx.get("${plainUrl}/httpx").json()["url"])`,
          `print(httpx.Client().post("${secureUrl}/v1/chat/completions", json={"model": "m"}).json()["url"])`,
        ].join('\n'),
      ],
      { env },
    );
    expect(python.stdout.trim().split('\n')).toEqual(['/urllib', '/requests', '/httpx', '/v1/chat/completions']);
  });
});

/** The first rule and URL a message suggests: `allow RULE and use URL`, `add RULE`, `such as RULE`. */
function suggestionIn(message: string): { rule: string; url?: string } | undefined {
  const rule = /(?:allow|add|such as) (\S+?)(?:\)|,|;|\.)?(?:\s|$)/.exec(message)?.[1];
  if (rule === undefined || rule === 'to') return undefined;
  const url = / use (http:\/\/\S+?\/)(?:\s|$|\.)/.exec(message)?.[1];
  return { rule, ...(url ? { url } : {}) };
}

/**
 * Whether a client with the sandbox's NO_PROXY sends `url` to the gate at all (curl's and Python's
 * rule: an entry matches the host and the names below it). One it does not send there never gets through.
 */
function sentToTheGate(url: string): boolean {
  const host = new URL(url).hostname.replace(/^\[|\]$/g, '');
  const bypassed = (proxyEnvironment().NO_PROXY ?? '').split(',');
  return !bypassed.some((entry) => host === entry || host.endsWith(`.${entry}`));
}

/** Follows the suggestions, as a user would, until the request goes through (or no suggestion is left). */
async function followSuggestions(allow: string[], url: string): Promise<{ answer: GateAnswer; steps: string[] }> {
  const steps: string[] = [];
  let rules = [...allow];
  let target = url;
  for (let attempt = 0; attempt < 4; attempt++) {
    const answer = await getThroughGate((await gateFor(rules)).address, target);
    if (answer.status === 200) {
      if (!sentToTheGate(target))
        steps.push(`but ${target} is the sandbox's own: its clients never send it to the gate`);
      return { answer, steps };
    }
    const suggestion = suggestionIn(answer.body);
    if (!suggestion) return { answer, steps };
    steps.push(`${answer.headers['x-sandcell-gate-rule']}: ${suggestion.rule}`);
    rules = [...rules, suggestion.rule];
    if (suggestion.url) target = `${suggestion.url.replace(/\/$/, '')}${new URL(target).pathname}`;
  }
  throw new Error(`still refused after ${steps.join(' → ')}`);
}

describe('every refusal suggests a rule that works', () => {
  const cases: Array<[string, () => string[], () => string]> = [
    [
      'a literal 127.0.0.1 sent to the proxy',
      () => [`${HOST}:${unlisted.port}`],
      () => `http://127.0.0.1:${service.port}/x`,
    ],
    ['a literal [::1]', () => ['pypi.org'], () => `http://[::1]:${service.port}/x`],
    [
      'a literal 0.0.0.0 under a wide CIDR',
      () => [`0.0.0.0/0:${service.port}`],
      () => `http://0.0.0.0:${service.port}/x`,
    ],
    ['localhost sent to the proxy', () => ['pypi.org'], () => `http://localhost:${service.port}/x`],
    [
      'a name that resolves to loopback',
      () => [`local.test:${service.port}`],
      () => `http://local.test:${service.port}/x`,
    ],
    ['a name not on the list', () => ['pypi.org'], () => `http://local.test:${service.port}/x`],
    ['the reserved name not on the list', () => ['pypi.org'], () => `http://${HOST}:${service.port}/x`],
    ['the reserved name on another port', () => [`${HOST}:${unlisted.port}`], () => `http://${HOST}:${service.port}/x`],
  ];

  it.each(cases)('%s', async (_, allow, url) => {
    const { answer, steps } = await followSuggestions(allow(), url());
    expect(steps.length).toBeGreaterThan(0);
    expect(answer.status, steps.join(' → ')).toBe(200);
    expect(steps.join(' → ')).not.toContain("the sandbox's own");
    expect(JSON.parse(answer.body)).toMatchObject({ label: 'service', url: '/x' });
  });

  it.each([['127.0.0.1:PORT'], ['127.0.0.1/32:PORT'], ['localhost:PORT'], ['[::1]:PORT'], ['0.0.0.0:PORT']])(
    "the allow-list's parser, for %s",
    async (template) => {
      const entry = template.replace('PORT', String(service.port));
      let message = '';
      try {
        resolveNetworkOption({ allow: [entry] });
      } catch (error) {
        message = (error as Error).message;
      }
      const suggestion = suggestionIn(message);
      expect(suggestion, message).toEqual({ rule: `${HOST}:${service.port}`, url: `http://${HOST}:${service.port}/` });
      expect(sentToTheGate(suggestion?.url ?? '')).toBe(true);
      const answer = await getThroughGate(
        (await gateFor([suggestion?.rule ?? ''])).address,
        `${suggestion?.url ?? ''}from-parser`,
      );
      expect(JSON.parse(answer.body)).toMatchObject({ label: 'service', url: '/from-parser' });
    },
  );
});
