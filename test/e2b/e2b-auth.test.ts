/**
 * Who may do what through /e2b, with the unmodified SDK and raw requests on a
 * real server: the API key (X-API-KEY) for the control plane, each key seeing
 * only its own sandboxes; the sandbox's own tokens for its traffic, one
 * sandbox's tokens opening no other; and, without keys, loopback clients only
 * with browsers' cross-site requests refused.
 */
import { AuthenticationError, Sandbox, SandboxNotFoundError } from 'e2b';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { asKey, OTHER_KEY, startE2bServer, type TestServer } from '../support/e2b.js';

let server: TestServer;

beforeAll(async () => {
  server = await startE2bServer();
});
afterAll(async () => {
  await server?.close();
});

/** What create answers, read raw: the tokens the SDK keeps. */
async function createRaw(key: string) {
  const response = await fetch(`${server.url}/e2b/v2/sandboxes`, {
    method: 'POST',
    headers: { 'x-api-key': key, 'content-type': 'application/json' },
    body: JSON.stringify({ templateID: 'base', timeout: 120 }),
  });
  expect(response.status).toBe(201);
  return (await response.json()) as { sandboxID: string; envdAccessToken: string; trafficAccessToken: string };
}

function envd(path: string, headers: Record<string, string>, init: RequestInit = {}) {
  return fetch(`${server.url}/e2b${path}`, { ...init, headers: { 'e2b-sandbox-port': '49983', ...headers } });
}

