/**
 * /v1/conversations end to end, over real HTTP on a real sandbox: a whole
 * analysis (upload, pandas, a matplotlib chart by URL, the notebook export)
 * asked of the scripted model, and `sandcell serve` configuring the model
 * from its flags (the real SDK in its own process, talking to a fake
 * OpenAI-compatible provider on 127.0.0.1). The
 * conversations' own logic runs on the scripted backend in
 * src/server/conversations/.
 */
import { spawn } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ScriptedChatModel } from '../src/agents/scripted-chat-model.js';
import type { Conversation, Turn } from '../src/protocol/index.js';
import { fold, lastTurn, readEvents, sse } from './support/conversation-events.js';
import { startFakeOpenAI } from './support/fake-providers.js';
import { runProcess } from './support/process.js';
import { type Client, client, startTestServer } from './support/server.js';

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

describe('conversations with a scripted model', () => {
  let server: Server;
  let api: Client;
  let model: ScriptedChatModel;

  beforeAll(async () => {
    model = new ScriptedChatModel();
    server = await startTestServer({ model, webRoot: false, preloadModules: ['pandas', 'matplotlib'] });
    api = client(server);
  });
  afterAll(async () => {
    await server?.close();
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
    model.enqueue(
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
    const instructions = JSON.stringify(model.calls[model.calls.length - 2]?.instructions);
    expect(instructions).toMatch(/traffic_accidents\.csv/);
    expect(instructions).toMatch(/8756 rows/);
    const listed = await api.json<{ conversations: { id: string; title: string }[] }>('/v1/conversations');
    expect(listed.conversations[0]?.title).toBe('What drives accidents?');

    // The notebook export holds the question, the code with its outputs (the chart as PNG) and the answer.
    const exported = await api(`${base}/notebook`);
    expect(exported.headers.get('content-type')).toBe('application/x-ipynb+json');
    expect(exported.headers.get('content-disposition')).toMatch(/attachment; filename="what-drives-accidents.ipynb"/);
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
