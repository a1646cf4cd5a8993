/**
 * Pause, resume, snapshots, restore and fork under /v1, over real HTTP on
 * 127.0.0.1 with kernels answering from a script: the server's own logic
 * (records, auto-resume, idle pauses, a restart that resumes, keys kept
 * apart). What real kernels keep is in test/snapshots.test.ts.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { namesKernel } from '../../../test/support/kernel-script.js';
import { type Client, client, type LogCapture, startScriptedServer } from '../../../test/support/server.js';
import type { SandcellServer } from '../index.js';

// biome-ignore lint/suspicious/noExplicitAny: response bodies are read loosely in tests
type Json = Record<string, any>;

const KEYS = ['alice-key-1234', 'bob-key-123456'];
const root = mkdtempSync(path.join(os.tmpdir(), 'sandcell-v1-snapshots-'));
const servers: SandcellServer[] = [];

/** A server with its own state directory, or `stateDirectory`'s (a restart). */
async function start(
  options: {
    idleTimeoutMs?: number;
    onIdle?: 'pause' | 'close';
    stateDirectory?: string | false;
    limits?: { snapshotBytes: number };
  } = {},
) {
  const stateDirectory = options.stateDirectory ?? mkdtempSync(path.join(root, 'state-'));
  const server = await startScriptedServer(namesKernel, { apiKeys: KEYS, poolSize: 0, ...options, stateDirectory });
  servers.push(server);
  return { server, alice: client(server, KEYS[0]), bob: client(server, KEYS[1]) };
}

async function run(api: Client, id: string, code: string): Promise<Json> {
  return api.json<Json>(`/v1/sessions/${id}/executions`, { method: 'POST', json: { code } });
}

const shown = (execution: Json) => execution.results[0]?.data['text/plain'];

afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.close()));
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe('/v1 snapshots (scripted backend)', () => {
  it('pauses a session on request; any request to it resumes it with its state, saying what came back', async () => {
    const { alice } = await start();
    const { id } = await alice.json<Json>('/v1/sessions', { method: 'POST' });
    await run(alice, id, 'x = 41');
    const paused = await alice.json<Json>(`/v1/sessions/${id}/pause`, { method: 'POST' });
    expect(paused).toMatchObject({ id, state: 'paused', pauseReason: 'requested', snapshotId: expect.any(String) });
    expect(await alice.json<Json>(`/v1/sessions/${id}`)).toMatchObject({ id, state: 'paused' });
    const listed = await alice.json<Json>('/v1/sessions');
    expect(listed.sessions).toEqual([expect.objectContaining({ id, state: 'paused' })]);
    // An execution resumes it.
    expect(shown(await run(alice, id, 'x'))).toBe('41');
    const live = await alice.json<Json>(`/v1/sessions/${id}`);
    expect(live).toMatchObject({ id, state: 'running' });
    expect(live.restored.contexts).toEqual([{ id: 'python', language: 'python', restored: ['x'], skipped: [] }]);
    // The pause's snapshot went with the resume.
    expect((await alice.json<Json>('/v1/snapshots')).snapshots).toEqual([]);
  });

  it('pauses and resumes without a state directory too (a store of its own, gone with the process)', async () => {
    const { alice } = await start({ stateDirectory: false });
    const { id } = await alice.json<Json>('/v1/sessions', { method: 'POST' });
    await run(alice, id, 'x = in-memory');
    expect(await alice.json<Json>(`/v1/sessions/${id}/pause`, { method: 'POST' })).toMatchObject({ state: 'paused' });
    expect(shown(await run(alice, id, 'x'))).toBe('in-memory');
  });

  it('keeps keys apart: another key cannot see, resume, pause or delete a paused session', async () => {
    const { alice, bob } = await start();
    const { id } = await alice.json<Json>('/v1/sessions', { method: 'POST' });
    await run(alice, id, 'x = mine');
    await alice.json(`/v1/sessions/${id}/pause`, { method: 'POST' });
    for (const [method, suffix] of [
      ['GET', ''],
      ['DELETE', ''],
      ['POST', '/resume'],
      ['POST', '/pause'],
      ['POST', '/snapshots'],
      ['POST', '/fork'],
    ] as const) {
      const response = await bob(`/v1/sessions/${id}${suffix}`, { method });
      expect(response.status, `${method} ${suffix}`).toBe(404);
    }
    expect((await bob.json<Json>('/v1/sessions')).sessions).toEqual([]);
    expect(shown(await run(alice, id, 'x'))).toBe('mine');
  });

  it('takes snapshots of a running session, restores it, forks it, and lists and deletes snapshots', async () => {
    const { alice, bob } = await start();
    const { id } = await alice.json<Json>('/v1/sessions', { method: 'POST' });
    await run(alice, id, 'x = checkpoint');
    const snapshot = await alice.json<Json>(`/v1/sessions/${id}/snapshots`, { method: 'POST' });
    expect(snapshot).toMatchObject({ sessionId: id, contexts: [expect.objectContaining({ saved: ['x'] })] });
    await run(alice, id, 'x = changed');
    const report = await alice.json<Json>(`/v1/sessions/${id}/restore`, {
      method: 'POST',
      json: { snapshotId: snapshot.id },
    });
    expect(report.contexts[0].restored).toEqual(['x']);
    expect(shown(await run(alice, id, 'x'))).toBe('checkpoint');
    // Another key's restore of it is refused as not found.
    const { id: bobs } = await bob.json<Json>('/v1/sessions', { method: 'POST' });
    const refused = await bob(`/v1/sessions/${bobs}/restore`, { method: 'POST', json: { snapshotId: snapshot.id } });
    expect(refused.status).toBe(404);
    const forked = await alice.json<Json>(`/v1/sessions/${id}/fork`, { method: 'POST' });
    expect(forked.id).not.toBe(id);
    await run(alice, forked.id, 'x = forked');
    expect(shown(await run(alice, id, 'x'))).toBe('checkpoint');
    expect(shown(await run(alice, forked.id, 'x'))).toBe('forked');
    expect((await alice.json<Json>('/v1/snapshots')).snapshots.map((each: Json) => each.id)).toEqual([snapshot.id]);
    expect((await bob(`/v1/snapshots/${snapshot.id}`, { method: 'DELETE' })).status).toBe(404);
    expect((await alice(`/v1/snapshots/${snapshot.id}`, { method: 'DELETE' })).status).toBe(204);
    expect((await alice.json<Json>('/v1/snapshots')).snapshots).toEqual([]);
    expect((await alice(`/v1/snapshots/${'0'.repeat(32)}`, { method: 'DELETE' })).status).toBe(404);
    expect((await alice(`/v1/snapshots/not-an-id`, { method: 'DELETE' })).status).toBe(400);
  });

  it('pauses idle sessions (--on-idle pause), and closes them with --on-idle close', async () => {
    const { alice } = await start({ idleTimeoutMs: 200 });
    const { id } = await alice.json<Json>('/v1/sessions', { method: 'POST' });
    await run(alice, id, 'x = idled');
    await expect
      .poll(async () => (await alice.json<Json>(`/v1/sessions/${id}`)).state, { timeout: 5_000 })
      .toBe('paused');
    expect((await alice.json<Json>(`/v1/sessions/${id}`)).pauseReason).toBe('idle');
    expect(shown(await run(alice, id, 'x'))).toBe('idled');

    const closing = await start({ idleTimeoutMs: 200, onIdle: 'close' });
    const { id: closed } = await closing.alice.json<Json>('/v1/sessions', { method: 'POST' });
    await expect.poll(async () => (await closing.alice(`/v1/sessions/${closed}`)).status, { timeout: 5_000 }).toBe(404);
  });

  it('pauses every live session when the server stops, and a new server resumes each at its first request', async () => {
    const first = await start();
    const { id } = await first.alice.json<Json>('/v1/sessions', { method: 'POST' });
    await run(first.alice, id, 'x = survived');
    await first.server.close();
    const logs = (first.server as unknown as { logs: LogCapture }).logs.lines;
    expect(logs).toContainEqual(expect.objectContaining({ msg: 'session paused', session: id, reason: 'shutdown' }));
    expect(logs).toContainEqual(expect.objectContaining({ msg: 'every sandbox closed', paused: 1, lost: 0 }));
    const second = await start({ stateDirectory: first.server.options.stateDirectory as string });
    expect(await second.alice.json<Json>(`/v1/sessions/${id}`)).toMatchObject({
      state: 'paused',
      pauseReason: 'shutdown',
    });
    expect(shown(await run(second.alice, id, 'x'))).toBe('survived');
    expect((await second.bob(`/v1/sessions/${id}/executions`, { method: 'POST', json: { code: 'x' } })).status).toBe(
      404,
    );
  });

  it('resumes a named session (an Azure identifier) by its name, after an idle pause and after a restart', async () => {
    const first = await start({ idleTimeoutMs: 200 });
    const azure = (server: SandcellServer, code: string) =>
      client(server, KEYS[0]).json<Json>('/azure/code/execute?identifier=notebook-7&api-version=2024-02-02-preview', {
        method: 'POST',
        json: { properties: { code } },
      });
    await azure(first.server, 'x = named');
    const [listed] = (await first.alice.json<Json>('/v1/sessions')).sessions;
    expect(listed).toMatchObject({ source: 'azure', name: 'notebook-7' });
    await expect
      .poll(async () => (await first.alice.json<Json>(`/v1/sessions/${listed.id}`)).state, { timeout: 5_000 })
      .toBe('paused');
    expect((await azure(first.server, 'x')).properties.result).toBe('named');
    await first.server.close();
    const second = await start({ stateDirectory: first.server.options.stateDirectory as string });
    expect((await azure(second.server, 'x')).properties.result).toBe('named');
    // Another key's identifier of the same name is its own.
    const bobs = await client(second.server, KEYS[1]).json<Json>(
      '/azure/code/execute?identifier=notebook-7&api-version=2024-02-02-preview',
      { method: 'POST', json: { properties: { code: 'x' } } },
    );
    expect(bobs.properties.stderr).toContain("name 'x' is not defined");
  });

  it('deletes a paused session with its snapshot', async () => {
    const { alice } = await start();
    const { id } = await alice.json<Json>('/v1/sessions', { method: 'POST' });
    const paused = await alice.json<Json>(`/v1/sessions/${id}/pause`, { method: 'POST' });
    const refused = await alice(`/v1/snapshots/${paused.snapshotId}`, { method: 'DELETE' });
    expect(refused.status).toBe(400);
    expect((await alice(`/v1/sessions/${id}`, { method: 'DELETE' })).status).toBe(204);
    expect((await alice(`/v1/sessions/${id}`)).status).toBe(404);
    expect((await alice.json<Json>('/v1/snapshots')).snapshots).toEqual([]);
  });

  it("refuses a snapshot or pause past the key's snapshot quota (507), keeping the session; an idle pause past it ends the session and says why", async () => {
    const MiB = 1024 * 1024;
    const { alice, bob } = await start({ idleTimeoutMs: 60_000, limits: { snapshotBytes: MiB } });
    const { id } = await alice.json<Json>('/v1/sessions', { method: 'POST' });
    // 600 KiB of files: one snapshot fits the 1 MiB, a second does not.
    const uploaded = await alice(`/v1/sessions/${id}/files/data.bin`, {
      method: 'PUT',
      body: Buffer.alloc(600 * 1024),
    });
    expect(uploaded.status).toBe(201);
    await run(alice, id, 'x = kept');
    const first = await alice.json<Json>(`/v1/sessions/${id}/snapshots`, { method: 'POST' });
    const refused = await alice(`/v1/sessions/${id}/snapshots`, { method: 'POST' });
    expect(refused.status).toBe(507);
    const body = (await refused.json()) as Json;
    expect(body.error.code).toBe('snapshot-quota-exceeded');
    expect(body.error.message).toMatch(/The key's snapshots hold .* of the 1 MiB they may; this one would pass it/);
    expect(body.error.message).toContain('DELETE /v1/snapshots/{id}');
    // Nothing of the refused one was kept, and the session runs on.
    expect((await alice.json<Json>('/v1/snapshots')).snapshots.map((each: Json) => each.id)).toEqual([first.id]);
    expect((await alice(`/v1/sessions/${id}/pause`, { method: 'POST' })).status).toBe(507);
    expect(await alice.json<Json>(`/v1/sessions/${id}`)).toMatchObject({ state: 'running' });
    expect(shown(await run(alice, id, 'x'))).toBe('kept');
    // The quota is the key's: another key's snapshot is not counted against it.
    const { id: bobs } = await bob.json<Json>('/v1/sessions', { method: 'POST' });
    expect((await bob(`/v1/sessions/${bobs}/snapshots`, { method: 'POST' })).status).toBe(201);
    // Deleting a snapshot makes room.
    expect((await alice(`/v1/snapshots/${first.id}`, { method: 'DELETE' })).status).toBe(204);
    expect((await alice.json<Json>(`/v1/sessions/${id}/pause`, { method: 'POST' })).state).toBe('paused');
    expect(shown(await run(alice, id, 'x'))).toBe('kept');

    // Idle, over the quota: the session cannot be kept, and its next request says so.
    const idle = await start({ idleTimeoutMs: 300, limits: { snapshotBytes: MiB } });
    const { id: full } = await idle.alice.json<Json>('/v1/sessions', { method: 'POST' });
    await idle.alice(`/v1/sessions/${full}/files/data.bin`, { method: 'PUT', body: Buffer.alloc(2 * MiB) });
    await expect
      .poll(async () => (await idle.alice.json<Json>(`/v1/sessions/${full}`)).state, { timeout: 5_000 })
      .toBe('lost');
    const lost = (await (
      await idle.alice(`/v1/sessions/${full}/executions`, { method: 'POST', json: { code: 'x' } })
    ).json()) as Json;
    expect(lost.error.code).toBe('session-lost');
    expect(lost.error.message).toMatch(/its pause \(idle\) failed: The key's snapshots hold 0 B of the 1 MiB/);
  });

  it('says once that a named session (an Azure identifier) was lost, then gives the name a new session', async () => {
    const MiB = 1024 * 1024;
    const { server, alice } = await start({ idleTimeoutMs: 300, limits: { snapshotBytes: MiB } });
    const azure = (code: string) =>
      client(server, KEYS[0])('/azure/code/execute?identifier=big-one&api-version=2024-02-02-preview', {
        method: 'POST',
        json: { properties: { code } },
      });
    expect((await azure('x = named')).status).toBe(200);
    const [listed] = (await alice.json<Json>('/v1/sessions')).sessions;
    // More than the key's snapshots may hold: its idle pause cannot keep it.
    await alice(`/v1/sessions/${listed.id}/files/data.bin`, { method: 'PUT', body: Buffer.alloc(2 * MiB) });
    await expect
      .poll(async () => (await alice.json<Json>(`/v1/sessions/${listed.id}`)).state, { timeout: 5_000 })
      .toBe('lost');
    const lost = await azure('x');
    expect(lost.status).toBe(410);
    const told = (await lost.json()) as Json;
    expect(JSON.stringify(told)).toContain('The next request with this identifier starts a new session.');
    // Said once: the identifier is free again, for a new session without the old state.
    const fresh = await azure('x');
    expect(fresh.status).toBe(200);
    expect(((await fresh.json()) as Json).properties.stderr).toContain("name 'x' is not defined");
  });
});
