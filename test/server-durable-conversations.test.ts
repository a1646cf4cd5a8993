/**
 * Conversations survive a restart, for real: `sandcell serve --state-dir`
 * on bubblewrap, a scripted OpenAI-compatible model (the real SDK against a
 * local fake), an upload and a matplotlib chart; the server is SIGKILLed
 * while a turn's code runs, then started again on the same directory. The
 * history is there (the killed turn says the server stopped), read-only (its
 * session lost: a killed server pauses nothing; a stopped one does, see
 * server-conversation-resume.test.ts), with
 * its chart and export; each key sees only its own; continuing starts a new
 * conversation whose model was told the history and that re-ran nothing.
 */
import { spawn } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Conversation, ConversationSummary, Turn } from '../src/protocol/index.js';
import { type FakeProvider, startFakeOpenAI } from './support/fake-providers.js';
import { runProcess } from './support/process.js';

const BIN = path.resolve('bin/sandcell.js');
const ALICE = 'alice-durable-secret-1';
const BOB = 'bob-durable-secret-22';
const PNG_SIGNATURE = '89504e470d0a1a0a';
const MODEL_FREE_ENV = {
  SANDCELL_API_KEYS: '',
  SANDCELL_PROVIDER: '',
  SANDCELL_MODEL: '',
  OPENAI_API_KEY: 'not-used',
  OPENAI_BASE_URL: '',
  ANTHROPIC_API_KEY: '',
  SANDCELL_CONFIG: '',
  XDG_CONFIG_HOME: path.join(os.tmpdir(), 'sandcell-no-config'),
};

interface Serve {
  url: string;
  pid: number;
  kill(signal: NodeJS.Signals): Promise<void>;
}

async function serve(stateDirectory: string, provider: FakeProvider): Promise<Serve> {
  const child = spawn(
    process.execPath,
    [
      BIN,
      'serve',
      '--port',
      '0',
      '--pool-size',
      '0',
      '--preload',
      'matplotlib',
      '--no-ui',
      '--base-url',
      provider.baseURL,
      '--model',
      'scripted',
      '--api-key',
      ALICE,
      '--api-key',
      BOB,
      '--state-dir',
      stateDirectory,
    ],
    { stdio: ['ignore', 'pipe', 'inherit'], env: { ...process.env, ...MODEL_FREE_ENV } },
  );
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const url = await new Promise<string>((resolve, reject) => {
    createInterface({ input: child.stdout }).on('line', (line) => {
      const entry = JSON.parse(line) as Record<string, unknown>;
      if (typeof entry.url === 'string') resolve(entry.url);
    });
    child.once('exit', (code) => reject(new Error(`serve exited early (${code})`)));
  });
  return {
    url,
    pid: child.pid as number,
    kill: async (signal) => {
      child.kill(signal);
      await exited;
    },
  };
}

function api(server: Serve, key: string) {
  const call = (route: string, init: RequestInit & { json?: unknown } = {}) => {
    const headers = new Headers(init.headers);
    headers.set('authorization', `Bearer ${key}`);
    if (init.json !== undefined) headers.set('content-type', 'application/json');
    const body = init.json !== undefined ? JSON.stringify(init.json) : init.body;
    return fetch(`${server.url}${route}`, { ...init, headers, body });
  };
  const json = async <T>(route: string, init?: RequestInit & { json?: unknown }): Promise<T> => {
    const response = await call(route, init);
    const text = await response.text();
    if (!response.ok) throw new Error(`${route} → ${response.status}: ${text}`);
    return JSON.parse(text) as T;
  };
  return Object.assign(call, { json });
}

async function stateFilesText(directory: string): Promise<string> {
  const entries = await readdir(directory, { recursive: true, withFileTypes: true });
  const files = entries.filter((entry) => entry.isFile()).map((entry) => path.join(entry.parentPath, entry.name));
  return (await Promise.all(files.map((file) => readFile(file, 'utf8')))).join('\n');
}

const run = (code: string) => ({ toolCalls: [{ name: 'execute_python_code', arguments: { code } }] });
const CHART = "import matplotlib.pyplot as plt\nplt.plot([3, 1, 2])\nplt.title('sales')\nplt.show()";
const SLOW = "import time\nprint('working on it', flush=True)\ntime.sleep(600)";

