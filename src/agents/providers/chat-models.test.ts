/**
 * The OpenAI and Anthropic adapters on the wire: the official SDK talks to a
 * fake provider on 127.0.0.1, and each ChatRequest must arrive in the
 * provider's own format (instructions, tools, tool choice, tool calls and
 * their results by id), each answer come back as a ChatResponse (streamed or
 * not), and 429/5xx be retried. The agents' logic above the adapters runs on
 * the scripted model (src/agents/data-chat.test.ts).
 */
import { afterEach, describe, expect, it } from 'vitest';
import {
  type FakeProvider,
  type ScriptedResponse,
  startFakeAnthropic,
  startFakeOpenAI,
} from '../../../test/support/fake-providers.js';
import {
  type Dialect,
  instructions,
  toolCallIds,
  toolChoice,
  toolNames,
  toolResults,
} from '../../../test/support/wire.js';
import { ModelConfigurationError, ModelResponseError } from '../errors.js';
import type { ChatMessage, ChatModel, ChatRequest } from '../model.js';
import { AnthropicChatModel } from './anthropic.js';
import { OpenAIChatModel } from './openai.js';

const tools = ['execute_python_code', 'run_shell_command'].map((name) => ({
  name,
  description: `The ${name} tool.`,
  parameters: { type: 'object', properties: { code: { type: 'string' } } },
}));

/** A history with one assistant turn of two tool calls, the second answered with an error. */
const history: ChatMessage[] = [
  { role: 'user', content: 'What is 21 doubled?' },
  {
    role: 'assistant',
    content: '',
    toolCalls: [
      { id: 'call_a', name: 'execute_python_code', arguments: '{"code":"x = 21"}' },
      { id: 'call_b', name: 'execute_python_code', arguments: '{"code":"print(x * 2)"}' },
    ],
  },
  { role: 'tool', toolCallId: 'call_a', name: 'execute_python_code', content: 'Status: ok' },
  {
    role: 'tool',
    toolCallId: 'call_b',
    name: 'execute_python_code',
    content: 'Attempt 1 of 3 failed: NameError',
    isError: true,
  },
];

describe.each<Dialect>(['openai', 'anthropic'])('the %s adapter', (dialect) => {
  let provider: FakeProvider | undefined;

  afterEach(async () => {
    await provider?.close();
    provider = undefined;
  });

  async function startModel(script: ScriptedResponse[], options: { stream?: boolean } = {}): Promise<ChatModel> {
    provider = dialect === 'openai' ? await startFakeOpenAI(script) : await startFakeAnthropic(script);
    const common = { baseURL: provider.baseURL, apiKey: 'test-key', maxRetries: 2, timeoutMs: 20_000, ...options };
    return dialect === 'openai'
      ? new OpenAIChatModel({ ...common, model: 'gpt-test' })
      : new AnthropicChatModel({ ...common, model: 'claude-test' });
  }

  const request = (extra: Partial<ChatRequest> = {}): ChatRequest => ({
    instructions: 'Work in /mnt/data.',
    messages: history,
    tools,
    toolChoice: 'auto',
    ...extra,
  });

  it('streams by default: sends instructions, tools and the history by id; reassembles text, tool calls and usage', async () => {
    const model = await startModel([
      {
        text: 'Let me compute that, carefully and at length.',
        toolCalls: [
          { id: 'call_c', name: 'execute_python_code', arguments: { code: 'y = x + 1\ny' } },
          { id: 'call_d', name: 'execute_python_code', arguments: '{"code": "print(1)"' },
        ],
      },
    ]);
    const deltas: string[] = [];
    const response = await model.complete(request({ onTextDelta: (text) => deltas.push(text) }));
    expect(response.text).toBe('Let me compute that, carefully and at length.');
    expect(deltas.length).toBeGreaterThan(1);
    expect(deltas.join('')).toBe(response.text);
    expect(response.toolCalls).toEqual([
      { id: 'call_c', name: 'execute_python_code', arguments: '{"code":"y = x + 1\\ny"}' },
      // Malformed JSON arrives as written, for the agent to hand back as a tool error.
      { id: 'call_d', name: 'execute_python_code', arguments: '{"code": "print(1)"' },
    ]);
    expect(response.finishReason).toBe(dialect === 'openai' ? 'tool_calls' : 'tool_use');
    expect(response.usage?.inputTokens).toBeGreaterThan(0);

    const sent = provider!.requests[0]!;
    expect(sent.body.stream).toBe(true);
    expect(instructions(dialect, sent)).toBe('Work in /mnt/data.');
    expect(toolNames(dialect, sent)).toEqual(['execute_python_code', 'run_shell_command']);
    expect(toolChoice(dialect, sent)).toBe('auto');
    expect(toolCallIds(dialect, sent)).toEqual(['call_a', 'call_b']);
    const results = toolResults(dialect, sent);
    expect(results.map((result) => [result.id, result.content, result.isError])).toEqual([
      ['call_a', 'Status: ok', false],
      ['call_b', 'Attempt 1 of 3 failed: NameError', true],
    ]);
  });

  it('asks for an answer in words with toolChoice none', async () => {
    const model = await startModel([{ text: 'So far n is 2.' }]);
    const response = await model.complete(request({ toolChoice: 'none' }));
    expect(response).toMatchObject({ text: 'So far n is 2.', toolCalls: [] });
    expect(toolChoice(dialect, provider!.requests[0]!)).toBe('none');
  });

  it('works without streaming too', async () => {
    const model = await startModel(
      [
        { toolCalls: [{ id: 'call_e', name: 'execute_python_code', arguments: { code: 'print(2 ** 10)' } }] },
        { text: '1024.' },
      ],
      { stream: false },
    );
    const first = await model.complete(request());
    expect(first.toolCalls).toEqual([
      { id: 'call_e', name: 'execute_python_code', arguments: '{"code":"print(2 ** 10)"}' },
    ]);
    const deltas: string[] = [];
    const second = await model.complete(request({ onTextDelta: (text) => deltas.push(text) }));
    expect(second.text).toBe('1024.');
    expect(deltas).toEqual(['1024.']);
    expect(provider!.requests[0]!.body.stream).not.toBe(true);
    expect(toolResults(dialect, provider!.requests[1]!)[0]!.content).toBe('Status: ok');
  });

  it('retries after a 429 and a 503, then answers', async () => {
    const model = await startModel([
      { status: 429, message: 'Rate limit reached', headers: { 'retry-after-ms': '20', 'retry-after': '0' } },
      { status: 503, message: 'Overloaded', headers: { 'retry-after-ms': '20' } },
      { text: 'Hello after the retries.' },
    ]);
    const response = await model.complete(request());
    expect(response.text).toBe('Hello after the retries.');
    expect(provider!.requests).toHaveLength(3);
  });

  it("turns the provider's errors into typed ones: 400 a model error, 401 a configuration error naming the key", async () => {
    const model = await startModel([
      { status: 400, message: 'This model does not exist.' },
      { status: 401, message: 'Incorrect API key provided.' },
    ]);
    const failed = await model.complete(request()).catch((error: unknown) => error);
    expect(failed).toBeInstanceOf(ModelResponseError);
    expect(failed).toMatchObject({
      code: 'model-error',
      status: 400,
      message: expect.stringMatching(/does not exist/),
    });
    const refused = await model.complete(request()).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(ModelConfigurationError);
    expect((refused as Error).message).toContain(dialect === 'openai' ? 'OPENAI_API_KEY' : 'ANTHROPIC_API_KEY');
  });
});