describe('E2B auth', () => {
  it('refuses a wrong or missing API key with AuthenticationError', async () => {
    await expect(asKey('e2b_00000000000000000000000000000000', () => Sandbox.create())).rejects.toBeInstanceOf(
      AuthenticationError,
    );
    const response = await fetch(`${server.url}/e2b/v2/sandboxes`);
    expect(response.status).toBe(401);
    expect(await response.json()).toEqual({ code: 401, message: expect.stringContaining('API key') });
  });

  it('lets a page on another site through only with a valid X-API-KEY, as with a Bearer key', async () => {
    const page = { origin: 'https://app.example', 'sec-fetch-site': 'cross-site' };
    const withKey = await fetch(`${server.url}/e2b/v2/sandboxes`, {
      headers: { ...page, 'x-api-key': process.env.E2B_API_KEY ?? '' },
    });
    expect(withKey.status).toBe(200);
    const withWrongKey = await fetch(`${server.url}/e2b/v2/sandboxes`, {
      headers: { ...page, 'x-api-key': 'e2b_nope0000' },
    });
    expect(withWrongKey.status).toBe(403);
  });

  it('one key cannot see, connect to, change or kill another key’s sandbox', async () => {
    const sandbox = await Sandbox.create();
    try {
      await asKey(OTHER_KEY, async () => {
        await expect(Sandbox.getInfo(sandbox.sandboxId)).rejects.toBeInstanceOf(SandboxNotFoundError);
        await expect(Sandbox.connect(sandbox.sandboxId)).rejects.toBeInstanceOf(SandboxNotFoundError);
        await expect(Sandbox.setTimeout(sandbox.sandboxId, 10_000)).rejects.toThrow();
        expect(await Sandbox.kill(sandbox.sandboxId)).toBe(false);
        const listed = await Sandbox.list().nextItems();
        expect(listed.map((info) => info.sandboxId)).not.toContain(sandbox.sandboxId);
      });
      expect(await sandbox.isRunning()).toBe(true);
      expect((await sandbox.getInfo()).endAt.getTime()).toBeGreaterThan(Date.now() + 60_000);
    } finally {
      await sandbox.kill();
    }
  });

  it('sandbox traffic needs the sandbox’s own token: missing, wrong or another sandbox’s are refused', async () => {
    const mine = await createRaw(process.env.E2B_API_KEY ?? '');
    const theirs = await createRaw(OTHER_KEY);
    try {
      // Canary: with its token the request works.
      const ok = await envd(`/files?path=${encodeURIComponent('/home/user')}`, {
        'e2b-sandbox-id': mine.sandboxID,
        'x-access-token': mine.envdAccessToken,
      });
      expect(ok.status).toBe(400); // a directory is not a file: past the token check
      const health = await envd('/health', {
        'e2b-sandbox-id': mine.sandboxID,
        'x-access-token': mine.envdAccessToken,
      });
      expect(health.status).toBe(204);

      const refusedHeaders: Record<string, string>[] = [
        { 'e2b-sandbox-id': mine.sandboxID },
        { 'e2b-sandbox-id': mine.sandboxID, 'x-access-token': 'wrong' },
        { 'e2b-sandbox-id': mine.sandboxID, 'x-access-token': theirs.envdAccessToken },
        { 'e2b-sandbox-id': theirs.sandboxID, 'x-access-token': mine.envdAccessToken },
        // The API key is not a sandbox token.
        { 'e2b-sandbox-id': mine.sandboxID, 'x-api-key': process.env.E2B_API_KEY ?? '' },
      ];
      for (const headers of refusedHeaders) {
        const refused = await envd('/health', headers);
        expect(refused.status).toBe(401);
        const rpc = await envd(
          '/process.Process/List',
          { ...headers, 'content-type': 'application/json' },
          {
            method: 'POST',
            body: '{}',
          },
        );
        expect(rpc.status).toBe(401);
        expect(await rpc.json()).toMatchObject({ code: 'unauthenticated' });
      }
      // The code interpreter's port takes the traffic token, and refuses it wrong or missing.
      const interpreterHeaders: Record<string, string>[] = [
        { 'e2b-sandbox-id': mine.sandboxID },
        { 'e2b-sandbox-id': mine.sandboxID, 'e2b-traffic-access-token': theirs.trafficAccessToken },
        { 'e2b-sandbox-id': mine.sandboxID, 'e2b-traffic-access-token': mine.envdAccessToken },
      ];
      for (const headers of interpreterHeaders) {
        const refused = await fetch(`${server.url}/e2b/contexts`, {
          headers: { 'e2b-sandbox-port': '49999', ...headers },
        });
        expect(refused.status).toBe(401);
      }
      // An id with no sandbox answers as E2B's proxy does for a sandbox that is gone.
      const gone = await envd('/health', { 'e2b-sandbox-id': 'a'.repeat(20), 'x-access-token': mine.envdAccessToken });
      expect(gone.status).toBe(502);
    } finally {
      await asKey(OTHER_KEY, () => Sandbox.kill(theirs.sandboxID));
      await Sandbox.kill(mine.sandboxID);
    }
  });

  it('bounds what a create may carry', async () => {
    const tooMany = Object.fromEntries(Array.from({ length: 100 }, (_, index) => [`k${index}`, 'v']));
    const response = await fetch(`${server.url}/e2b/v2/sandboxes`, {
      method: 'POST',
      headers: { 'x-api-key': process.env.E2B_API_KEY ?? '', 'content-type': 'application/json' },
      body: JSON.stringify({ templateID: 'base', metadata: tooMany }),
    });
    expect(response.status).toBe(400);
    expect(await response.json()).toMatchObject({ code: 400 });
    const tooLong = await fetch(`${server.url}/e2b/v2/sandboxes`, {
      method: 'POST',
      headers: { 'x-api-key': process.env.E2B_API_KEY ?? '', 'content-type': 'application/json' },
      body: JSON.stringify({ templateID: 'base', timeout: 10 * 86_400 }),
    });
    expect(tooLong.status).toBe(400);
  });
});

describe('E2B without API keys', () => {
  let local: TestServer;
  let saved: NodeJS.ProcessEnv;

  beforeAll(async () => {
    saved = { ...process.env };
    local = await startE2bServer({ apiKeys: [] });
  });
  afterAll(async () => {
    await local?.close();
    process.env = saved;
  });

  it('serves the SDK on loopback whatever key it sends, and refuses a browser page on another site', async () => {
    const sandbox = await Sandbox.create();
    try {
      expect(await sandbox.isRunning()).toBe(true);
      const fromPage = await fetch(`${local.url}/e2b/v2/sandboxes`, {
        headers: { 'x-api-key': 'e2b_anything', origin: 'https://evil.example', 'sec-fetch-site': 'cross-site' },
      });
      expect(fromPage.status).toBe(403);
      const traffic = await fetch(`${local.url}/e2b/health`, {
        headers: {
          'e2b-sandbox-port': '49983',
          'e2b-sandbox-id': sandbox.sandboxId,
          origin: 'https://evil.example',
        },
      });
      expect(traffic.status).toBe(403);
    } finally {
      await sandbox.kill();
    }
  });
});
