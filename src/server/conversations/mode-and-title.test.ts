/**
 * What a conversation is called and how it reopens, over real HTTP on
 * 127.0.0.1 (kernels answer from a script): the title comes from a person's
 * words, the export's file name is short, and the mode a client chose is kept.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { byCode, printed } from '../../../test/support/kernel-script.js';
import { type Client, client, startScriptedServer } from '../../../test/support/server.js';
import type { Conversation, ConversationSummary } from '../../protocol/index.js';

const kernel = byCode({
  "import pandas as pd\ndf = pd.read_csv('/mnt/data/traffic_accidents.csv')\ndf.shape": [printed('(8756, 10)\n')],
  '# Fines and accidents\nprint(1)': [printed('1\n')],
  'print(2)': [printed('2\n')],
});

function form(name: string, data: string): FormData {
  const body = new FormData();
  body.append('file', new Blob([data]), name);
  return body;
}

describe('conversation titles, export names and modes', () => {
  let server: Awaited<ReturnType<typeof startScriptedServer>>;
  let api: Client;

  beforeAll(async () => {
    server = await startScriptedServer(kernel, { webRoot: false });
    api = client(server);
  });
  afterAll(async () => server?.close());

  const create = (json: Record<string, unknown> = {}) =>
    api.json<Conversation>('/v1/conversations', { method: 'POST', json });
  const cell = (id: string, code: string) =>
    api.json(`/v1/conversations/${id}/cells`, { method: 'POST', json: { code } });

  it('a cell of code names a conversation after the data file it reads, not after its code', async () => {
    const conversation = await create();
    await cell(conversation.id, "import pandas as pd\ndf = pd.read_csv('/mnt/data/traffic_accidents.csv')\ndf.shape");
    const named = await api.json<Conversation>(`/v1/conversations/${conversation.id}`);
    expect(named.title).toBe('traffic_accidents.csv');
    const exported = await api(`/v1/conversations/${conversation.id}/notebook`);
    expect(exported.headers.get('content-disposition')).toContain('filename="traffic-accidents-csv.ipynb"');
  });

  it('an upload names it after the file; a later cell keeps that name', async () => {
    const conversation = await create();
    const uploaded = await api(`/v1/conversations/${conversation.id}/files`, {
      method: 'POST',
      body: form('fines 2024.csv', 'fine,accidents\n10,3\n'),
    });
    expect(uploaded.status).toBe(201);
    await cell(conversation.id, '# Fines and accidents\nprint(1)');
    expect((await api.json<Conversation>(`/v1/conversations/${conversation.id}`)).title).toBe('fines 2024.csv');
  });

  it("a cell's leading comment names a nameless conversation; bare code leaves it unnamed", async () => {
    const commented = await create();
    await cell(commented.id, '# Fines and accidents\nprint(1)');
    expect((await api.json<Conversation>(`/v1/conversations/${commented.id}`)).title).toBe('Fines and accidents');
    const bare = await create();
    await cell(bare.id, 'print(2)');
    expect((await api.json<Conversation>(`/v1/conversations/${bare.id}`)).title).toBe('New conversation');
  });

  it('keeps the mode a client chose, from creation or PATCH, and lists it', async () => {
    const conversation = await create({ mode: 'notebook' });
    expect(conversation.mode).toBe('notebook');
    const untouched = await create();
    expect(untouched.mode).toBeUndefined();

    const patched = await api.json<ConversationSummary>(`/v1/conversations/${untouched.id}`, {
      method: 'PATCH',
      json: { mode: 'notebook' },
    });
    expect(patched.mode).toBe('notebook');
    await api.json(`/v1/conversations/${conversation.id}`, { method: 'PATCH', json: { mode: 'chat' } });
    const listed = await api.json<{ conversations: ConversationSummary[] }>('/v1/conversations');
    const modes = Object.fromEntries(listed.conversations.map((item) => [item.id, item.mode]));
    expect(modes[conversation.id]).toBe('chat');
    expect(modes[untouched.id]).toBe('notebook');
  });

  it('refuses a mode it does not know, other fields, and a conversation it does not have', async () => {
    const conversation = await create();
    const path = `/v1/conversations/${conversation.id}`;
    for (const json of [{ mode: 'slides' }, { mode: 'chat', title: 'x' }, {}]) {
      const refused = await api(path, { method: 'PATCH', json });
      expect(refused.status).toBe(400);
      expect(((await refused.json()) as { error: { code: string } }).error.code).toBeTruthy();
    }
    const missing = await api('/v1/conversations/00000000-0000-4000-8000-000000000000', {
      method: 'PATCH',
      json: { mode: 'chat' },
    });
    expect(missing.status).toBe(404);
    const openapi = await api.json<{ paths: Record<string, Record<string, unknown>> }>('/openapi.json');
    expect(Object.keys(openapi.paths['/v1/conversations/{id}'] ?? {})).toContain('patch');
  });
});
