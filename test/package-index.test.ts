/**
 * `pip install` in a session from the package index this machine's pip is configured for
 * (`network.packageIndex`, `--allow-package-index`), on real bubblewrap through the real gate. The
 * index here is a tiny one on 127.0.0.1 over HTTPS with a test CA, given to the host's pip as
 * PIP_INDEX_URL, the way an operator's pip configuration names a mirror: sandcell asks that pip,
 * lets the sandbox reach that index alone (as host.sandcell.internal) and points the sandbox's pip
 * at it. The packages land in the user site, so a pause and resume keeps them. A sandbox without
 * network says a package is not there at once. Whether the index is reachable from the sandbox is
 * shown first, so the refusals that follow are the gate's, not a sandbox that failed to start.
 */
import { randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createBubblewrapBackend } from '../src/backends/bubblewrap/index.js';
import { createGateHost } from '../src/network/gate-host.js';
import { withSession } from './contract/contract-support.js';
import { killServes, type Serve, startServe, stopServe } from './support/serve-process.js';
import { type StandInServer, startStandInServer } from './support/stand-in-internet.js';
import { createTestCertificates, type TestCertificates } from './support/test-ca.js';
import { startTinyIndex, type TinyIndex } from './support/tiny-index.js';

const HOST = 'host.sandcell.internal';
const token = randomBytes(6).toString('hex');
const PIP = '!pip install --disable-pip-version-check sandcell-probe';
let certificates: TestCertificates;
let index: TinyIndex;
let elsewhere: StandInServer;
const saved = { PIP_INDEX_URL: process.env.PIP_INDEX_URL, PIP_EXTRA_INDEX_URL: process.env.PIP_EXTRA_INDEX_URL };

beforeAll(async () => {
  certificates = createTestCertificates([HOST]);
  const tls = { key: certificates.serverKey, cert: certificates.serverCertificate };
  index = await startTinyIndex(tls, token);
  elsewhere = await startStandInServer({ label: `elsewhere-${token}`, tls });
  // This machine's pip configuration, as an operator's pip.conf would name a mirror.
  process.env.PIP_INDEX_URL = `https://127.0.0.1:${index.port}/simple/`;
  delete process.env.PIP_EXTRA_INDEX_URL;
});
afterAll(async () => {
  for (const [name, value] of Object.entries(saved)) {
    if (value === undefined) delete process.env[name];
    else process.env[name] = value;
  }
  killServes();
  await Promise.all([index?.close(), elsewhere?.close()]);
  if (certificates) rmSync(certificates.directory, { recursive: true, force: true });
});

describe('the package index in a session (bubblewrap)', () => {
  const backend = createBubblewrapBackend();
  const gate = createGateHost();

  it("reaches the host pip's index alone, with the sandbox's pip pointed at it; a sandbox without network says at once", async () => {
    await withSession(
      backend,
      {
        network: { allow: [], packageIndex: true, trustedCertificates: certificates.caCertificate },
        networkGate: gate,
      },
      async (session) => {
        const settings = await session.commands.run('printenv PIP_INDEX_URL');
        expect(settings.stdout).toBe(`https://${HOST}:${index.port}/simple/\n`);
        const pip = await session.run(PIP, { timeoutMs: 120_000 });
        expect(pip.error).toBeUndefined();
        expect(pip.stdout).toContain('Successfully installed sandcell-probe-1.0');
        const imported = await session.run('import sandcell_probe\nprint(sandcell_probe.VALUE)');
        expect(imported.stdout).toBe(`${token}\n`);
        // Nothing else on this machine: another HTTPS service here is refused by the gate.
        const other = await session.commands.run(`curl -sS --max-time 20 https://${HOST}:${elsewhere.port}/`);
        expect(other.exitCode).not.toBe(0);
        expect(other.stderr).toContain('403');
        expect(elsewhere.received).toEqual([]);
      },
    );
    await withSession(backend, {}, async (session) => {
      const pip = await session.run(PIP, { timeoutMs: 60_000 });
      expect(pip.stdout).toContain('No matching distribution found for sandcell-probe');
      expect((await session.run('import sandcell_probe')).error?.name).toBe('ModuleNotFoundError');
    });
  }, 240_000);
});

describe('sandcell serve --allow-package-index', () => {
  let serve: Serve;
  beforeAll(async () => {
    serve = await startServe(['--allow-package-index'], { PIP_INDEX_URL: process.env.PIP_INDEX_URL as string });
  });
  afterAll(async () => {
    if (serve) await stopServe(serve, 'SIGTERM');
  });

  const post = async (base: string, route: string, body: unknown) => {
    const response = await fetch(`${base}${route}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    return { status: response.status, json: (await response.json()) as Record<string, unknown> };
  };

  it('lets a key ask for the index (network.packageIndex); what pip installed is there after a pause and resume', async () => {
    const created = await post(serve.url, '/v1/sessions', {
      network: { allow: [], packageIndex: true, trustedCertificates: certificates.caCertificate },
    });
    expect(created.status).toBe(201);
    const id = created.json.id as string;
    const pip = await post(serve.url, `/v1/sessions/${id}/executions`, { code: PIP, timeoutMs: 120_000 });
    expect(pip.json.stdout).toContain('Successfully installed sandcell-probe-1.0');
    expect((await post(serve.url, `/v1/sessions/${id}/pause`, {})).status).toBe(200);
    expect((await post(serve.url, `/v1/sessions/${id}/resume`, {})).status).toBe(200);
    const imported = await post(serve.url, `/v1/sessions/${id}/executions`, {
      code: 'import sandcell_probe\nprint(sandcell_probe.VALUE)',
    });
    expect(imported.json.stdout).toBe(`${token}\n`);
  }, 240_000);

  it('a server without the flag refuses a session that asks for the index, naming the flag', async () => {
    const plain = await startServe([], { PIP_INDEX_URL: process.env.PIP_INDEX_URL as string });
    try {
      const refused = await post(plain.url, '/v1/sessions', { network: { allow: [], packageIndex: true } });
      expect(refused.status).toBe(403);
      expect(JSON.stringify(refused.json)).toContain('network-not-permitted');
      expect(JSON.stringify(refused.json)).toContain('--allow-package-index');
    } finally {
      await stopServe(plain, 'SIGTERM');
    }
  }, 120_000);
});
