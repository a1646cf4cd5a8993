/**
 * /v1/conversations over real HTTP on real sandboxes: notebook cells without a
 * model, questions to a scripted OpenAI-compatible model (the real SDK talks
 * to a local fake), SSE events, approvals, cancel, uploads with previews,
 * history, expiry, the notebook export, and the web UI's static serving.
 */

import { spawn } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createChatModel } from '../src/agents/index.js';
import type { Conversation, ConversationEvent, Turn } from '../src/protocol/index.js';
import { applyConversationEvent } from '../src/protocol/index.js';
import { WEB_CSP } from '../src/server/web-ui.js';
import { type Client, client, startTestServer } from './server-helpers.js';
import { type FakeProvider, startFakeOpenAI } from './support/fake-providers.js';
import { runProcess } from './support/process.js';

const BIN = path.resolve('bin/sandcell.js');
/** The environment without any model configuration of the machine running the tests. */
const NO_MODEL_ENV = {
  SANDCELL_API_KEYS: '',
  SANDCELL_PROVIDER: '',
  SANDCELL_MODEL: '',
  OPENAI_API_KEY: '',
  OPENAI_BASE_URL: '',
  ANTHROPIC_API_KEY: '',
  AZURE_OPENAI_API_KEY: '',
  SANDCELL_CONFIG: '',
  XDG_CONFIG_HOME: path.join(os.tmpdir(), 'sandcell-no-config'),
};

const TRAFFIC_CSV = path.resolve('examples/traffic-accidents/traffic_accidents.csv');
const PNG_SIGNATURE = '89504e470d0a1a0a';

type Server = Awaited<ReturnType<typeof startTestServer>>;

/** Reads an SSE response into its events (checking `event:` matches the JSON's type). */
async function readEvents(response: Response): Promise<ConversationEvent[]> {
  expect(response.status).toBe(200);
  expect(response.headers.get('content-type')).toMatch(/^text\/event-stream/);
  const text = await response.text();
  return text
    .split('\n\n')
    .filter((block) => block.trim() !== '')
    .map((block) => {
      const type = /^event: (.+)$/m.exec(block)?.[1];
      const data = /^data: (.+)$/m.exec(block)?.[1];
      const event = JSON.parse(data ?? 'null') as ConversationEvent;
      expect(event.type).toBe(type);
      return event;
    });
}

function sse(api: Client, route: string, json: unknown): Promise<Response> {
  return api(route, { method: 'POST', json, headers: { accept: 'text/event-stream' } });
}

/** Folds events as a client would; the result must equal the server's final turn. */
function fold(events: ConversationEvent[]): Turn {
  const [first, ...rest] = events;
  if (first?.type !== 'turn-start') throw new Error(`the stream began with ${first?.type}`);
  return rest.reduce(applyConversationEvent, first.turn);
}

function lastTurn(events: ConversationEvent[]): Turn {
  const last = events[events.length - 1];
  if (last?.type !== 'turn-end') throw new Error(`the stream ended with ${last?.type}`);
  return last.turn;
}

async function waitFor<T>(probe: () => Promise<T | undefined>, what: string, ms = 20_000): Promise<T> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    const value = await probe();
    if (value !== undefined) return value;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`timed out waiting for ${what}`);
}

