/**
 * The reference scenario end to end, for both providers: the official SDK
 * talks to a fake provider on 127.0.0.1 replaying a scripted conversation, and
 * the code the scripted model writes really runs on pandas in a bubblewrap
 * session. The agents' own logic (approvals, limits, reports) runs on the
 * scripted model and backend in src/agents/data-chat.test.ts; the adapters'
 * wire format and retries are in src/agents/providers/chat-models.test.ts.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import {
  type AgentEvent,
  AnthropicChatModel,
  type ChatModel,
  DataChat,
  type DataChatOptions,
  OpenAIChatModel,
} from '../src/agents/index.js';
import {
  type FakeProvider,
  type ScriptedResponse,
  startFakeAnthropic,
  startFakeOpenAI,
} from './support/fake-providers.js';
import { type Dialect, instructions, toolNames, toolResults } from './support/wire.js';

const root = path.resolve(import.meta.dirname, '..');
const trafficCsv = path.join(root, 'examples', 'traffic-accidents', 'traffic_accidents.csv');
const workspace = mkdtempSync(path.join(os.tmpdir(), 'sandcell-agents-'));
afterAll(() => rmSync(workspace, { recursive: true, force: true }));

const run = (code: string) => ({ name: 'execute_python_code', arguments: { code } });

describe.each<Dialect>(['openai', 'anthropic'])('agents with the %s provider', (dialect) => {
  let provider: FakeProvider | undefined;
  let chat: DataChat | undefined;

  afterEach(async () => {
    await chat?.close();
    await provider?.close();
    chat = undefined;
    provider = undefined;
  });

  async function startModel(script: ScriptedResponse[], options: { stream?: boolean } = {}): Promise<ChatModel> {
    provider = dialect === 'openai' ? await startFakeOpenAI(script) : await startFakeAnthropic(script);
    const common = { baseURL: provider.baseURL, apiKey: 'test-key', maxRetries: 2, timeoutMs: 20_000, ...options };
    return dialect === 'openai'
      ? new OpenAIChatModel({ ...common, model: 'gpt-test' })
      : new AnthropicChatModel({ ...common, model: 'claude-test' });
  }

  async function startChat(script: ScriptedResponse[], options: Partial<DataChatOptions> = {}) {
    const model = await startModel(script);
    const events: AgentEvent[] = [];
    chat = await DataChat.create({ model, onEvent: (event) => events.push(event), ...options });
    return { chat, events, provider: provider! };
  }

  it('reads the traffic data, runs the code the model wrote, and answers from its real output', async () => {
    const code =
      'import pandas as pd\ndf = pd.read_csv("/mnt/data/traffic_accidents.csv")\nprint(df.shape)\nprint(round(df.corr()["accidents"]["traffic_fine_amount"], 4))';
    const { chat, events, provider } = await startChat(
      [
        { text: 'Let me compute that.', toolCalls: [run(code)] },
        { text: 'Higher fines go with fewer accidents (r = -0.745).' },
      ],
      { data: [trafficCsv], context: 'accidents: number of recorded accidents.' },
    );
    expect(chat.loaded).toHaveLength(1);
    expect(chat.loaded[0]).toMatchObject({ sessionPath: '/mnt/data/traffic_accidents.csv', rows: 8756, format: 'csv' });
    const answer = await chat.ask('Do fines reduce accidents?');
    expect(answer).toMatchObject({
      stopReason: 'answer',
      steps: 2,
      text: 'Higher fines go with fewer accidents (r = -0.745).',
    });
    expect(answer.executions).toHaveLength(1);
    expect(answer.executions[0]!.execution!.stdout).toBe('(8756, 10)\n-0.7452\n');
    expect(answer.usage.inputTokens).toBeGreaterThan(0);

    const [first, second] = provider.requests;
    const prompt = instructions(dialect, first!);
    expect(prompt).toContain('/mnt/data/traffic_accidents.csv');
    expect(prompt).toContain('8756 rows × 10 columns');
    expect(prompt).toMatch(/traffic_lights\s+float64/);
    expect(prompt).toMatch(/accidents\s+int64/);
    expect(prompt).toContain('accidents: number of recorded accidents.');
    expect(toolNames(dialect, first!)).toEqual(['execute_python_code', 'run_shell_command']);
    expect(first!.body.stream).toBe(true);
    const [result] = toolResults(dialect, second!);
    expect(result!.content).toContain('Status: ok');
    expect(result!.content).toContain('-0.7452');
    expect(events.map((event) => event.type)).toEqual(
      expect.arrayContaining([
        'file-loaded',
        'step-start',
        'code-ready',
        'execution-start',
        'stdout-delta',
        'execution-end',
        'answer-delta',
        'answer-end',
      ]),
    );
    const deltas = events.flatMap((event) => (event.type === 'answer-delta' ? [event.text] : [])).join('');
    expect(deltas).toContain('Higher fines go with fewer accidents');
  });
});
