/**
 * Conversations kept in a state directory, over real HTTP with kernels
 * answering from a script: a server started again on the same directory
 * lists each key's old conversations (and only its own); those whose sessions
 * are gone (here: their paused sessions deleted) are read-only with their
 * charts and export (resumed ones, and lost ones: resume.test.ts); continuing
 * one starts a new conversation that re-runs
 * nothing; deleting one deletes its file; a damaged file is skipped; the
 * per-key bound holds on what was read back; files are 0600 in 0700
 * directories and name no key. The real thing (bubblewrap, a model, SIGKILL):
 * test/server-durable-conversations.test.ts.
 */
import { chmod, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { byCode, figure, PNG, printed } from '../../../test/support/kernel-script.js';
import { client, startScriptedServer } from '../../../test/support/server.js';
import type { Conversation, ConversationSummary, Turn } from '../../protocol/index.js';

const ALICE = 'alice-secret-0001';
const BOB = 'bob-secret-00002';
const kernel = byCode({
  "print('hello')": [printed('hello\n')],
  'plt.show()': [figure()],
  'x = 1': [],
  big: [printed(`${'y'.repeat(60_000)}\n`)],
});

type Server = Awaited<ReturnType<typeof startScriptedServer>>;
let stateDirectory: string;
let server: Server | undefined;

const start = async (options: Parameters<typeof startScriptedServer>[1] = {}) => {
  server = await startScriptedServer(kernel, { apiKeys: [ALICE, BOB], stateDirectory, ...options });
  return { server, alice: client(server, ALICE), bob: client(server, BOB) };
};
const stop = async () => {
  await server?.close();
  server = undefined;
};

beforeAll(async () => {
  stateDirectory = await mkdtemp(path.join(os.tmpdir(), 'sandcell-state-'));
});
afterEach(stop);
afterAll(() => rm(stateDirectory, { recursive: true, force: true }));

async function allFiles(directory: string): Promise<string[]> {
  const entries = await readdir(directory, { recursive: true, withFileTypes: true });
  return entries.map((entry) => path.join(entry.parentPath, entry.name));
}

describe('conversations in a state directory', () => {
  let aliceId: string;
  let bobId: string;
  let imageUrl: string;

  it('are written as they happen, 0600 in 0700 directories, naming no key', async () => {
    const { alice, bob } = await start();
    aliceId = (await alice.json<Conversation>('/v1/conversations', { method: 'POST', json: {} })).id;
    await alice.json(`/v1/conversations/${aliceId}`, { method: 'PATCH', json: { mode: 'notebook' } });
    await alice.json<Turn>(`/v1/conversations/${aliceId}/cells`, { method: 'POST', json: { code: "print('hello')" } });
    const chart = await alice.json<Turn>(`/v1/conversations/${aliceId}/cells`, {
      method: 'POST',
      json: { code: 'plt.show()' },
    });
    const step = chart.steps[0]!;
    imageUrl = step.type === 'code' ? step.results[0]!.images![0]!.url : '';
    expect(imageUrl).toMatch(/\/images\//);
    bobId = (await bob.json<Conversation>('/v1/conversations', { method: 'POST', json: { title: 'bob' } })).id;
    await server!.flushed();
    // A snapshot the store is writing (a `.partial-` file, renamed into place when whole) is let finish first.
    await expect
      .poll(async () => (await allFiles(stateDirectory)).filter((file) => path.basename(file).startsWith('.partial-')))
      .toEqual([]);

    const files = await allFiles(stateDirectory);
    expect(files.some((file) => file.endsWith(`${aliceId}.jsonl`))).toBe(true);
    for (const file of [stateDirectory, ...files]) {
      const { mode } = await stat(file);
      const directory = (await stat(file)).isDirectory();
      expect((mode & 0o777).toString(8), file).toBe(directory ? '700' : '600');
      expect(file).not.toContain(ALICE);
      if (!directory) expect(await readFile(file, 'utf8')).not.toContain(ALICE);
    }
  });

  it('come back after a restart: listed for their key only, read-only, with charts and export', async () => {
    await stop();
    // The server that stopped paused the sessions: deleted, they are gone.
    await rm(path.join(stateDirectory, 'store', 'paused'), { recursive: true, force: true });
    const { alice, bob } = await start();
    const listed = await alice.json<{ conversations: ConversationSummary[] }>('/v1/conversations');
    expect(listed.conversations.map((each) => each.id)).toEqual([aliceId]);
    const old = await alice.json<Conversation>(`/v1/conversations/${aliceId}`);
    expect(old).toMatchObject({
      status: 'expired',
      expiredReason: 'ended when the server restarted',
      turnCount: 2,
      mode: 'notebook',
    });
    expect(old.turns.map((turn) => turn.input)).toEqual(["print('hello')", 'plt.show()']);
    expect(old.turns[0]!.steps[0]).toMatchObject({ stdout: 'hello\n', status: 'ok' });

    const image = await alice(imageUrl);
    expect(image.status).toBe(200);
    expect(Buffer.from(await image.arrayBuffer())).toEqual(PNG);
    const notebook = await alice.json<{ cells: { outputs?: { data?: Record<string, unknown> }[] }[] }>(
      `/v1/conversations/${aliceId}/notebook`,
    );
    expect(JSON.stringify(notebook)).toContain(PNG.toString('base64'));

    const refused = await alice(`/v1/conversations/${aliceId}/cells`, { method: 'POST', json: { code: 'x = 1' } });
    expect(refused.status).toBe(410);
    expect(await refused.json()).toMatchObject({ error: { code: 'conversation-expired' } });

    const bobs = await bob.json<{ conversations: ConversationSummary[] }>('/v1/conversations');
    expect(bobs.conversations.map((each) => each.id)).toEqual([bobId]);
    expect((await bob(`/v1/conversations/${aliceId}`)).status).toBe(404);
    expect((await bob(imageUrl)).status).toBe(404);
    expect((await bob(`/v1/conversations/${aliceId}/continue`, { method: 'POST' })).status).toBe(404);
  });

  it('continue in a new conversation that names the old one and re-ran nothing', async () => {
    const { alice } = await start();
    const continued = await alice(`/v1/conversations/${aliceId}/continue`, { method: 'POST' });
    expect(continued.status).toBe(201);
    const fresh = (await continued.json()) as Conversation;
    expect(fresh).toMatchObject({ status: 'active', turnCount: 0, continuedFrom: { id: aliceId }, mode: 'notebook' });
    expect(server!.backend).toBeDefined();
    const ran = await alice.json<Turn>(`/v1/conversations/${fresh.id}/cells`, {
      method: 'POST',
      json: { code: 'x = 1' },
    });
    expect(ran.status).toBe('done');
    // A conversation that still has its session is not continued.
    const active = await alice(`/v1/conversations/${fresh.id}/continue`, { method: 'POST' });
    expect(active.status).toBe(409);
    expect(await active.json()).toMatchObject({ error: { code: 'conversation-active' } });
    // The old one is as it was.
    expect((await alice.json<Conversation>(`/v1/conversations/${aliceId}`)).turnCount).toBe(2);
  });

  it('skip a damaged file with a log line, and keep serving the rest', async () => {
    const aliceDirectory = path.dirname(
      (await allFiles(stateDirectory)).find((file) => file.endsWith(`${aliceId}.jsonl`))!,
    );
    const damaged = path.join(aliceDirectory, '00000000-0000-4000-8000-000000000000.jsonl');
    await writeFile(damaged, 'not json at all\n{"type":"turn"}\n', { mode: 0o600 });
    // A torn last line, as a crash mid-write leaves it.
    const aliceFile = path.join(aliceDirectory, `${aliceId}.jsonl`);
    await writeFile(aliceFile, `${await readFile(aliceFile, 'utf8')}{"type":"turn","title":"cut sh`);
    const { alice } = await start();
    const ids = (await alice.json<{ conversations: ConversationSummary[] }>('/v1/conversations')).conversations.map(
      (each) => each.id,
    );
    expect(ids).toContain(aliceId);
    expect(ids).not.toContain('00000000-0000-4000-8000-000000000000');
    expect(server!.logs.lines.some((line) => line.file === damaged && line.level === 50)).toBe(true);
    expect((await alice.json<Conversation>(`/v1/conversations/${aliceId}`)).turnCount).toBe(2);
    await rm(damaged);
  });

  it("stay within the key's bound when read back", async () => {
    const { alice } = await start();
    for (let index = 0; index < 3; index++) {
      const id = (await alice.json<Conversation>('/v1/conversations', { method: 'POST', json: {} })).id;
      await alice.json<Turn>(`/v1/conversations/${id}/cells`, { method: 'POST', json: { code: 'big' } });
    }
    await stop();
    const keyBytes = 100_000;
    const { alice: again } = await start({
      conversationOutputBytes: 50_000,
      conversationHistoryBytes: keyBytes,
      limits: { conversationBytes: keyBytes },
    });
    const conversations = (await again.json<{ conversations: ConversationSummary[] }>('/v1/conversations'))
      .conversations;
    let total = 0;
    for (const each of conversations) {
      total += Buffer.byteLength(
        JSON.stringify((await again.json<Conversation>(`/v1/conversations/${each.id}`)).turns),
      );
    }
    expect(conversations.length).toBeGreaterThanOrEqual(4);
    expect(total).toBeLessThanOrEqual(keyBytes);
  });

  it('deleting one deletes its file', async () => {
    const { alice } = await start();
    expect((await alice(`/v1/conversations/${aliceId}`, { method: 'DELETE' })).status).toBe(204);
    expect((await allFiles(stateDirectory)).some((file) => file.includes(aliceId))).toBe(false);
    await stop();
    const { alice: again } = await start();
    expect((await again(`/v1/conversations/${aliceId}`)).status).toBe(404);
  });

  it('leave the mode of a directory the user gave alone, and keep their own 0700', async () => {
    const shared = await mkdtemp(path.join(os.tmpdir(), 'sandcell-shared-'));
    try {
      await chmod(shared, 0o755);
      const started = await startScriptedServer(kernel, { stateDirectory: shared });
      await started.close();
      expect(((await stat(shared)).mode & 0o777).toString(8)).toBe('755');
      expect(((await stat(path.join(shared, 'conversations'))).mode & 0o777).toString(8)).toBe('700');
    } finally {
      await rm(shared, { recursive: true, force: true });
    }
  });

  it('refuse to start on a state directory that cannot be written', async () => {
    const file = path.join(stateDirectory, 'a-file');
    await writeFile(file, '');
    await expect(startScriptedServer(kernel, { stateDirectory: file })).rejects.toThrow(
      /Cannot keep conversations in .*--state-dir/,
    );
  });
});