describe('conversations without a model (notebook)', () => {
  let server: Server;
  let api: Client;

  beforeAll(async () => {
    server = await startTestServer({ webRoot: false });
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
    expect(history.title).toBe('x = 20 print("x is", x)');
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
    await waitFor(async () => ((await api.json<Conversation>(base)).busy ? true : undefined), 'the cell to start');
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

describe('conversations with a scripted model', () => {
  let server: Server;
  let api: Client;
  let provider: FakeProvider;

  beforeAll(async () => {
    provider = await startFakeOpenAI([]);
    const model = createChatModel({ provider: 'openai', model: 'scripted', baseURL: provider.baseURL, apiKey: 'k' });
    server = await startTestServer({ model, webRoot: false, preloadModules: ['pandas', 'matplotlib'] });
    api = client(server);
  });
  afterAll(async () => {
    await server?.close();
    await provider?.close();
  });

  async function newConversation(): Promise<string> {
    const conversation = await api.json<Conversation>('/v1/conversations', { method: 'POST', json: {} });
    return `/v1/conversations/${conversation.id}`;
  }

  it('streams a whole analysis: upload, code, table, chart by URL, answer; the model saw the preview', async () => {
    const base = await newConversation();
    const form = new FormData();
    form.append('file', new Blob([await readFile(TRAFFIC_CSV)]), 'traffic_accidents.csv');
    expect((await api(`${base}/files`, { method: 'POST', body: form })).status).toBe(201);
    const code = [
      'import pandas as pd',
      'import matplotlib.pyplot as plt',
      "df = pd.read_csv('/mnt/data/traffic_accidents.csv')",
      'print(df.shape)',
      "corr = df.corr()['accidents'].drop('accidents').sort_values()",
      "corr.plot.barh(); plt.title('Correlation with accidents'); plt.show()",
      'corr.to_frame()',
    ].join('\n');
    provider.enqueue(
      { text: 'Let me look at the data.', toolCalls: [{ name: 'execute_python_code', arguments: { code } }] },
      { text: 'Traffic density matters most.' },
    );
    const events = await readEvents(await sse(api, `${base}/messages`, { content: 'What drives accidents?' }));
    const types = events.map((event) => event.type);
    expect(types[0]).toBe('turn-start');
    expect(types).toContain('answer-delta');
    expect(types.indexOf('code-ready')).toBeLessThan(types.indexOf('execution-start'));
    expect(types.indexOf('execution-start')).toBeLessThan(types.indexOf('execution-end'));
    expect(types.slice(-2)).toEqual(['answer-end', 'turn-end']);
    const turn = lastTurn(events);
    expect(fold(events)).toEqual(turn);
    expect(turn.status).toBe('done');
    expect(turn.steps.map((step) => step.type)).toEqual(['text', 'code', 'text']);
    expect(turn.steps[0]).toEqual({ type: 'text', text: 'Let me look at the data.' });
    expect(turn.steps[2]).toEqual({ type: 'text', text: 'Traffic density matters most.' });
    const step = turn.steps[1];
    if (step?.type !== 'code') throw new Error('no code step');
    expect(step.status).toBe('ok');
    expect(step.stdout).toBe('(8756, 10)\n');
    const table = step.results.find((result) => typeof result.data['text/html'] === 'string');
    expect(table?.data['text/html']).toMatch(/<table[\s\S]*traffic_density/);
    const chart = step.results.find((result) => result.images?.length);
    const url = chart?.images?.[0]?.url ?? '';
    expect(url).toMatch(new RegExp(`^${base}/images/[a-f0-9]{20}\\.png$`));
    expect(JSON.stringify(turn)).not.toMatch(/iVBORw0KGgo/); // no base64 PNG anywhere in the turn
    const image = await api(url);
    expect(image.headers.get('content-type')).toBe('image/png');
    expect(
      Buffer.from(await image.arrayBuffer())
        .subarray(0, 8)
        .toString('hex'),
    ).toBe(PNG_SIGNATURE);
    expect(step.files.some((file) => file.kind === 'figure')).toBe(true);
    // The model was given the upload's preview with its instructions.
    const instructions = JSON.stringify(provider.requests[provider.requests.length - 2]?.body.messages[0]);
    expect(instructions).toMatch(/traffic_accidents\.csv/);
    expect(instructions).toMatch(/8756 rows/);
    const listed = await api.json<{ conversations: { id: string; title: string }[] }>('/v1/conversations');
    expect(listed.conversations[0]?.title).toBe('What drives accidents?');

    // The notebook export holds the question, the code with its outputs (the chart as PNG) and the answer.
    const exported = await api(`${base}/notebook`);
    expect(exported.headers.get('content-type')).toBe('application/x-ipynb+json');
    expect(exported.headers.get('content-disposition')).toMatch(/attachment; filename="What drives accidents.ipynb"/);
    const notebook = (await exported.json()) as {
      nbformat: number;
      nbformat_minor: number;
      cells: { cell_type: string; id: string; source: string[]; outputs?: Record<string, unknown>[] }[];
    };
    expect([notebook.nbformat, notebook.nbformat_minor]).toEqual([4, 5]);
    const sources = notebook.cells.map((cell) => `${cell.cell_type}: ${cell.source.join('')}`);
    expect(sources.some((source) => source.startsWith('markdown: **Files added**'))).toBe(true);
    expect(sources).toContain('markdown: **Question:**\n\n> What drives accidents?');
    expect(sources).toContain(`code: ${code}`);
    expect(sources[sources.length - 1]).toBe('markdown: Traffic density matters most.');
    const codeCell = notebook.cells.find((cell) => cell.cell_type === 'code');
    const outputs = codeCell?.outputs ?? [];
    expect(outputs[0]).toEqual({ output_type: 'stream', name: 'stdout', text: ['(8756, 10)\n'] });
    const png = outputs.find((output) => (output.data as Record<string, unknown> | undefined)?.['image/png']);
    const pngData = (png?.data as Record<string, string> | undefined)?.['image/png'] ?? '';
    expect(Buffer.from(pngData, 'base64').subarray(0, 8).toString('hex')).toBe(PNG_SIGNATURE);
    expect(new Set(notebook.cells.map((cell) => cell.id)).size).toBe(notebook.cells.length);
  });

  it('approval mode: code waits; run, edit and skip are applied; a second answer is a conflict', async () => {
    const base = await newConversation();
    provider.enqueue(
      { toolCalls: [{ id: 'call_run', name: 'execute_python_code', arguments: { code: 'print("ran as written")' } }] },
      { toolCalls: [{ id: 'call_edit', name: 'execute_python_code', arguments: { code: 'print("model code")' } }] },
      { toolCalls: [{ id: 'call_skip', name: 'execute_python_code', arguments: { code: 'print("never")' } }] },
      { text: 'Done.' },
    );
    const response = await api(`${base}/messages`, {
      method: 'POST',
      json: { content: 'Run three things', approval: 'ask' },
      headers: { accept: 'text/event-stream' },
    });
    const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
    let buffer = '';
    const seen: ConversationEvent[] = [];
    const nextApproval = async (): Promise<Extract<ConversationEvent, { type: 'approval-request' }>> => {
      for (;;) {
        const block = buffer.indexOf('\n\n');
        if (block >= 0) {
          const event = JSON.parse(/^data: (.+)$/m.exec(buffer.slice(0, block))![1]!) as ConversationEvent;
          buffer = buffer.slice(block + 2);
          seen.push(event);
          if (event.type === 'approval-request') return event;
          continue;
        }
        const { value, done } = await reader.read();
        if (done) throw new Error('the stream ended before an approval request');
        buffer += value;
      }
    };
    const first = await nextApproval();
    expect(first).toMatchObject({ callId: 'call_run', code: 'print("ran as written")' });
    // The conversation shows the waiting step to a client that reloads.
    const waiting = (await api.json<Conversation>(base)).turns[0]?.steps[0];
    expect(waiting).toMatchObject({ type: 'code', status: 'awaiting-approval', approvalId: first.approvalId });
    const approvalUrl = (id: string) => `${base}/approvals/${id}`;
    expect(await api.json(approvalUrl(first.approvalId), { method: 'POST', json: { decision: 'run' } })).toEqual({
      approvalId: first.approvalId,
      decision: 'run',
    });
    const again = await api(approvalUrl(first.approvalId), { method: 'POST', json: { decision: 'run' } });
    expect(again.status).toBe(409);
    const second = await nextApproval();
    const noCode = await api(approvalUrl(second.approvalId), { method: 'POST', json: { decision: 'edit' } });
    expect(noCode.status).toBe(400);
    await api.json(approvalUrl(second.approvalId), {
      method: 'POST',
      json: { decision: 'edit', code: 'print("edited by the user")' },
    });
    const third = await nextApproval();
    await api.json(approvalUrl(third.approvalId), { method: 'POST', json: { decision: 'skip', reason: 'not now' } });
    const unknown = await api(approvalUrl('00000000-0000-4000-8000-000000000000'), {
      method: 'POST',
      json: { decision: 'run' },
    });
    expect(unknown.status).toBe(404);
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += value;
    }
    const rest = buffer
      .split('\n\n')
      .filter((block) => block.trim())
      .map((block) => JSON.parse(/^data: (.+)$/m.exec(block)![1]!) as ConversationEvent);
    const turn = lastTurn([...seen, ...rest]);
    expect(fold([...seen, ...rest])).toEqual(turn);
    const steps = turn.steps.filter((step) => step.type === 'code');
    expect(steps.map((step) => [step.callId, step.status, step.stdout])).toEqual([
      ['call_run', 'ok', 'ran as written\n'],
      ['call_edit', 'ok', 'edited by the user\n'],
      ['call_skip', 'skipped', ''],
    ]);
    expect(steps[1]).toMatchObject({ code: 'print("model code")', ranCode: 'print("edited by the user")' });
    expect(steps[2]).toMatchObject({ skipReason: 'declined' });
    expect(steps.every((step) => step.approvalId === undefined)).toBe(true);
    // The model was told about the edit and the skip (with the reason).
    const toolMessages = JSON.stringify(provider.requests[provider.requests.length - 1]?.body.messages);
    expect(toolMessages).toMatch(/edited/i);
    expect(toolMessages).toMatch(/not now/);
  });

  it('cancel while code waits for approval skips it and ends the turn as cancelled', async () => {
    const base = await newConversation();
    provider.enqueue({ toolCalls: [{ name: 'execute_python_code', arguments: { code: 'print(1)' } }] });
    const running = sse(api, `${base}/messages`, { content: 'wait for me', approval: 'ask' });
    await waitFor(async () => {
      const step = (await api.json<Conversation>(base)).turns[0]?.steps[0];
      return step?.type === 'code' && step.status === 'awaiting-approval' ? step : undefined;
    }, 'the approval request');
    await api.json(`${base}/cancel`, { method: 'POST' });
    const turn = lastTurn(await readEvents(await running));
    expect(turn.status).toBe('cancelled');
    expect(turn.steps[0]).toMatchObject({ type: 'code', status: 'skipped' });
    expect((await api.json<Conversation>(base)).busy).toBe(false);
  });

  it('a model that fails ends the turn with a typed error; the conversation goes on', async () => {
    const base = await newConversation();
    provider.enqueue({ status: 400, message: 'This model does not exist.' }, { text: 'Back again.' });
    const failed = lastTurn(await readEvents(await sse(api, `${base}/messages`, { content: 'hello' })));
    expect(failed.status).toBe('error');
    expect(failed.error?.code).toBe('model-error');
    expect(failed.error?.message).toMatch(/does not exist/);
    const ok = lastTurn(await readEvents(await sse(api, `${base}/messages`, { content: 'hello again' })));
    expect(ok.status).toBe('done');
    expect(ok.steps).toEqual([{ type: 'text', text: 'Back again.' }]);
  });
});

describe('conversations are per key', () => {
  let server: Server;

  beforeAll(async () => {
    server = await startTestServer({ apiKeys: ['alice:alice-key-123', 'bob:bob-key-4567'], webRoot: false });
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

describe('the web UI is served at / with a strict CSP', () => {
  let server: Server;
  let root: string;

  beforeAll(async () => {
    root = await mkdtemp(path.join(os.tmpdir(), 'sandcell-web-'));
    await mkdir(path.join(root, 'assets'));
    await writeFile(path.join(root, 'index.html'), '<!doctype html><title>sandcell</title><div id="app"></div>');
    await writeFile(path.join(root, 'assets', 'app-1234.js'), 'console.log(1)');
    server = await startTestServer({ webRoot: root });
  });
  afterAll(async () => {
    await server?.close();
    await rm(root, { recursive: true, force: true });
  });

  it('serves the app and its assets, with the CSP and without letting paths escape', async () => {
    const api = client(server);
    const page = await api('/');
    expect(page.status).toBe(200);
    expect(await page.text()).toMatch(/<div id="app">/);
    expect(page.headers.get('content-security-policy')).toBe(WEB_CSP);
    expect(WEB_CSP).toMatch(/script-src 'self'(;|$)/);
    expect(WEB_CSP).not.toMatch(/unsafe-inline|unsafe-eval/);
    expect(page.headers.get('x-frame-options')).toBe('DENY');
    const deep = await api('/conversations/some-id', { headers: { accept: 'text/html,*/*;q=0.8' } });
    expect(await deep.text()).toMatch(/<div id="app">/);
    expect((await api('/conversations/some-id')).status).toBe(404); // an API client gets JSON, not the page
    const asset = await api('/assets/app-1234.js');
    expect(asset.headers.get('content-type')).toMatch(/^text\/javascript/);
    expect(asset.headers.get('cache-control')).toMatch(/immutable/);
    expect(asset.headers.get('content-encoding')).toBe('gzip'); // fetch asked for gzip and decoded it
    expect(await asset.text()).toBe('console.log(1)');
    expect((await api('/assets/missing.js')).status).toBe(404);
    for (const outside of ['/%2e%2e/%2e%2e/etc/passwd', '/assets/..%2f..%2f..%2f..%2f..%2fetc%2fpasswd']) {
      const response = await api(outside);
      expect(await response.text()).not.toMatch(/root:x:0:0/);
    }
    const apiMiss = await api('/v1/nothing-here');
    expect(apiMiss.status).toBe(404);
    expect(((await apiMiss.json()) as { error: { code: string } }).error.code).toBe('route-not-found');
  });

  it('says how to build the UI when it is not built', async () => {
    const unbuilt = await startTestServer({ webRoot: path.join(root, 'nothing'), poolSize: 0 });
    try {
      const page = await client(unbuilt)('/');
      expect(page.status).toBe(503);
      expect(await page.text()).toMatch(/npm run build/);
    } finally {
      await unbuilt.close();
    }
  });
});

describe('sandcell serve configures the model from its flags', () => {
  it('--base-url/--model/--approve: the conversations use that model and ask for approval by default', async () => {
    const provider = await startFakeOpenAI([{ text: 'Hello from the scripted model.' }]);
    const child = spawn(
      process.execPath,
      [
        BIN,
        'serve',
        '--port',
        '0',
        '--pool-size',
        '1',
        '--preload',
        'none',
        '--no-ui',
        '--base-url',
        provider.baseURL,
        '--model',
        'scripted',
        '--approve',
      ],
      { stdio: ['ignore', 'pipe', 'inherit'], env: { ...process.env, ...NO_MODEL_ENV } },
    );
    const exited = new Promise((resolve) => child.once('exit', resolve));
    try {
      const logs: Record<string, unknown>[] = [];
      const url = await new Promise<string>((resolve, reject) => {
        createInterface({ input: child.stdout }).on('line', (line) => {
          const entry = JSON.parse(line) as Record<string, unknown>;
          logs.push(entry);
          if (typeof entry.url === 'string') resolve(entry.url);
        });
        child.once('exit', (code) => reject(new Error(`serve exited early (${code})`)));
      });
      const config = (await (await fetch(`${url}/v1/config`)).json()) as Record<string, unknown>;
      expect(config.model).toEqual({ provider: 'openai', model: 'scripted' });
      expect(config.approvalDefault).toBe('ask');
      const created = (await (await fetch(`${url}/v1/conversations`, { method: 'POST' })).json()) as Conversation;
      const turn = (await (
        await fetch(`${url}/v1/conversations/${created.id}/messages`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ content: 'hello' }),
        })
      ).json()) as Turn;
      expect(turn.steps).toEqual([{ type: 'text', text: 'Hello from the scripted model.' }]);
      expect(logs.some((entry) => String(entry.msg).includes('conversations use openai model scripted'))).toBe(true);
    } finally {
      child.kill('SIGTERM');
      await exited;
      await provider.close();
    }
  });

  it('a model named wrongly stops serve with a usage error', async () => {
    const wrong = await runProcess(process.execPath, [BIN, 'serve', '--port', '0', '--provider', 'nonesuch'], {
      env: NO_MODEL_ENV,
    });
    expect(wrong.code).toBe(2);
    expect(wrong.stderr).toMatch(/Unknown provider "nonesuch"/);
  });
});
