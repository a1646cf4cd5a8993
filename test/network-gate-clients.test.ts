/**
 * The gate with the tools a sandbox will use, unmodified, run on the host and pointed at the gate
 * by their usual proxy settings: curl, Python's urllib and requests. Stand-in servers on 127.0.0.1
 * play the internet (HTTPS with a test CA); the gate's resolver stub maps the test names there.
 */
import { execFile } from 'node:child_process';
import { rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Gate, startGate } from '../src/network/gate.js';
import { parseNetworkPolicy } from '../src/network/policy.js';
import { type StandInServer, startStandInServer } from './support/stand-in-internet.js';
import { createTestCertificates, type TestCertificates } from './support/test-ca.js';

const run = promisify(execFile);
let certificates: TestCertificates;
let web: StandInServer;
let secureWeb: StandInServer;
let gate: Gate;
let proxyUrl: string;

beforeAll(async () => {
  certificates = createTestCertificates(['allowed.test', 'other.test']);
  web = await startStandInServer({ label: 'web' });
  secureWeb = await startStandInServer({
    label: 'secure',
    tls: { key: certificates.serverKey, cert: certificates.serverCertificate },
  });
  gate = await startGate({
    sessionId: 'clients',
    policy: parseNetworkPolicy([
      `allowed.test:${web.port}`,
      `allowed.test:${secureWeb.port}`,
      `127.0.0.1/32:${web.port}`,
      `127.0.0.1/32:${secureWeb.port}`,
    ]),
    listen: { host: '127.0.0.1', port: 0 },
    resolve: async (name) => (name.endsWith('.test') ? ['127.0.0.1'] : []),
  });
  proxyUrl = `http://127.0.0.1:${(gate.address as AddressInfo).port}`;
});

afterAll(async () => {
  await gate?.close();
  await web?.close();
  await secureWeb?.close();
  if (certificates) rmSync(certificates.directory, { recursive: true, force: true });
});

/** The environment a sandbox will have: the proxy variables, and no exceptions to them. */
const proxyEnvironment = () => ({
  PATH: process.env.PATH ?? '/usr/bin:/bin',
  HOME: process.env.HOME ?? '/root',
  HTTP_PROXY: proxyUrl,
  HTTPS_PROXY: proxyUrl,
  http_proxy: proxyUrl,
  https_proxy: proxyUrl,
  SSL_CERT_FILE: certificates.caCertificatePath,
  REQUESTS_CA_BUNDLE: certificates.caCertificatePath,
});

describe('curl', () => {
  it('reaches an allowed name over HTTPS and plain HTTP', async () => {
    const secure = await run(
      'curl',
      ['-sS', '--fail', '--cacert', certificates.caCertificatePath, `https://allowed.test:${secureWeb.port}/curl`],
      {
        env: proxyEnvironment(),
      },
    );
    expect(JSON.parse(secure.stdout)).toMatchObject({ label: 'secure', url: '/curl' });
    const plain = await run('curl', ['-sS', '--fail', `http://allowed.test:${web.port}/curl-plain`], {
      env: proxyEnvironment(),
    });
    expect(JSON.parse(plain.stdout)).toMatchObject({ label: 'web', url: '/curl-plain' });
  });

  it('shows the refusal: the rule for plain HTTP, the 403 for a tunnel', async () => {
    const plain = await run('curl', ['-sS', `http://other.test:${web.port}/`], { env: proxyEnvironment() });
    expect(plain.stdout).toContain("(host-not-allowed): other.test is not on this session's network allow-list");
    const secure = run(
      'curl',
      ['-sS', '--cacert', certificates.caCertificatePath, `https://other.test:${secureWeb.port}/`],
      {
        env: proxyEnvironment(),
      },
    );
    await expect(secure).rejects.toMatchObject({ stderr: expect.stringContaining('403') });
  });
});

describe('Python', () => {
  const python = (code: string) => run('python3', ['-c', code], { env: proxyEnvironment() });

  it('urllib reaches an allowed name over HTTPS and plain HTTP', async () => {
    const { stdout } = await python(
      [
        'import json, ssl, sys, urllib.request',
        `context = ssl.create_default_context(cafile=${JSON.stringify(certificates.caCertificatePath)})`,
        `print(json.load(urllib.request.urlopen('https://allowed.test:${secureWeb.port}/urllib', context=context))['url'])`,
        `print(json.load(urllib.request.urlopen('http://allowed.test:${web.port}/urllib-plain'))['url'])`,
      ].join('\n'),
    );
    expect(stdout.trim().split('\n')).toEqual(['/urllib', '/urllib-plain']);
  });

  it('requests reaches an allowed name, sends a body, and sees a refusal as a ProxyError', async () => {
    const { stdout } = await python(
      [
        'import requests',
        `print(requests.get('https://allowed.test:${secureWeb.port}/requests').json()['url'])`,
        `print(requests.post('http://allowed.test:${web.port}/form', data={'a': '1'}).json()['body'])`,
        'try:',
        `    requests.get('https://other.test:${secureWeb.port}/')`,
        'except requests.exceptions.ProxyError as error:',
        "    print('refused', '403' in str(error))",
      ].join('\n'),
    );
    expect(stdout.trim().split('\n')).toEqual(['/requests', 'a=1', 'refused True']);
  });
});
