/**
 * Notebook cells in conversations (no model) over real HTTP on 127.0.0.1, on
 * the server's own logic: SSE turns, history, errors, files, cancel, busy,
 * uploads with previews, expiry. Kernels answer from a script.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fold, lastTurn, readEvents, sse, waitFor } from '../../../test/support/conversation-events.js';
import { assign, byCode, printed, raised, value, writes } from '../../../test/support/kernel-script.js';
import { type Client, client, startScriptedServer } from '../../../test/support/server.js';
import type { Conversation, Turn } from '../../protocol/index.js';

const TRAFFIC_CSV = path.resolve(import.meta.dirname, '../../../examples/traffic-accidents/traffic_accidents.csv');

type Server = Awaited<ReturnType<typeof startScriptedServer>>;

const kernel = byCode({
  'x = 20\nprint("x is", x)': assign('x', '20', printed('x is 20\n')),
  'x * 2 + 2': ({ state }) => [value(String(Number(state.get('x')) * 2 + 2))],
  '1 / 0': [raised('ZeroDivisionError', 'division by zero', ['Cell In[1], line 1', '----> 1 1 / 0'])],
  "open('/mnt/data/out.csv','w').write('a,b\\n1,2\\n')": writes('out.csv', 'a,b\n1,2\n', value('8')),
  'print(1)': [printed('1\n')],
  'import time\nprint("start", flush=True)\ntime.sleep(30)': [printed('start\n'), { type: 'sleep', ms: 30_000 }],
  'time.time() > 0': [value('True')],
  'import time\ntime.sleep(1)\nprint("finished")': [{ type: 'sleep', ms: 1_000 }, printed('finished\n')],
  // The shape of the uploaded file: the kernel reads what the upload wrote.
  "import pandas as pd\npd.read_csv('traffic_accidents.csv').shape": ({ files }) => {
    const lines = files.read('traffic_accidents.csv').toString().trim().split('\n');
    return [value(`(${lines.length - 1}, ${lines[0]!.split(',').length})`)];
  },
  'print("before")': [printed('before\n')],
  // Answers with the language of the context it ran in.
  'which language': ({ language }) => [value(language)],
});

describe('conversations without a model (notebook)', () => {
  let server: Server;
  let api: Client;

  beforeAll(async () => {
    server = await startScriptedServer(kernel, { webRoot: false });
    api = client(server);
  });
  afterAll(async () => server?.close());

  it('GET /v1/config says there is no model and how to configure one', async () => {
    const config = await api.json<{ model: unknown; modelHelp: string; approvalDefault: string }>('/v1/config');
    expect(config.model).toBeNull();
    expect(config.modelHelp).toMatch(/--provider/);
    expect(config.approvalDefault).toBe('auto');
  });

  it('runs cells as SSE turns that keep state, and keeps them in the history', async () => {
    const conversation = await api.json<Conversation>('/v1/conversations', { method: 'POST', json: {} });
    expect(conversation.status).toBe('active');
    expect(conversation.turns).toEqual([]);
    const base = `/v1/conversations/${conversation.id}`;

    const first = await readEvents(await sse(api, `${base}/cells`, { code: 'x = 20\nprint("x is", x)' }));
    expect(first.map((event) => event.type)).toEqual([
      'turn-start',
      'execution-start',
      'stdout-delta',
      'execution-end',
      'turn-end',
    ]);
    const turn = lastTurn(first);
    expect(turn).toMatchObject({ kind: 'cell', status: 'done', input: 'x = 20\nprint("x is", x)' });
    expect(fold(first)).toEqual(turn);

    // JSON when the client does not ask for a stream; state carried over.
    const second = await api.json<Turn>(`${base}/cells`, { method: 'POST', json: { code: 'x * 2 + 2' } });
    const step = second.steps[0];
    expect(step?.type === 'code' && step.results[0]?.data['text/plain']).toBe('42');

    const history = await api.json<Conversation>(base);
    expect(history.turns.map((item) => item.id)).toEqual([turn.id, second.id]);
    expect(history.turnCount).toBe(2);
    // Code is no title: a cell without a comment or a data file leaves the conversation unnamed.
    expect(history.title).toBe('New conversation');
  });

  it('runs a cell in the language it names, records the language on its step and in the notebook', async () => {
    const conversation = await api.json<Conversation>('/v1/conversations', { method: 'POST', json: {} });
    const base = `/v1/conversations/${conversation.id}`;
    const events = await readEvents(await sse(api, `${base}/cells`, { code: 'which language', language: 'bash' }));
    expect(events.find((event) => event.type === 'execution-start')).toMatchObject({ language: 'bash' });
    const bashStep = lastTurn(events).steps[0];
    if (bashStep?.type !== 'code') throw new Error('no code step');
    expect(bashStep).toMatchObject({ language: 'bash', status: 'ok' });
    expect(bashStep.results[0]?.data['text/plain']).toBe('bash');

    const python = await api.json<Turn>(`${base}/cells`, { method: 'POST', json: { code: 'which language' } });
    const pythonStep = python.steps[0];
    if (pythonStep?.type !== 'code') throw new Error('no code step');
    expect(pythonStep.results[0]?.data['text/plain']).toBe('python');
    expect(pythonStep.language).toBeUndefined();
    expect((await api.json<Conversation>(base)).turns[0]?.steps[0]).toMatchObject({ language: 'bash' });

    // biome-ignore lint/suspicious/noExplicitAny: the notebook is read loosely
    const notebook = await api.json<any>(`${base}/notebook`);
    const [bashCell, pythonCell] = notebook.cells.filter((cell: { cell_type: string }) => cell.cell_type === 'code');
    expect(bashCell.metadata).toMatchObject({ sandcell: { language: 'bash' }, vscode: { languageId: 'bash' } });
    expect(pythonCell.metadata.sandcell.language).toBeUndefined();

    const refused = await api(`${base}/cells`, { method: 'POST', json: { code: '1', language: 'cobol' } });
    expect(refused.status).toBe(400);
  });

  it('reports errors with their traceback, and files a cell wrote with working download URLs', async () => {
    const conversation = await api.json<Conversation>('/v1/conversations', { method: 'POST', json: {} });
    const base = `/v1/conversations/${conversation.id}`;
    const failed = lastTurn(await readEvents(await sse(api, `${base}/cells`, { code: '1 / 0' })));
    const failedStep = failed.steps[0];
    expect(failedStep?.type === 'code' && failedStep.status).toBe('error');
    expect(failedStep?.type === 'code' && failedStep.execution?.error?.name).toBe('ZeroDivisionError');
    expect(failedStep?.type === 'code' && failedStep.execution?.error?.traceback.join('\n')).toMatch(/1 \/ 0/);

    const wrote = lastTurn(
      await readEvents(
        await sse(api, `${base}/cells`, { code: "open('/mnt/data/out.csv','w').write('a,b\\n1,2\\n')" }),
      ),
    );
    const wroteStep = wrote.steps[0];
    if (wroteStep?.type !== 'code') throw new Error('no code step');
    expect(wroteStep.files.map((file) => file.path)).toEqual(['out.csv']);
    const download = await api(wroteStep.files[0]!.url);
    expect(await download.text()).toBe('a,b\n1,2\n');

    // The next cell writes nothing: no files are claimed for it.
    const quiet = lastTurn(await readEvents(await sse(api, `${base}/cells`, { code: 'print(1)' })));
    expect(quiet.steps[0]?.type === 'code' && quiet.steps[0].files).toEqual([]);
  });

  it('answers messages with 409 model-not-configured, bad bodies with 400, unknown ids with 404', async () => {
    const conversation = await api.json<Conversation>('/v1/conversations', { method: 'POST', json: {} });
    const base = `/v1/conversations/${conversation.id}`;
    const refused = await api(`${base}/messages`, { method: 'POST', json: { content: 'hi' } });
    expect(refused.status).toBe(409);
    expect(((await refused.json()) as { error: { code: string } }).error.code).toBe('model-not-configured');
    const empty = await api(`${base}/cells`, { method: 'POST', json: { code: 1 } });
    expect(empty.status).toBe(400);
    const unknown = await api('/v1/conversations/00000000-0000-4000-8000-000000000000');
    expect(unknown.status).toBe(404);
    expect(((await unknown.json()) as { error: { code: string } }).error.code).toBe('conversation-not-found');
    // Nothing was lost and the server still serves.
    expect((await api.json<Conversation>(base)).turns).toEqual([]);
  });

  it('cancel interrupts a running cell; a busy conversation refuses a second turn', async () => {
    const conversation = await api.json<Conversation>('/v1/conversations', { method: 'POST', json: {} });
    const base = `/v1/conversations/${conversation.id}`;
    const running = sse(api, `${base}/cells`, { code: 'import time\nprint("start", flush=True)\ntime.sleep(30)' });
    // Started means printing: a turn is busy before its code runs, and a cancel then would drop the run instead.
    await waitFor(async () => {
      const step = (await api.json<Conversation>(base)).turns[0]?.steps[0];
      return step?.type === 'code' && step.stdout === 'start\n' ? true : undefined;
    }, 'the cell to start');
    const busy = await api(`${base}/cells`, { method: 'POST', json: { code: '1' } });
    expect(busy.status).toBe(409);
    expect(((await busy.json()) as { error: { code: string } }).error.code).toBe('conversation-busy');
    expect(await api.json(`${base}/cancel`, { method: 'POST' })).toEqual({ cancelled: true });
    const turn = lastTurn(await readEvents(await running));
    expect(turn.status).toBe('cancelled');
    expect(turn.steps[0]?.type === 'code' && turn.steps[0].execution?.error?.name).toBe('KeyboardInterrupt');
    expect(await api.json(`${base}/cancel`, { method: 'POST' })).toEqual({ cancelled: false });
    // The session kept its state: the conversation goes on.
    const after = await api.json<Turn>(`${base}/cells`, { method: 'POST', json: { code: 'time.time() > 0' } });
    expect(after.steps[0]?.type === 'code' && after.steps[0].results[0]?.data['text/plain']).toBe('True');
  });

  it('a client that disconnects does not stop the turn; the history has its result', async () => {
    const conversation = await api.json<Conversation>('/v1/conversations', { method: 'POST', json: {} });
    const base = `/v1/conversations/${conversation.id}`;
    const abort = new AbortController();
    const response = await api(`${base}/cells`, {
      method: 'POST',
      json: { code: 'import time\ntime.sleep(1)\nprint("finished")' },
      headers: { accept: 'text/event-stream' },
      signal: abort.signal,
    });
    const reader = response.body!.getReader();
    await reader.read(); // turn-start
    abort.abort();
    const turn = await waitFor(async () => {
      const latest = (await api.json<Conversation>(base)).turns[0];
      return latest?.status === 'running' ? undefined : latest;
    }, 'the turn to end');
    expect(turn.status).toBe('done');
    expect(turn.steps[0]?.type === 'code' && turn.steps[0].stdout).toBe('finished\n');
  });

  it('uploads land in /mnt/data with a preview computed without running code', async () => {
    const conversation = await api.json<Conversation>('/v1/conversations', { method: 'POST', json: {} });
    const base = `/v1/conversations/${conversation.id}`;
    const form = new FormData();
    form.append('file', new Blob([await readFile(TRAFFIC_CSV)]), 'traffic_accidents.csv');
    const response = await api(`${base}/files`, { method: 'POST', body: form });
    expect(response.status).toBe(201);
    const { turn } = (await response.json()) as { turn: Turn };
    expect(turn.kind).toBe('upload');
    const [preview] = turn.files ?? [];
    expect(preview).toMatchObject({ path: 'traffic_accidents.csv', format: 'csv', rows: 8756 });
    expect(preview?.columns?.[0]).toEqual({ name: 'accidents', dtype: 'int64' });
    expect(preview?.head?.rows[0]?.[0]).toBe('20');
    const shape = await api.json<Turn>(`${base}/cells`, {
      method: 'POST',
      json: { code: "import pandas as pd\npd.read_csv('traffic_accidents.csv').shape" },
    });
    expect(shape.steps[0]?.type === 'code' && shape.steps[0].results[0]?.data['text/plain']).toBe('(8756, 10)');
    const bad = new FormData();
    bad.append('file', new Blob(['x']), '../escape.txt');
    expect((await api(`${base}/files`, { method: 'POST', body: bad })).status).toBe(400);
  });

  it('a conversation whose session is gone is expired: readable and exportable, but refuses new turns', async () => {
    const conversation = await api.json<Conversation>('/v1/conversations', { method: 'POST', json: {} });
    const base = `/v1/conversations/${conversation.id}`;
    await api.json(`${base}/cells`, { method: 'POST', json: { code: 'print("before")' } });
    const deleted = await api(`/v1/sessions/${conversation.sessionId}`, { method: 'DELETE' });
    expect(deleted.status).toBe(204);
    const expired = await api.json<Conversation>(base);
    expect(expired.status).toBe('expired');
    expect(expired.expiredReason).toBe('was deleted');
    expect(expired.turns).toHaveLength(1);
    const refused = await api(`${base}/cells`, { method: 'POST', json: { code: '1' } });
    expect(refused.status).toBe(410);
    expect(((await refused.json()) as { error: { code: string } }).error.code).toBe('conversation-expired');
    expect((await api(`${base}/notebook`)).status).toBe(200);
    expect((await api(base, { method: 'DELETE' })).status).toBe(204);
    expect((await api(base)).status).toBe(404);
  });
});

describe('conversations are per key', () => {
  let server: Server;

  beforeAll(async () => {
    server = await startScriptedServer(undefined, {
      apiKeys: ['alice:alice-key-123', 'bob:bob-key-4567'],
      webRoot: false,
    });
  });
  afterAll(async () => server?.close());

  it("a key cannot see or use another key's conversation, and needs a key at all", async () => {
    const alice = client(server, 'alice-key-123');
    const bob = client(server, 'bob-key-4567');
    const conversation = await alice.json<Conversation>('/v1/conversations', { method: 'POST', json: {} });
    expect((await bob(`/v1/conversations/${conversation.id}`)).status).toBe(404);
    expect((await bob.json<{ conversations: unknown[] }>('/v1/conversations')).conversations).toEqual([]);
    expect((await client(server)('/v1/conversations')).status).toBe(401);
    expect((await client(server)('/v1/config')).status).toBe(401);
    expect((await alice.json<{ conversations: unknown[] }>('/v1/conversations')).conversations).toHaveLength(1);
  });
});
