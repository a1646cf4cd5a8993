/**
 * API keys on the server's own logic, over real HTTP on 127.0.0.1 with kernels
 * answering from a script: per-key isolation, per-key limits (413/429) and
 * idle close.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { assign, byCode, printed, recall, value } from '../../../test/support/kernel-script.js';
import { client, type LogCapture, startScriptedServer } from '../../../test/support/server.js';
import type { SandcellServer } from '../index.js';

// biome-ignore lint/suspicious/noExplicitAny: response bodies are read loosely in tests
type Json = Record<string, any>;
const ALICE = 'alice:alice-secret-0001';
const BOB = 'bob-secret-0002';

const kernel = byCode({
  'print(1)': [printed('1\n')],
  'owner = "alice"': assign('owner', "'alice'"),
  'owner = "bob"': assign('owner', "'bob'"),
  owner: recall('owner'),
  'import time\ntime.sleep(20)': [{ type: 'sleep', ms: 20_000 }],
  ...Object.fromEntries(['0', '1', '2', '3', '4'].map((digit) => [digit, [value(digit)]])),
  'kept = 1': assign('kept', '1'),
  kept: recall('kept'),
});

describe('per-key isolation', () => {
  let server: SandcellServer & { logs: LogCapture };
  beforeAll(async () => {
    server = await startScriptedServer(kernel, {
      apiKeys: [ALICE, BOB],
      limits: { maxExecutionMs: 500 },
      sessionOptions: { maxCodeBytes: 1000 },
    });
  });
  afterAll(async () => {
    await server?.close();
  });

  it('a key cannot see, run in, read or delete another key’s session: 404, as if it did not exist', async () => {
    const alice = client(server, 'alice-secret-0001');
    const bob = client(server, BOB);
    const session = await alice.json<Json>('/v1/sessions', { method: 'POST' });
    await alice(`/v1/sessions/${session.id}/files/secret.txt`, { method: 'PUT', body: 'alice only' });

    const attempts = [
      bob(`/v1/sessions/${session.id}`),
      bob(`/v1/sessions/${session.id}/executions`, { method: 'POST', json: { code: 'print(1)' } }),
      bob(`/v1/sessions/${session.id}/files`),
      bob(`/v1/sessions/${session.id}/files/secret.txt`),
      bob(`/v1/sessions/${session.id}/files/secret.txt`, { method: 'PUT', body: 'overwritten' }),
      bob(`/v1/sessions/${session.id}/files/secret.txt`, { method: 'DELETE' }),
      bob(`/v1/sessions/${session.id}`, { method: 'DELETE' }),
    ];
    const unknown = await bob('/v1/sessions/0000000000000000');
    for (const response of await Promise.all(attempts)) {
      expect(response.status).toBe(404);
      expect(await response.json()).toEqual({
        error: { code: 'session-not-found', message: expect.stringContaining(session.id) },
      });
    }
    expect(unknown.status).toBe(404);
    expect((await bob.json<Json>('/v1/sessions')).sessions).toEqual([]);
    expect(await (await alice(`/v1/sessions/${session.id}/files/secret.txt`)).text()).toBe('alice only');
  });

  it('the same Azure identifier under two keys is two sessions', async () => {
    const run = async (key: string, code: string) => {
      const response = await fetch(
        `${server.url}/azure/code/execute?identifier=shared-identifier&api-version=2024-02-02-preview`,
        {
          method: 'POST',
          headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
          body: JSON.stringify({ properties: { code } }),
        },
      );
      return ((await response.json()) as Json).properties;
    };
    await run('alice-secret-0001', 'owner = "alice"');
    expect((await run(BOB, 'owner')).stderr).toContain("NameError: name 'owner' is not defined");
    await run(BOB, 'owner = "bob"');
    expect((await run('alice-secret-0001', 'owner')).result).toBe('alice');
    // Bob deleting "his" identifier leaves Alice's alone.
    await fetch(`${server.url}/azure/session?identifier=shared-identifier&api-version=2025-10-02-preview`, {
      method: 'DELETE',
      headers: { authorization: `Bearer ${BOB}` },
    });
    expect((await run('alice-secret-0001', 'owner')).result).toBe('alice');
  });

  it('needs a valid key everywhere but /healthz and /openapi.json', async () => {
    const anonymous = client(server);
    for (const target of ['/v1/sessions', '/metrics', '/azure/files?identifier=abcd&api-version=2024-02-02-preview']) {
      const response = await anonymous(target);
      expect(response.status).toBe(401);
      expect(((await response.json()) as Json).error.code).toBe('unauthorized');
    }
    expect((await client(server, 'not-a-key-at-all')('/v1/sessions')).status).toBe(401);
    expect((await anonymous('/healthz')).status).toBe(200);
    expect((await anonymous('/openapi.json')).status).toBe(200);
    expect((await client(server, BOB)('/metrics')).status).toBe(200);
  });

  it('lowers a longer timeout to the key’s execution limit, and refuses code over the size limit with 413', async () => {
    const alice = client(server, 'alice-secret-0001');
    const session = await alice.json<Json>('/v1/sessions', { method: 'POST' });
    const slow = await alice.json<Json>(`/v1/sessions/${session.id}/executions`, {
      method: 'POST',
      json: { code: 'import time\ntime.sleep(20)', timeoutMs: 20_000 },
    });
    expect(slow.status).toBe('timeout');
    expect(slow.durationMs).toBeLessThan(5_000);
    const large = await alice(`/v1/sessions/${session.id}/executions`, {
      method: 'POST',
      json: { code: `x = "${'a'.repeat(2000)}"` },
    });
    expect(large.status).toBe(413);
    expect(((await large.json()) as Json).error.code).toBe('code-too-large');
  });

  it('never logs a key', () => {
    const text = JSON.stringify(server.logs.lines);
    expect(text).not.toContain('alice-secret-0001');
    expect(text).not.toContain(BOB);
    expect(text).toContain('"owner":"alice"');
  });
});

describe('per-key limits', () => {
  let server: SandcellServer & { logs: LogCapture };
  beforeAll(async () => {
    server = await startScriptedServer(kernel, {
      apiKeys: ['carol-secret-0003', 'dave-secret-0004', 'erin-secret-0005'],
      limits: { maxSessions: 2, executionsPerMinute: 4 },
    });
  });
  afterAll(async () => {
    await server?.close();
  });

  it('refuses a session past the key’s limit with 429; another key is unaffected', async () => {
    const carol = client(server, 'carol-secret-0003');
    const first = await carol.json<Json>('/v1/sessions', { method: 'POST' });
    await carol.json<Json>('/v1/sessions', { method: 'POST' });
    const third = await carol('/v1/sessions', { method: 'POST' });
    expect(third.status).toBe(429);
    expect(((await third.json()) as Json).error.code).toBe('too-many-sessions');
    // An Azure identifier counts too.
    const azure = await fetch(
      `${server.url}/azure/code/execute?identifier=carol-three&api-version=2024-02-02-preview`,
      {
        method: 'POST',
        headers: { authorization: 'Bearer carol-secret-0003', 'content-type': 'application/json' },
        body: JSON.stringify({ properties: { code: '1' } }),
      },
    );
    expect(azure.status).toBe(429);
    expect((await client(server, 'dave-secret-0004')('/v1/sessions', { method: 'POST' })).status).toBe(201);
    await carol(`/v1/sessions/${first.id}`, { method: 'DELETE' });
    expect((await carol('/v1/sessions', { method: 'POST' })).status).toBe(201);
  });

  it('refuses executions past the per-minute limit with 429 and Retry-After', async () => {
    const dave = client(server, 'dave-secret-0004');
    const [session] = (await dave.json<Json>('/v1/sessions')).sessions;
    const statuses: number[] = [];
    let limited: Response | undefined;
    for (let index = 0; index < 5; index++) {
      const response = await dave(`/v1/sessions/${session.id}/executions`, {
        method: 'POST',
        json: { code: `${index}` },
      });
      statuses.push(response.status);
      if (response.status === 429) limited = response;
      else await response.body?.cancel();
    }
    expect(statuses).toEqual([200, 200, 200, 200, 429]);
    expect(Number(limited?.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(((await limited!.json()) as Json).error.code).toBe('rate-limited');
    // A streamed execution is refused with the status too, not inside a stream.
    const streamed = await dave(`/v1/sessions/${session.id}/executions?stream=ndjson`, {
      method: 'POST',
      json: { code: '1' },
    });
    expect(streamed.status).toBe(429);
    expect(streamed.headers.get('content-type')).toMatch(/^application\/json/);
    await streamed.body?.cancel();
    const carol = client(server, 'carol-secret-0003');
    const [carolSession] = (await carol.json<Json>('/v1/sessions')).sessions;
    expect(
      (await carol(`/v1/sessions/${carolSession.id}/executions`, { method: 'POST', json: { code: '1' } })).status,
    ).toBe(200);
  });
});

describe('idle sessions', () => {
  // A server of its own: on a busy machine, creating the other tests' sessions can take longer than this timeout.
  let server: SandcellServer & { logs: LogCapture };
  beforeAll(async () => {
    // Closed, not paused: what --on-idle close does (pausing is src/server/v1/snapshots.test.ts).
    server = await startScriptedServer(kernel, {
      apiKeys: ['erin-secret-0005'],
      idleTimeoutMs: 1_500,
      onIdle: 'close',
    });
  });
  afterAll(async () => {
    await server?.close();
  });

  it('closes sessions idle past the timeout; an Azure identifier then starts afresh', async () => {
    const erin = client(server, 'erin-secret-0005');
    const azure = async (code: string) => {
      const response = await fetch(
        `${server.url}/azure/code/execute?identifier=erin-idle&api-version=2024-02-02-preview`,
        {
          method: 'POST',
          headers: { authorization: 'Bearer erin-secret-0005', 'content-type': 'application/json' },
          body: JSON.stringify({ properties: { code } }),
        },
      );
      return ((await response.json()) as Json).properties;
    };
    await azure('kept = 1');
    const session = await erin.json<Json>('/v1/sessions', { method: 'POST' });
    const started = Date.now();
    // Used now and then, it stays open past the timeout.
    for (let index = 0; index < 4; index++) {
      await new Promise((resolve) => setTimeout(resolve, 500));
      expect((await erin(`/v1/sessions/${session.id}/files/touch.txt`, { method: 'PUT', body: 'x' })).status).toBe(201);
    }
    expect(Date.now() - started).toBeGreaterThan(1_500);
    expect((await erin(`/v1/sessions/${session.id}`)).status).toBe(200);
    await expect
      .poll(async () => (await erin(`/v1/sessions/${session.id}`)).status, { timeout: 10_000, interval: 250 })
      .toBe(404);
    expect((await azure('kept')).stderr).toContain("NameError: name 'kept' is not defined");
    const metrics = await (await erin('/metrics')).text();
    expect(metrics).toMatch(/^sandcell_sessions_closed_total\{reason="idle"\} [2-9]/m);
  }, 20_000);
});
