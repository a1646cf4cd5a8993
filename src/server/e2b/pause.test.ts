/**
 * E2B's pause, resume, lifecycle, snapshots and fork on the scripted backend, over raw HTTP: the
 * statuses and fields the SDK reads, traffic to a paused sandbox (409, or a resume with
 * autoResume), a sandbox the server paused while idle running on to its clients, keys kept apart,
 * and a restart on the same state directory. The real SDK on real sandboxes is in
 * test/e2b/e2b-pause.test.ts.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { startScriptedServer } from '../../../test/support/server.js';
import type { ScriptedRunContext, ScriptedStep } from '../../backends/scripted/index.js';
import type { SandcellServer } from '../index.js';

// biome-ignore lint/suspicious/noExplicitAny: response bodies are read loosely in tests
type Json = Record<string, any>;

const KEY = 'e2b_00112233445566778899aabbccddeeff';
const OTHER = 'e2b_ffeeddccbbaa99887766554433221100';

/** `name = value` binds, a bare name shows its value; anything else (the move to /home/user) does nothing. */
function toy({ code, state }: ScriptedRunContext): ScriptedStep[] {
  const assignment = /^(\w+) = (.*)$/.exec(code);
  if (assignment) {
    state.set(assignment[1] ?? '', assignment[2]);
    return [];
  }
  if (!/^\w+$/.test(code)) return [];
  if (!state.has(code)) return [{ type: 'error', name: 'NameError', value: `name '${code}' is not defined` }];
  return [{ type: 'result', data: { 'text/plain': String(state.get(code)) } }];
}

const root = mkdtempSync(path.join(os.tmpdir(), 'sandcell-e2b-pause-'));
const servers: SandcellServer[] = [];

async function start(options: { idleTimeoutMs?: number; stateDirectory?: string } = {}) {
  const stateDirectory = options.stateDirectory ?? mkdtempSync(path.join(root, 'state-'));
  const server = await startScriptedServer(toy, {
    apiKeys: [KEY, `other:${OTHER}`],
    poolSize: 0,
    ...options,
    stateDirectory,
  });
  servers.push(server);
  const control = (route: string, init: RequestInit & { json?: unknown; key?: string } = {}) =>
    fetch(`${server.url}/e2b${route}`, {
      ...init,
      headers: { 'x-api-key': init.key ?? KEY, 'content-type': 'application/json', ...init.headers },
      ...(init.json !== undefined ? { body: JSON.stringify(init.json) } : {}),
    });
  const json = async (route: string, init: RequestInit & { json?: unknown; key?: string } = {}, status = 200) => {
    const response = await control(route, init);
    const text = await response.text();
    expect(response.status, `${init.method ?? 'GET'} ${route}: ${text}`).toBe(status);
    return text === '' ? {} : (JSON.parse(text) as Json);
  };
  return { server, control, json };
}

interface Created {
  sandboxID: string;
  envdAccessToken: string;
  trafficAccessToken: string;
}

/** Runs code through the code interpreter: the response, and its result's text. */
async function execute(server: SandcellServer, sandbox: Created, code: string) {
  const response = await fetch(`${server.url}/e2b/execute`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'e2b-sandbox-id': sandbox.sandboxID,
      'e2b-sandbox-port': '49999',
      'e2b-traffic-access-token': sandbox.trafficAccessToken,
      'x-access-token': sandbox.envdAccessToken,
    },
    body: JSON.stringify({ code }),
  });
  if (response.status !== 200) return { status: response.status, body: (await response.json()) as Json };
  const lines = (await response.text())
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as Json);
  return { status: 200, text: lines.find((line) => line.type === 'result')?.text as string | undefined, lines };
}

afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.close()));
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe('E2B pause and resume (scripted)', () => {
  it('pauses (204, then 409), shows it paused, answers its traffic 409, and connect resumes it (201) with its state', async () => {
    const { server, json, control } = await start();
    const sandbox = (await json('/v2/sandboxes', { method: 'POST', json: { templateID: 'base' } }, 201)) as Created;
    expect((await execute(server, sandbox, 'x = 41')).status).toBe(200);
    expect((await control(`/sandboxes/${sandbox.sandboxID}/pause`, { method: 'POST', json: {} })).status).toBe(204);
    const again = await control(`/sandboxes/${sandbox.sandboxID}/pause`, { method: 'POST' });
    expect(again.status).toBe(409);

    const info = await json(`/sandboxes/${sandbox.sandboxID}`);
    expect(info).toMatchObject({
      sandboxID: sandbox.sandboxID,
      state: 'paused',
      lifecycle: { onTimeout: 'kill', autoResume: false },
    });
    expect(Date.parse(info.endAt)).toBeLessThanOrEqual(Date.now());
    expect((await json('/v2/sandboxes')).map((each: Json) => [each.sandboxID, each.state])).toEqual([
      [sandbox.sandboxID, 'paused'],
    ]);
    expect(await json('/v2/sandboxes?state=running')).toEqual([]);
    expect((await json('/v2/sandboxes?state=paused')).map((each: Json) => each.sandboxID)).toEqual([sandbox.sandboxID]);

    // Its traffic: E2B's proxy answer, in plain HTTP and in Connect's shape.
    const refused = await execute(server, sandbox, 'x');
    expect(refused).toMatchObject({
      status: 409,
      body: { code: 409, sandboxId: sandbox.sandboxID, canAutoResume: false },
    });
    const stat = await fetch(`${server.url}/e2b/filesystem.Filesystem/Stat`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'e2b-sandbox-id': sandbox.sandboxID,
        'e2b-sandbox-port': '49983',
        'x-access-token': sandbox.envdAccessToken,
      },
      body: JSON.stringify({ path: '/home/user' }),
    });
    expect(await stat.json()).toMatchObject({ code: 'failed_precondition' });
    // A wrong token is refused before anything about the sandbox is said.
    expect((await execute(server, { ...sandbox, trafficAccessToken: '0'.repeat(64) }, 'x')).status).toBe(401);
    expect(
      (await json(`/sandboxes/${sandbox.sandboxID}/timeout`, { method: 'POST', json: { timeout: 60 } }, 404)).message,
    ).toContain('paused');
    expect(
      (await json(`/sandboxes/${sandbox.sandboxID}/snapshots`, { method: 'POST', json: {} }, 404)).message,
    ).toContain('paused');
    expect((await control(`/sandboxes/${sandbox.sandboxID}/fork`, { method: 'POST', json: {} })).status).toBe(409);
    expect(
      (await control(`/v2/sandboxes/${sandbox.sandboxID}/connect`, { method: 'POST', json: { memory: false } })).status,
    ).toBe(400);

    const resumed = await json(
      `/v2/sandboxes/${sandbox.sandboxID}/connect`,
      { method: 'POST', json: { timeout: 120 } },
      201,
    );
    expect(resumed).toMatchObject({
      sandboxID: sandbox.sandboxID,
      envdAccessToken: sandbox.envdAccessToken,
      trafficAccessToken: sandbox.trafficAccessToken,
    });
    expect(await execute(server, sandbox, 'x')).toMatchObject({ status: 200, text: '41' });
    const running = await json(`/sandboxes/${sandbox.sandboxID}`);
    expect(running.state).toBe('running');
    expect(Date.parse(running.endAt) - Date.parse(running.startedAt)).toBe(120_000);
    expect((await control(`/v2/sandboxes/${sandbox.sandboxID}/connect`, { method: 'POST', json: {} })).status).toBe(
      200,
    );
    expect((await control(`/sandboxes/${sandbox.sandboxID}/resume`, { method: 'POST', json: {} })).status).toBe(409);
  });

  it('keeps keys apart: another key’s paused sandbox is not found everywhere', async () => {
    const { json, control } = await start();
    const sandbox = (await json('/v2/sandboxes', { method: 'POST', json: {} }, 201)) as Created;
    await json(`/sandboxes/${sandbox.sandboxID}/pause`, { method: 'POST' }, 204);
    const id = sandbox.sandboxID;
    for (const [method, route] of [
      ['GET', `/sandboxes/${id}`],
      ['POST', `/sandboxes/${id}/pause`],
      ['POST', `/v2/sandboxes/${id}/connect`],
      ['POST', `/sandboxes/${id}/resume`],
      ['POST', `/sandboxes/${id}/timeout`],
      ['POST', `/sandboxes/${id}/snapshots`],
      ['POST', `/sandboxes/${id}/fork`],
      ['GET', `/sandboxes/${id}/metrics`],
      ['DELETE', `/sandboxes/${id}`],
    ] as const) {
      const response = await control(route, {
        method,
        key: OTHER,
        ...(method === 'GET' ? {} : { json: { timeout: 30 } }),
      });
      expect(response.status, `${method} ${route}`).toBe(404);
    }
    expect(await json('/v2/sandboxes', { key: OTHER })).toEqual([]);
    expect((await json(`/sandboxes/${id}`)).state).toBe('paused');
  });

  it('kills a paused sandbox: its paused state is deleted', async () => {
    const { server, json, control } = await start();
    const sandbox = (await json('/v2/sandboxes', { method: 'POST', json: {} }, 201)) as Created;
    await json(`/sandboxes/${sandbox.sandboxID}/pause`, { method: 'POST' }, 204);
    expect((await control(`/sandboxes/${sandbox.sandboxID}`, { method: 'DELETE' })).status).toBe(204);
    expect((await control(`/sandboxes/${sandbox.sandboxID}`)).status).toBe(404);
    expect((await control(`/sandboxes/${sandbox.sandboxID}`, { method: 'DELETE' })).status).toBe(404);
    expect((await execute(server, sandbox, 'x')).status).toBe(502);
    expect((await client(server).json('/v1/sessions')).sessions).toEqual([]);
  });

  it('checks lifecycles: autoResume needs onTimeout pause, and files-only pauses are refused', async () => {
    const { control } = await start();
    const create = (json: Json) => control('/v2/sandboxes', { method: 'POST', json });
    expect((await create({ autoResume: { enabled: true } })).status).toBe(400);
    expect((await create({ autoPause: true, autoPauseMemory: false })).status).toBe(400);
    expect(
      (
        await create({
          metadata: { big: 'x'.repeat(2048) },
          envVars: { BIG: 'y'.repeat(32_000), MORE: 'z'.repeat(30_000) },
        })
      ).status,
    ).toBe(400);
    const sandbox = (await (await create({})).json()) as Created;
    expect(
      (await control(`/sandboxes/${sandbox.sandboxID}/pause`, { method: 'POST', json: { memory: false } })).status,
    ).toBe(400);
  });

  it('pauses at the deadline with onTimeout pause; traffic resumes it with autoResume (for at least a minute)', async () => {
    const { server, json } = await start();
    const lifecycle = { autoPause: true, autoResume: { enabled: true }, timeout: 1 };
    const sandbox = (await json('/v2/sandboxes', { method: 'POST', json: lifecycle }, 201)) as Created;
    const manual = (await json(
      '/v2/sandboxes',
      { method: 'POST', json: { autoPause: true, timeout: 1 } },
      201,
    )) as Created;
    expect((await json(`/sandboxes/${sandbox.sandboxID}`)).lifecycle).toEqual({ onTimeout: 'pause', autoResume: true });
    await execute(server, sandbox, 'x = kept');
    await execute(server, manual, 'y = kept too');
    await expect
      .poll(async () => (await json(`/sandboxes/${sandbox.sandboxID}`)).state, { timeout: 10_000 })
      .toBe('paused');
    await expect
      .poll(async () => (await json(`/sandboxes/${manual.sandboxID}`)).state, { timeout: 10_000 })
      .toBe('paused');
    // Without autoResume its traffic is told; with it, its traffic resumes it.
    expect((await execute(server, manual, 'y')).status).toBe(409);
    expect(await execute(server, sandbox, 'x')).toMatchObject({ status: 200, text: 'kept' });
    const info = await json(`/sandboxes/${sandbox.sandboxID}`);
    expect(info.state).toBe('running');
    expect(Date.parse(info.endAt)).toBeGreaterThan(Date.now() + 50_000);
    await json(`/v2/sandboxes/${manual.sandboxID}/connect`, { method: 'POST', json: { timeout: 60 } }, 201);
    expect(await execute(server, manual, 'y')).toMatchObject({ status: 200, text: 'kept too' });
  });

  it('runs on, to its clients, while the server pauses it for idling; its traffic resumes it', async () => {
    const { server, json } = await start({ idleTimeoutMs: 300 });
    const sandbox = (await json('/v2/sandboxes', { method: 'POST', json: { timeout: 600 } }, 201)) as Created;
    await execute(server, sandbox, 'x = idled');
    const paused = async () => (await client(server).json('/v1/sessions')).sessions[0]?.state;
    await expect.poll(paused, { timeout: 10_000 }).toBe('paused');
    expect((await json(`/sandboxes/${sandbox.sandboxID}`)).state).toBe('running');
    expect((await json('/v2/sandboxes?state=running')).map((each: Json) => each.sandboxID)).toEqual([
      sandbox.sandboxID,
    ]);
    expect(await execute(server, sandbox, 'x')).toMatchObject({ status: 200, text: 'idled' });
    expect(await paused()).toBe('running');
  });

  it('after a restart: a paused sandbox answers 409 and connect resumes it; one paused by the shutdown runs on', async () => {
    const first = await start();
    const paused = (await first.json(
      '/v2/sandboxes',
      { method: 'POST', json: { metadata: { who: 'paused' } } },
      201,
    )) as Created;
    const running = (await first.json('/v2/sandboxes', { method: 'POST', json: {} }, 201)) as Created;
    await execute(first.server, paused, 'x = 41');
    await execute(first.server, running, 'y = 7');
    await first.json(`/sandboxes/${paused.sandboxID}/pause`, { method: 'POST' }, 204);
    await first.server.close();

    const second = await start({ stateDirectory: first.server.options.stateDirectory as string });
    // Traffic first, before any call of the control plane: the table fills from the records.
    expect((await execute(second.server, paused, 'x')).status).toBe(409);
    expect(await execute(second.server, running, 'y')).toMatchObject({ status: 200, text: '7' });
    const listed = await second.json('/v2/sandboxes?order=asc');
    expect(listed.map((each: Json) => [each.sandboxID, each.state, each.metadata])).toEqual([
      [paused.sandboxID, 'paused', { who: 'paused' }],
      [running.sandboxID, 'running', {}],
    ]);
    expect((await second.control(`/sandboxes/${paused.sandboxID}`, { key: OTHER })).status).toBe(404);
    expect(
      (await second.control(`/v2/sandboxes/${paused.sandboxID}/connect`, { method: 'POST', key: OTHER })).status,
    ).toBe(404);
    await second.json(`/v2/sandboxes/${paused.sandboxID}/connect`, { method: 'POST', json: {} }, 201);
    expect(await execute(second.server, paused, 'x')).toMatchObject({ status: 200, text: '41' });
  });
});

