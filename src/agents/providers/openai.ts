/**
 * ChatModel on OpenAI's Chat Completions API with the official SDK: OpenAI
 * itself, Azure OpenAI, and any OpenAI-compatible server by base URL (Ollama,
 * vLLM, llama.cpp's server, LM Studio). Streams by default; retries on 429
 * and 5xx are the SDK's own.
 */
import OpenAI, { AzureOpenAI } from 'openai';
import type {
  ChatCompletionChunk,
  ChatCompletionCreateParams,
  ChatCompletionMessageParam,
  ChatCompletionTool,
} from 'openai/resources/chat/completions';
import { ModelConfigurationError } from '../errors.js';
import {
  type ChatMessage,
  type ChatModel,
  type ChatRequest,
  type ChatResponse,
  DEFAULT_MODEL_MAX_RETRIES,
  DEFAULT_MODEL_TIMEOUT_MS,
  type ReasoningEffort,
  type ToolCall,
} from '../model.js';
import { fromOption, mapProviderError, type ProviderContext } from './provider-errors.js';

export const OPENAI_DEFAULT_BASE_URL = 'https://api.openai.com/v1';

export interface OpenAIChatModelOptions {
  /** The model (for Azure: the deployment name). */
  model: string;
  /** @default process.env.OPENAI_API_KEY (Azure: AZURE_OPENAI_API_KEY); not needed for a local server given by `baseURL`. */
  apiKey?: string;
  /** An OpenAI-compatible endpoint, e.g. `http://localhost:11434/v1` for Ollama. @default process.env.OPENAI_BASE_URL, else OpenAI */
  baseURL?: string;
  /** For reasoning models (o3-mini, o4-mini, gpt-5…). */
  reasoningEffort?: ReasoningEffort;
  /** Azure OpenAI instead of OpenAI: the resource endpoint and API version. */
  azure?: { endpoint?: string; apiVersion?: string };
  /** The role the developer prompt is sent as. @default 'developer' for OpenAI's reasoning models, else 'system' */
  instructionsRole?: 'system' | 'developer';
  /** Stream responses (answer text as it comes). Set false for servers that cannot stream tool calls. @default true */
  stream?: boolean;
  /** @default 3 */
  maxRetries?: number;
  /** Per request. @default 120_000 */
  timeoutMs?: number;
  /** Largest answer, in tokens. @default the server's */
  maxOutputTokens?: number;
  /** A fetch implementation for the SDK (proxies, tests). */
  fetch?: typeof fetch;
}

const REASONING_MODEL = /^(o\d|gpt-5)/;
/** A key for servers that need none (Ollama, vLLM): the SDK insists on one, the server ignores it. */
const NO_KEY = 'sandcell-no-key';

export class OpenAIChatModel implements ChatModel {
  readonly provider: 'openai' | 'azure';
  readonly model: string;
  private readonly client: OpenAI;
  private readonly context: ProviderContext;
  private readonly options: OpenAIChatModelOptions;

  constructor(options: OpenAIChatModelOptions) {
    if (!options.model) throw new ModelConfigurationError('Name the model: pass `model` (the --model flag).');
    this.options = options;
    this.model = options.model;
    const common = {
      maxRetries: options.maxRetries ?? DEFAULT_MODEL_MAX_RETRIES,
      timeout: options.timeoutMs ?? DEFAULT_MODEL_TIMEOUT_MS,
      fetch: options.fetch,
    };
    if (options.azure) {
      const endpoint = fromOption(options.azure.endpoint, 'AZURE_OPENAI_ENDPOINT');
      const apiKey = fromOption(options.apiKey, 'AZURE_OPENAI_API_KEY');
      const apiVersion = fromOption(options.azure.apiVersion, 'OPENAI_API_VERSION');
      const missing = [
        !endpoint && 'AZURE_OPENAI_ENDPOINT (or --base-url)',
        !apiKey && 'AZURE_OPENAI_API_KEY',
        !apiVersion && 'OPENAI_API_VERSION (e.g. 2024-10-21)',
      ].filter(Boolean);
      if (missing.length > 0) {
        throw new ModelConfigurationError(`Azure OpenAI needs ${missing.join(', ')}: set them in the environment.`);
      }
      this.provider = 'azure';
      this.client = new AzureOpenAI({ ...common, endpoint, apiKey, apiVersion, deployment: options.model });
      this.context = {
        label: 'Azure OpenAI',
        baseURL: String(endpoint),
        model: options.model,
        keyVariable: 'AZURE_OPENAI_API_KEY',
        baseUrlHint: 'Check AZURE_OPENAI_ENDPOINT.',
      };
      return;
    }
    const baseURL = fromOption(options.baseURL, 'OPENAI_BASE_URL');
    let apiKey = fromOption(options.apiKey, 'OPENAI_API_KEY');
    if (!apiKey) {
      if (!baseURL) {
        throw new ModelConfigurationError(
          'No OpenAI API key: set OPENAI_API_KEY, or use a local OpenAI-compatible server with --base-url (e.g. http://localhost:11434/v1 for Ollama), or choose another provider with --provider anthropic (ANTHROPIC_API_KEY).',
        );
      }
      apiKey = NO_KEY;
    }
    this.provider = 'openai';
    this.client = new OpenAI({ ...common, apiKey, baseURL: baseURL ?? OPENAI_DEFAULT_BASE_URL });
    const compatible = baseURL !== undefined && baseURL.replace(/\/+$/, '') !== OPENAI_DEFAULT_BASE_URL;
    this.context = {
      label: compatible ? 'the OpenAI-compatible server' : 'OpenAI',
      baseURL: baseURL ?? OPENAI_DEFAULT_BASE_URL,
      model: options.model,
      keyVariable: 'OPENAI_API_KEY',
      baseUrlHint: compatible
        ? 'Check --base-url (or OPENAI_BASE_URL) and that the server is running (for Ollama: `ollama serve`).'
        : 'Check the network, or set --base-url (OPENAI_BASE_URL) to reach OpenAI through a proxy or a local server.',
    };
  }

