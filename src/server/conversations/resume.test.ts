/**
 * Conversations whose sessions are paused and resumed, over real HTTP on
 * 127.0.0.1 with kernels answering from a script and a scripted model: an
 * idle pause, then the next cell or question resumes the session with its
 * variables; a restart on the same state directory, then the read-back
 * conversation goes on where it was; a name that could not be kept is said
 * (to the user in the turn, to the model in its context); a session that is
 * gone (its snapshot missing, its pause failed, deleted) expires the
 * conversation with the reason. On real kernels: test/server-conversation-resume.test.ts.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { readdir, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { fold, lastTurn, readEvents, sse } from '../../../test/support/conversation-events.js';
import { namesKernel } from '../../../test/support/kernel-script.js';
import { type Client, client, startScriptedServer } from '../../../test/support/server.js';
import { ScriptedChatModel } from '../../agents/scripted-chat-model.js';
import type { Conversation, ConversationSummary, Turn } from '../../protocol/index.js';

type Server = Awaited<ReturnType<typeof startScriptedServer>>;
const root = mkdtempSync(path.join(os.tmpdir(), 'sandcell-conversation-resume-'));
const servers: Server[] = [];

async function start(options: { idleTimeoutMs?: number; stateDirectory?: string; model?: ScriptedChatModel } = {}) {
  const stateDirectory = options.stateDirectory ?? mkdtempSync(path.join(root, 'state-'));
  const server = await startScriptedServer(namesKernel, { poolSize: 0, webRoot: false, ...options, stateDirectory });
  servers.push(server);
  return { server, api: client(server), stateDirectory };
}

afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.close()));
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

async function newConversation(api: Client): Promise<Conversation> {
  return api.json<Conversation>('/v1/conversations', { method: 'POST', json: {} });
}

async function cell(api: Client, id: string, code: string): Promise<Turn> {
  return api.json<Turn>(`/v1/conversations/${id}/cells`, { method: 'POST', json: { code } });
}

const shown = (turn: Turn) => {
  const step = turn.steps[0];
  return step?.type === 'code' ? (step.results[0]?.data['text/plain'] ?? step.execution?.error?.value) : undefined;
};

async function pausedIdle(api: Client, sessionId: string): Promise<{ state: string; snapshotId?: string }> {
  await expect
    .poll(async () => (await api.json<{ state: string }>(`/v1/sessions/${sessionId}`)).state, { timeout: 5_000 })
    .toBe('paused');
  return api.json(`/v1/sessions/${sessionId}`);
}

async function filesUnder(directory: string): Promise<string[]> {
  const entries = await readdir(directory, { recursive: true, withFileTypes: true });
  return entries.map((entry) => path.join(entry.parentPath, entry.name));
}

describe('a conversation whose session was paused', () => {
  it('resumes at its next cell after an idle pause, with its variables, and stays active meanwhile', async () => {
    const { api } = await start({ idleTimeoutMs: 200 });
    const conversation = await newConversation(api);
    await cell(api, conversation.id, 'x = 41');
    await pausedIdle(api, conversation.sessionId);
    const meanwhile = await api.json<Conversation>(`/v1/conversations/${conversation.id}`);
    expect(meanwhile.status).toBe('active');
    expect(meanwhile.expiredReason).toBeUndefined();
    // Nothing to continue: the session is not gone.
    expect((await api(`/v1/conversations/${conversation.id}/continue`, { method: 'POST' })).status).toBe(409);

    const events = await readEvents(await sse(api, `/v1/conversations/${conversation.id}/cells`, { code: 'x' }));
    // Everything came back: nothing is said.
    expect(events.map((event) => event.type)).not.toContain('session-resumed');
    const turn = lastTurn(events);
    expect(shown(turn)).toBe('41');
    expect(turn.resumed).toBeUndefined();
    const after = await api.json<Conversation>(`/v1/conversations/${conversation.id}`);
    expect(after).toMatchObject({ status: 'active', sessionId: conversation.sessionId });
    expect((await api.json<{ state: string }>(`/v1/sessions/${conversation.sessionId}`)).state).toBe('running');
  });

  it('says what did not come back, once, in the turn, its history and its export', async () => {
    const { api } = await start({ idleTimeoutMs: 200 });
    const conversation = await newConversation(api);
    await cell(api, conversation.id, 'x = kept');
    await cell(api, conversation.id, 'conn = socket()');
    await pausedIdle(api, conversation.sessionId);

    const events = await readEvents(await sse(api, `/v1/conversations/${conversation.id}/cells`, { code: 'x' }));
    expect(events.map((event) => event.type).slice(0, 3)).toEqual(['turn-start', 'session-resumed', 'execution-start']);
    const turn = lastTurn(events);
    expect(fold(events)).toEqual(turn);
    expect(shown(turn)).toBe('kept');
    expect(turn.resumed).toEqual({
      skipped: [{ name: 'conn', reason: 'function' }],
      notKept: [],
      message: '1 variable could not be restored: conn (function).',
    });
    const history = await api.json<Conversation>(`/v1/conversations/${conversation.id}`);
    expect(history.turns[2]?.resumed?.message).toBe('1 variable could not be restored: conn (function).');
    const notebook = await (await api(`/v1/conversations/${conversation.id}/notebook`)).text();
    expect(notebook).toContain('The session resumed from a pause: 1 variable could not be restored: conn (function).');
    // Said once: the next turn runs on the same session.
    const next = await cell(api, conversation.id, 'conn');
    expect(next.resumed).toBeUndefined();
    expect(shown(next)).toBe("name 'conn' is not defined");
  });

  it('a question resumes it too: the model goes on with what was said, and is told what is gone', async () => {
    const model = new ScriptedChatModel();
    const { api } = await start({ idleTimeoutMs: 200, model });
    const conversation = await newConversation(api);
    model.enqueue(
      { toolCalls: [{ id: 'call_1', name: 'execute_python_code', arguments: { code: 'conn = socket()' } }] },
      { text: 'Connected.' },
    );
    await api.json(`/v1/conversations/${conversation.id}/messages`, {
      method: 'POST',
      json: { content: 'Open a connection' },
    });
    await pausedIdle(api, conversation.sessionId);
    model.enqueue({ text: 'It is gone; I will open it again.' });
    const turn = await api.json<Turn>(`/v1/conversations/${conversation.id}/messages`, {
      method: 'POST',
      json: { content: 'Is the connection there?' },
    });
    expect(turn.status).toBe('done');
    expect(turn.resumed?.message).toBe('1 variable could not be restored: conn (function).');
    const asked = model.calls[model.calls.length - 1]!;
    expect(asked.instructions).toContain('paused and has resumed');
    expect(asked.instructions).toContain('conn (function)');
    const said = asked.messages.map((message) => message.content);
    expect(said).toContain('Open a connection');
    expect(said).toContain('Connected.');
  });

  it('resumes after a restart on the same state directory, seeing its variables, and the model its history', async () => {
    const model = new ScriptedChatModel();
    const first = await start({ model });
    const conversation = await newConversation(first.api);
    await cell(first.api, conversation.id, 'x = survived');
    await first.server.close();

    const second = await start({ stateDirectory: first.stateDirectory, model });
    const listed = await second.api.json<{ conversations: ConversationSummary[] }>('/v1/conversations');
    expect(listed.conversations).toEqual([expect.objectContaining({ id: conversation.id, status: 'active' })]);
    const turn = await cell(second.api, conversation.id, 'x');
    expect(shown(turn)).toBe('survived');
    expect(turn.resumed).toBeUndefined();
    expect(await second.api.json<Conversation>(`/v1/conversations/${conversation.id}`)).toMatchObject({
      status: 'active',
      sessionId: conversation.sessionId,
      turnCount: 2,
    });
    model.enqueue({ text: 'x is survived.' });
    await second.api.json(`/v1/conversations/${conversation.id}/messages`, {
      method: 'POST',
      json: { content: 'What is x?' },
    });
    const asked = model.calls[model.calls.length - 1]!;
    expect(asked.instructions).toContain('went on across a restart of the server');
    expect(asked.instructions).toContain('User ran (python):\nx = survived');
  });

  it('expires, saying why, when its snapshot is missing; it can then be continued', async () => {
    const { api, stateDirectory } = await start({ idleTimeoutMs: 200 });
    const conversation = await newConversation(api);
    await cell(api, conversation.id, 'x = 1');
    const { snapshotId } = await pausedIdle(api, conversation.sessionId);
    const snapshot = (await filesUnder(path.join(stateDirectory, 'store', 'snapshots'))).find(
      (file) => path.basename(file) === snapshotId,
    );
    expect(snapshot).toBeDefined();
    await rm(snapshot!, { recursive: true, force: true });

    const refused = await api(`/v1/conversations/${conversation.id}/cells`, { method: 'POST', json: { code: 'x' } });
    expect(refused.status).toBe(410);
    const body = (await refused.json()) as { error: { code: string; message: string } };
    expect(body.error.code).toBe('conversation-expired');
    expect(body.error.message).toContain('its state could not be kept: its snapshot is missing');
    const expired = await api.json<Conversation>(`/v1/conversations/${conversation.id}`);
    expect(expired).toMatchObject({
      status: 'expired',
      expiredReason: 'was lost, its state could not be kept: its snapshot is missing',
    });
    expect((await api(`/v1/conversations/${conversation.id}/continue`, { method: 'POST' })).status).toBe(201);
  });

  it('read back with a session whose pause failed: expired, saying why', async () => {
    const first = await start();
    const conversation = await newConversation(first.api);
    await cell(first.api, conversation.id, 'x = 1');
    await first.server.close();
    // What a pause that failed leaves: a record without a snapshot, saying why.
    const record = (await filesUnder(path.join(first.stateDirectory, 'store', 'paused'))).find(
      (file) => path.basename(file) === `${conversation.sessionId}.json`,
    )!;
    const { snapshotId: _snapshotId, ...kept } = JSON.parse(await readFile(record, 'utf8')) as Record<string, unknown>;
    await writeFile(record, JSON.stringify({ ...kept, lost: 'its pause (shutdown) failed: the sandbox died' }));

    const second = await start({ stateDirectory: first.stateDirectory });
    const expired = await second.api.json<Conversation>(`/v1/conversations/${conversation.id}`);
    expect(expired).toMatchObject({
      status: 'expired',
      expiredReason: 'was lost, its state could not be kept: its pause (shutdown) failed: the sandbox died',
    });
    const refused = await second.api(`/v1/conversations/${conversation.id}/cells`, {
      method: 'POST',
      json: { code: 'x' },
    });
    expect(refused.status).toBe(410);
  });

  it('expires when its paused session was deleted; deleting the conversation deletes its paused session', async () => {
    const { api } = await start({ idleTimeoutMs: 200 });
    const gone = await newConversation(api);
    await cell(api, gone.id, 'x = 1');
    await pausedIdle(api, gone.sessionId);
    expect((await api(`/v1/sessions/${gone.sessionId}`, { method: 'DELETE' })).status).toBe(204);
    const refused = await api(`/v1/conversations/${gone.id}/cells`, { method: 'POST', json: { code: 'x' } });
    expect(refused.status).toBe(410);
    expect((await api.json<Conversation>(`/v1/conversations/${gone.id}`)).expiredReason).toBe(
      'was deleted while it was paused',
    );

    const deleted = await newConversation(api);
    await cell(api, deleted.id, 'x = 2');
    await pausedIdle(api, deleted.sessionId);
    expect((await api(`/v1/conversations/${deleted.id}`, { method: 'DELETE' })).status).toBe(204);
    expect((await api(`/v1/sessions/${deleted.sessionId}`)).status).toBe(404);
  });
});