describe('sandcell serve --state-dir: conversations survive a SIGKILL', () => {
  let stateDirectory: string;
  let provider: FakeProvider;
  let server: Serve | undefined;

  beforeAll(async () => {
    stateDirectory = await mkdtemp(path.join(os.tmpdir(), 'sandcell-durable-'));
    provider = await startFakeOpenAI([]);
  });
  afterAll(async () => {
    await server?.kill('SIGTERM');
    await provider?.close();
    await rm(stateDirectory, { recursive: true, force: true });
  });

  it('keeps the history through a kill mid-turn: read-only, exported, continued, per key', async () => {
    server = await serve(stateDirectory, provider);
    const alice = api(server, ALICE);
    const bob = api(server, BOB);
    const conversation = await alice.json<Conversation>('/v1/conversations', { method: 'POST', json: {} });
    const base = `/v1/conversations/${conversation.id}`;
    const bobs = await bob.json<Conversation>('/v1/conversations', { method: 'POST', json: { title: 'mine' } });

    const form = new FormData();
    form.append('file', new Blob(['month,sales\njan,3\nfeb,1\nmar,2\n']), 'sales.csv');
    expect((await alice(`${base}/files`, { method: 'POST', body: form })).status).toBe(201);
    provider.enqueue(run(CHART), { text: 'Sales dipped in February.' });
    const charted = await alice.json<Turn>(`${base}/messages`, { method: 'POST', json: { content: 'Plot the sales' } });
    expect(charted.status).toBe('done');
    const chartStep = charted.steps.find((step) => step.type === 'code');
    const imageUrl =
      chartStep?.type === 'code' ? (chartStep.results.find((r) => r.images)?.images?.[0]?.url ?? '') : '';
    expect(imageUrl).toMatch(/\/images\/[a-f0-9]{20}\.png$/);

    // A turn whose code is running when the server is killed.
    provider.enqueue(run(SLOW));
    const streaming = await alice(`${base}/messages?stream=ndjson`, { method: 'POST', json: { content: 'Go slow' } });
    const reader = (streaming.body as ReadableStream<Uint8Array>).pipeThrough(new TextDecoderStream()).getReader();
    let streamed = '';
    while (!streamed.includes('"stdout-delta"') || !streamed.includes('working on it')) {
      const { value, done } = await reader.read();
      if (done) throw new Error(`the turn ended before its code printed: ${streamed}`);
      streamed += value;
    }
    await reader.cancel(); // the client goes; the turn goes on (until the kill)
    // The running turn is written at most a second after its output: kill once it is on disk. The output as
    // JSON (`working on it\n`, the newline escaped): the code's own text, written first, names it too.
    await expect.poll(() => stateFilesText(stateDirectory), { timeout: 30_000 }).toContain('working on it\\n');
    await server.kill('SIGKILL');
    server = undefined;

    server = await serve(stateDirectory, provider);
    const aliceAgain = api(server, ALICE);
    const bobAgain = api(server, BOB);
    const listed = await aliceAgain.json<{ conversations: ConversationSummary[] }>('/v1/conversations');
    expect(listed.conversations.map((each) => each.id)).toEqual([conversation.id]);
    const history = await aliceAgain.json<Conversation>(base);
    // A killed server paused nothing: the session is lost, and the conversation says why.
    expect(history).toMatchObject({
      status: 'expired',
      expiredReason:
        'was lost, its state could not be kept: the server stopped without pausing it (a crash, or it was killed)',
    });
    expect(history.title).toBe('Plot the sales');
    expect(history.turns.map((turn) => [turn.kind, turn.status])).toEqual([
      ['upload', 'done'],
      ['message', 'done'],
      ['message', 'error'],
    ]);
    const [upload, chart, killed] = history.turns;
    expect(upload!.files?.[0]).toMatchObject({ path: 'sales.csv', format: 'csv', rows: 3 });
    expect(chart).toEqual(charted);
    expect(killed!.error?.code).toBe('server-restarted');
    const killedStep = killed!.steps.find((step) => step.type === 'code');
    expect(killedStep).toMatchObject({ code: SLOW, stdout: 'working on it\n', status: 'skipped' });

    const image = await aliceAgain(imageUrl);
    expect(image.status).toBe(200);
    expect(
      Buffer.from(await image.arrayBuffer())
        .subarray(0, 8)
        .toString('hex'),
    ).toBe(PNG_SIGNATURE);
    const exported = await aliceAgain(`${base}/notebook`);
    expect(exported.status).toBe(200);
    expect(await exported.text()).toMatch(/"image\/png": "iVBORw0KGgo/);

    // Read-only: nothing runs in a conversation whose session is gone.
    const refused = await aliceAgain(`${base}/messages`, { method: 'POST', json: { content: 'more' } });
    expect(refused.status).toBe(410);
    expect(((await refused.json()) as { error: { message: string } }).error.message).toMatch(/continue/);

    // Each key sees its own, and only its own.
    const bobList = await bobAgain.json<{ conversations: ConversationSummary[] }>('/v1/conversations');
    expect(bobList.conversations.map((each) => each.id)).toEqual([bobs.id]);
    expect((await bobAgain(base)).status).toBe(404);
    expect((await bobAgain(imageUrl)).status).toBe(404);

    // Continue: a new conversation, its model told the history; no code runs unless the model asks.
    const requestsBefore = provider.requests.length;
    const continued = await aliceAgain.json<Conversation>(`${base}/continue`, { method: 'POST' });
    expect(continued).toMatchObject({ status: 'active', turnCount: 0, continuedFrom: { id: conversation.id } });
    provider.enqueue({ text: 'We plotted monthly sales; February dipped.' });
    const answered = await aliceAgain.json<Turn>(`/v1/conversations/${continued.id}/messages`, {
      method: 'POST',
      json: { content: 'What did we find?' },
    });
    expect(answered.steps).toEqual([{ type: 'text', text: 'We plotted monthly sales; February dipped.' }]);
    const told = provider.requests
      .slice(requestsBefore)
      .map((request) => request.raw)
      .join('\n');
    expect(told).toMatch(/continues an earlier one whose session has ended/);
    expect(told).toContain('Plot the sales');
    expect(told).toContain("plt.title('sales')");
    const fresh = await aliceAgain.json<{ entries?: unknown[]; files?: { path: string }[] }>(
      `/v1/sessions/${continued.sessionId}/files`,
    );
    expect(JSON.stringify(fresh)).not.toContain('sales.csv'); // uploads lived in the old sandbox
  });

  it('refuses to start on a state directory it cannot write, naming the flag', async () => {
    const blocked = path.join(stateDirectory, 'not-a-directory');
    await writeFile(blocked, '');
    const result = await runProcess(process.execPath, [BIN, 'serve', '--port', '0', '--state-dir', blocked], {
      env: MODEL_FREE_ENV,
    });
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(`Cannot keep conversations in ${blocked}`);
    expect(result.stderr).toContain('--state-dir');
  });
});
