/**
 * The server's own limits on the scripted backend, over real HTTP on
 * 127.0.0.1: sessions per key, the server's capacity, the queue of one
 * session, and a kernel that dies mid-run. test/server-*.test.ts run the
 * same front doors on real sandboxes.
 */
import { Writable } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { createScriptedBackend, type ScriptedRunContext, type ScriptedStep } from '../../backends/scripted/index.js';
import { createServer, type SandcellServer } from '../server.js';
import type { ServerOptions } from './options.js';

const KEY = 'scripted-test-key-0001';
const OTHER_KEY = 'scripted-test-key-0002';

let server: SandcellServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

/** Waits (without a timer of its own) until /mnt/data/go exists, then prints "released". */
async function waitForGo({ code, files }: ScriptedRunContext): Promise<ScriptedStep[]> {
  if (code !== 'wait for go') return [{ type: 'stdout', text: `${code}\n` }];
  while (!files.list().some((entry) => entry.path === 'go')) await new Promise((resolve) => setTimeout(resolve, 5));
  return [{ type: 'stdout', text: 'released\n' }];
}

async function start(options: ServerOptions, execute = waitForGo) {
  const backend = createScriptedBackend({ execute });
  server = await createServer({
    host: '127.0.0.1',
    port: 0,
    poolSize: 1,
    preloadModules: [],
    webRoot: false,
    logDestination: new Writable({ write: (_chunk, _encoding, callback) => callback() }),
    apiKeys: [KEY, OTHER_KEY],
    ...options,
    backend,
  });
  const url = server.url;
  const call = (path: string, init: { method?: string; json?: unknown; body?: string; key?: string } = {}) =>
    fetch(`${url}${path}`, {
      method: init.method ?? (init.json === undefined ? 'GET' : 'POST'),
      headers: {
        authorization: `Bearer ${init.key ?? KEY}`,
        ...(init.json !== undefined ? { 'content-type': 'application/json' } : {}),
      },
      body: init.json !== undefined ? JSON.stringify(init.json) : init.body,
    });
  return { backend, call };
}

describe('server limits on the scripted backend', () => {
  it('refuses a key its next session past `limits.maxSessions` with 429; deleting one frees the slot', async () => {
    const { call } = await start({ limits: { maxSessions: 1 } });
    const first = await call('/v1/sessions', { method: 'POST' });
    expect(first.status).toBe(201);
    const refused = await call('/v1/sessions', { method: 'POST' });
    expect(refused.status).toBe(429);
    expect(((await refused.json()) as { error: { code: string } }).error.code).toBe('too-many-sessions');
    // Another key is not held back by this one's sessions.
    expect((await call('/v1/sessions', { method: 'POST', key: OTHER_KEY })).status).toBe(201);
    const { id } = (await first.json()) as { id: string };
    expect((await call(`/v1/sessions/${id}`, { method: 'DELETE' })).status).toBe(204);
    expect((await call('/v1/sessions', { method: 'POST' })).status).toBe(201);
  });

  it('answers 503 with Retry-After when the server holds `maxSessions`', async () => {
    const { call } = await start({ maxSessions: 1 });
    expect((await call('/v1/sessions', { method: 'POST' })).status).toBe(201);
    const refused = await call('/v1/sessions', { method: 'POST', key: OTHER_KEY });
    expect(refused.status).toBe(503);
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(((await refused.json()) as { error: { code: string } }).error.code).toBe('server-at-capacity');
  });

  it('queues executions in a session up to the limit, refuses the next with 429, and loses none it accepted', async () => {
    const { call } = await start({ limits: { maxQueuedExecutions: 1 } });
    const { id } = (await (await call('/v1/sessions', { method: 'POST' })).json()) as { id: string };
    const path = `/v1/sessions/${id}/executions`;
    const running = async () =>
      ((await (await call('/healthz')).json()) as { sessions: { running: number } }).sessions.running;
    const blocker = call(path, { json: { code: 'wait for go' } });
    await expect.poll(running).toBe(1);
    const queued = call(path, { json: { code: 'second' } });
    await expect.poll(running).toBe(2);
    const refused = await call(path, { json: { code: 'one too many' } });
    expect(refused.status).toBe(429);
    expect(((await refused.json()) as { error: { code: string } }).error.code).toBe('queue-full');

    expect((await call(`/v1/sessions/${id}/files/go`, { method: 'PUT', body: 'go' })).status).toBeLessThan(300);
    expect(await (await blocker).json()).toMatchObject({ status: 'ok', stdout: 'released\n' });
    expect(await (await queued).json()).toMatchObject({ status: 'ok', stdout: 'second\n' });
  });

  it('reports a kernel that died mid-run as KernelDied, counts it, and serves the next run', async () => {
    const { call } = await start({}, async ({ code }) =>
      code === 'crash' ? [{ type: 'exit', signal: 'SIGKILL' }] : [{ type: 'stdout', text: 'fine\n' }],
    );
    const { id } = (await (await call('/v1/sessions', { method: 'POST' })).json()) as { id: string };
    const path = `/v1/sessions/${id}/executions`;
    const crashed = (await (await call(path, { json: { code: 'crash' } })).json()) as Record<string, unknown>;
    expect(crashed).toMatchObject({ status: 'error', stateLost: true, error: { name: 'KernelDied' } });
    expect(await (await call(path, { json: { code: 'next' } })).json()).toMatchObject({
      status: 'ok',
      stdout: 'fine\n',
    });
    const metrics = await (await call('/metrics')).text();
    expect(metrics).toMatch(/sandcell_sandbox_failures_total\{kind="kernel-died"\} 1/);
  });
});