describe('E2B snapshots and fork (scripted)', () => {
  it('takes, lists (by sandbox, a page at a time), starts from, and deletes snapshots', async () => {
    const { server, json, control } = await start();
    const sandbox = (await json('/v2/sandboxes', { method: 'POST', json: {} }, 201)) as Created;
    await execute(server, sandbox, 'x = first');
    const first = await json(`/sandboxes/${sandbox.sandboxID}/snapshots`, { method: 'POST', json: {} }, 201);
    expect(first).toEqual({ snapshotID: expect.stringMatching(/^[0-9a-f]{32}$/), names: [] });
    await execute(server, sandbox, 'x = second');
    const second = await json(`/sandboxes/${sandbox.sandboxID}/snapshots`, { method: 'POST', json: {} }, 201);
    // A name that is not one (upper case, a default template's) is refused; named snapshots: e2b-named-snapshots.test.ts.
    for (const name of ['Mine', 'base', 'a/b']) {
      expect(
        (await control(`/sandboxes/${sandbox.sandboxID}/snapshots`, { method: 'POST', json: { name } })).status,
      ).toBe(400);
    }
    // The sandbox runs on.
    expect(await execute(server, sandbox, 'x')).toMatchObject({ text: 'second' });
    // Another sandbox's pause is not one of the key's snapshots.
    const other = (await json('/v2/sandboxes', { method: 'POST', json: {} }, 201)) as Created;
    await json(`/sandboxes/${other.sandboxID}/pause`, { method: 'POST' }, 204);

    const page = await control(`/snapshots?sandboxID=${sandbox.sandboxID}&limit=1`);
    const token = page.headers.get('x-next-token');
    expect(token).toBeTruthy();
    const next = await control(`/snapshots?sandboxID=${sandbox.sandboxID}&limit=1&nextToken=${token}`);
    expect(next.headers.get('x-next-token')).toBeNull();
    const ids = [...((await page.json()) as Json[]), ...((await next.json()) as Json[])].map((each) => each.snapshotID);
    expect(ids.sort()).toEqual([first.snapshotID, second.snapshotID].sort());
    expect(await json(`/snapshots?sandboxID=${other.sandboxID}`)).toEqual([]);
    expect(await json('/snapshots', { key: OTHER })).toEqual([]);
    expect((await json(`/snapshots?name=${first.snapshotID}`)).map((each: Json) => each.snapshotID)).toEqual([
      first.snapshotID,
    ]);

    // A sandbox from a snapshot: its templateID is the snapshot's id (E2B's `Sandbox.create(snapshotId)`).
    const started = (await json(
      '/v2/sandboxes',
      { method: 'POST', json: { templateID: first.snapshotID } },
      201,
    )) as Created;
    expect(await execute(server, started, 'x')).toMatchObject({ text: 'first' });
    expect((await json(`/sandboxes/${started.sandboxID}`)).templateID).toBe(first.snapshotID);
    expect(
      (await control('/v2/sandboxes', { method: 'POST', key: OTHER, json: { templateID: first.snapshotID } })).status,
    ).not.toBe(201);

    expect((await control(`/templates/${first.snapshotID}`, { method: 'DELETE', key: OTHER })).status).toBe(404);
    expect((await control(`/templates/${first.snapshotID}`, { method: 'DELETE' })).status).toBe(204);
    expect((await control(`/templates/${first.snapshotID}`, { method: 'DELETE' })).status).toBe(404);
    expect((await control('/templates/base', { method: 'DELETE' })).status).toBe(404);
    expect((await json('/snapshots')).map((each: Json) => each.snapshotID)).toEqual([second.snapshotID]);
  });

  it('forks a running sandbox into new ones with their own ids and tokens, which diverge', async () => {
    const { server, json } = await start();
    const sandbox = (await json(
      '/v2/sandboxes',
      { method: 'POST', json: { metadata: { role: 'source' } } },
      201,
    )) as Created;
    await execute(server, sandbox, 'x = shared');
    const results = await json(
      `/sandboxes/${sandbox.sandboxID}/fork`,
      { method: 'POST', json: { count: 2, timeout: 120 } },
      201,
    );
    expect(results).toHaveLength(2);
    const forks = results.map((result: Json) => result.sandbox as Created);
    for (const fork of forks) {
      expect(fork.sandboxID).not.toBe(sandbox.sandboxID);
      expect(fork.envdAccessToken).not.toBe(sandbox.envdAccessToken);
      expect(await execute(server, fork, 'x')).toMatchObject({ text: 'shared' });
      const info = await json(`/sandboxes/${fork.sandboxID}`);
      expect(info.metadata).toEqual({ role: 'source' });
      expect(Date.parse(info.endAt) - Date.parse(info.startedAt)).toBe(120_000);
    }
    await execute(server, forks[0], 'x = forked');
    expect(await execute(server, forks[0], 'x')).toMatchObject({ text: 'forked' });
    expect(await execute(server, sandbox, 'x')).toMatchObject({ text: 'shared' });
    // One sandbox's tokens open no other.
    expect((await execute(server, { ...forks[1], trafficAccessToken: sandbox.trafficAccessToken }, 'x')).status).toBe(
      401,
    );
  });
});

function client(server: SandcellServer) {
  return {
    async json(route: string): Promise<Json> {
      const response = await fetch(`${server.url}${route}`, { headers: { authorization: `Bearer ${KEY}` } });
      return (await response.json()) as Json;
    },
  };
}