  async complete(request: ChatRequest): Promise<ChatResponse> {
    const stream = this.options.stream ?? true;
    const body: ChatCompletionCreateParams = {
      model: this.model,
      messages: this.toMessages(request),
      ...(request.tools.length > 0
        ? {
            tools: request.tools.map(
              (tool): ChatCompletionTool => ({
                type: 'function',
                function: { name: tool.name, description: tool.description, parameters: tool.parameters },
              }),
            ),
            tool_choice: request.toolChoice ?? 'auto',
          }
        : {}),
      ...(this.options.reasoningEffort ? { reasoning_effort: this.options.reasoningEffort } : {}),
      ...(this.options.maxOutputTokens ? { max_completion_tokens: this.options.maxOutputTokens } : {}),
    };
    try {
      if (!stream) {
        const completion = await this.client.chat.completions.create(
          { ...body, stream: false },
          { signal: request.signal },
        );
        const choice = completion.choices[0];
        const text = choice?.message.content ?? '';
        if (text) request.onTextDelta?.(text);
        return {
          text,
          toolCalls: (choice?.message.tool_calls ?? []).flatMap((call) =>
            call.type === 'function'
              ? [{ id: call.id, name: call.function.name, arguments: call.function.arguments ?? '' }]
              : [],
          ),
          finishReason: choice?.finish_reason ?? 'stop',
          usage: completion.usage
            ? { inputTokens: completion.usage.prompt_tokens, outputTokens: completion.usage.completion_tokens }
            : undefined,
        };
      }
      const chunks = await this.client.chat.completions.create(
        { ...body, stream: true, stream_options: { include_usage: true } },
        { signal: request.signal },
      );
      return await collectStream(chunks, request.onTextDelta);
    } catch (error) {
      throw mapProviderError(error, this.context);
    }
  }

  private toMessages(request: ChatRequest): ChatCompletionMessageParam[] {
    const role = this.options.instructionsRole ?? (REASONING_MODEL.test(this.model) ? 'developer' : 'system');
    const messages: ChatCompletionMessageParam[] = [{ role, content: request.instructions }];
    for (const message of request.messages) messages.push(toOpenAIMessage(message));
    return messages;
  }
}

function toOpenAIMessage(message: ChatMessage): ChatCompletionMessageParam {
  switch (message.role) {
    case 'user':
      return { role: 'user', content: message.content };
    case 'tool':
      return { role: 'tool', tool_call_id: message.toolCallId, content: message.content };
    case 'assistant':
      return {
        role: 'assistant',
        content: message.content || null,
        ...(message.toolCalls?.length
          ? {
              tool_calls: message.toolCalls.map((call) => ({
                id: call.id,
                type: 'function' as const,
                function: { name: call.name, arguments: call.arguments },
              })),
            }
          : {}),
      };
  }
}

/** Puts the streamed deltas back together: text in order, tool calls by their index. */
async function collectStream(
  chunks: AsyncIterable<ChatCompletionChunk>,
  onTextDelta?: (text: string) => void,
): Promise<ChatResponse> {
  let text = '';
  let finishReason = 'stop';
  let usage: ChatResponse['usage'];
  const calls = new Map<number, ToolCall>();
  for await (const chunk of chunks) {
    if (chunk.usage) usage = { inputTokens: chunk.usage.prompt_tokens, outputTokens: chunk.usage.completion_tokens };
    const choice = chunk.choices[0];
    if (!choice) continue;
    const delta = choice.delta;
    if (delta?.content) {
      text += delta.content;
      onTextDelta?.(delta.content);
    }
    for (const part of delta?.tool_calls ?? []) {
      const call = calls.get(part.index) ?? { id: '', name: '', arguments: '' };
      if (part.id) call.id = part.id;
      if (part.function?.name) call.name += part.function.name;
      if (part.function?.arguments) call.arguments += part.function.arguments;
      calls.set(part.index, call);
    }
    if (choice.finish_reason) finishReason = choice.finish_reason;
  }
  const toolCalls = [...calls.entries()]
    .sort(([a], [b]) => a - b)
    .map(([index, call]) => ({ ...call, id: call.id || `call_${index}` }));
  return { text, toolCalls, finishReason, usage };
}
