/**
 * ChatModel on Anthropic's Messages API (tool use) with the official SDK.
 * Streams by default; retries on 429 and 5xx are the SDK's own.
 */
import Anthropic from '@anthropic-ai/sdk';
import type {
  ContentBlockParam,
  MessageCreateParams,
  MessageParam,
  RawMessageStreamEvent,
} from '@anthropic-ai/sdk/resources/messages';
import { ModelConfigurationError } from '../errors.js';
import {
  type ChatModel,
  type ChatRequest,
  type ChatResponse,
  DEFAULT_MODEL_MAX_RETRIES,
  DEFAULT_MODEL_TIMEOUT_MS,
  type ToolCall,
} from '../model.js';
import { fromOption, mapProviderError, type ProviderContext } from './provider-errors.js';

export const ANTHROPIC_DEFAULT_BASE_URL = 'https://api.anthropic.com';
export const DEFAULT_ANTHROPIC_MAX_OUTPUT_TOKENS = 8192;

export interface AnthropicChatModelOptions {
  model: string;
  /** @default process.env.ANTHROPIC_API_KEY; not needed for a local server given by `baseURL`. */
  apiKey?: string;
  /** @default process.env.ANTHROPIC_BASE_URL, else Anthropic */
  baseURL?: string;
  /** Largest answer, in tokens (the Messages API requires one). @default 8192 */
  maxOutputTokens?: number;
  /** @default true */
  stream?: boolean;
  /** @default 3 */
  maxRetries?: number;
  /** Per request. @default 120_000 */
  timeoutMs?: number;
  fetch?: typeof fetch;
}

const NO_KEY = 'sandcell-no-key';

export class AnthropicChatModel implements ChatModel {
  readonly provider = 'anthropic';
  readonly model: string;
  private readonly client: Anthropic;
  private readonly context: ProviderContext;
  private readonly options: AnthropicChatModelOptions;

  constructor(options: AnthropicChatModelOptions) {
    if (!options.model) throw new ModelConfigurationError('Name the model: pass `model` (the --model flag).');
    this.options = options;
    this.model = options.model;
    const baseURL = fromOption(options.baseURL, 'ANTHROPIC_BASE_URL');
    let apiKey = fromOption(options.apiKey, 'ANTHROPIC_API_KEY');
    if (!apiKey) {
      if (!baseURL) {
        throw new ModelConfigurationError(
          'No Anthropic API key: set ANTHROPIC_API_KEY, or choose another provider with --provider openai (OPENAI_API_KEY, or --base-url for a local server such as Ollama).',
        );
      }
      apiKey = NO_KEY;
    }
    this.client = new Anthropic({
      apiKey,
      baseURL: baseURL ?? ANTHROPIC_DEFAULT_BASE_URL,
      maxRetries: options.maxRetries ?? DEFAULT_MODEL_MAX_RETRIES,
      timeout: options.timeoutMs ?? DEFAULT_MODEL_TIMEOUT_MS,
      fetch: options.fetch,
    });
    this.context = {
      label: baseURL ? 'the Anthropic-compatible server' : 'Anthropic',
      baseURL: baseURL ?? ANTHROPIC_DEFAULT_BASE_URL,
      model: options.model,
      keyVariable: 'ANTHROPIC_API_KEY',
      baseUrlHint: 'Check --base-url (or ANTHROPIC_BASE_URL) and the network.',
    };
  }

  async complete(request: ChatRequest): Promise<ChatResponse> {
    const body: MessageCreateParams = {
      model: this.model,
      max_tokens: this.options.maxOutputTokens ?? DEFAULT_ANTHROPIC_MAX_OUTPUT_TOKENS,
      system: request.instructions,
      messages: toAnthropicMessages(request),
      ...(request.tools.length > 0
        ? {
            tools: request.tools.map((tool) => ({
              name: tool.name,
              description: tool.description,
              input_schema: tool.parameters as { type: 'object' },
            })),
            tool_choice: { type: request.toolChoice ?? 'auto' },
          }
        : {}),
    };
    try {
      if (this.options.stream === false) {
        const message = await this.client.messages.create({ ...body, stream: false }, { signal: request.signal });
        let text = '';
        const toolCalls: ToolCall[] = [];
        for (const block of message.content) {
          if (block.type === 'text') text += block.text;
          if (block.type === 'tool_use') {
            toolCalls.push({ id: block.id, name: block.name, arguments: JSON.stringify(block.input ?? {}) });
          }
        }
        if (text) request.onTextDelta?.(text);
        return {
          text,
          toolCalls,
          finishReason: message.stop_reason ?? 'end_turn',
          usage: { inputTokens: message.usage.input_tokens ?? 0, outputTokens: message.usage.output_tokens },
        };
      }
      const events = await this.client.messages.create({ ...body, stream: true }, { signal: request.signal });
      return await collectStream(events, request.onTextDelta);
    } catch (error) {
      throw mapProviderError(error, this.context);
    }
  }
}

/** Anthropic wants alternating turns, with tool results as user content; consecutive turns of one role are merged. */
function toAnthropicMessages(request: ChatRequest): MessageParam[] {
  const messages: { role: 'user' | 'assistant'; content: ContentBlockParam[] }[] = [];
  const push = (role: 'user' | 'assistant', blocks: ContentBlockParam[]) => {
    const last = messages.at(-1);
    if (last && last.role === role) last.content.push(...blocks);
    else messages.push({ role, content: blocks });
  };
  for (const message of request.messages) {
    if (message.role === 'user') push('user', [{ type: 'text', text: message.content }]);
    else if (message.role === 'tool') {
      push('user', [
        {
          type: 'tool_result',
          tool_use_id: message.toolCallId,
          content: message.content,
          ...(message.isError ? { is_error: true } : {}),
        },
      ]);
    } else {
      const blocks: ContentBlockParam[] = message.content ? [{ type: 'text', text: message.content }] : [];
      for (const call of message.toolCalls ?? []) {
        blocks.push({ type: 'tool_use', id: call.id, name: call.name, input: parseInput(call.arguments) });
      }
      if (blocks.length > 0) push('assistant', blocks);
    }
  }
  return messages as MessageParam[];
}

/** Tool input goes back as an object; input the model mangled goes back empty (the tool result says why). */
function parseInput(text: string): Record<string, unknown> {
  try {
    const value = JSON.parse(text || '{}');
    return value && typeof value === 'object' && !Array.isArray(value) ? value : {};
  } catch {
    return {};
  }
}

async function collectStream(
  events: AsyncIterable<RawMessageStreamEvent>,
  onTextDelta?: (text: string) => void,
): Promise<ChatResponse> {
  let text = '';
  let finishReason = 'end_turn';
  let inputTokens = 0;
  let outputTokens = 0;
  const calls = new Map<number, ToolCall>();
  for await (const event of events) {
    switch (event.type) {
      case 'message_start':
        inputTokens = event.message.usage.input_tokens ?? 0;
        outputTokens = event.message.usage.output_tokens ?? 0;
        break;
      case 'content_block_start':
        if (event.content_block.type === 'tool_use') {
          const block = event.content_block;
          const initial = block.input && Object.keys(block.input).length > 0 ? JSON.stringify(block.input) : '';
          calls.set(event.index, { id: block.id, name: block.name, arguments: initial });
        } else if (event.content_block.type === 'text' && event.content_block.text) {
          text += event.content_block.text;
          onTextDelta?.(event.content_block.text);
        }
        break;
      case 'content_block_delta':
        if (event.delta.type === 'text_delta') {
          text += event.delta.text;
          onTextDelta?.(event.delta.text);
        } else if (event.delta.type === 'input_json_delta') {
          const call = calls.get(event.index);
          if (call) call.arguments += event.delta.partial_json;
        }
        break;
      case 'message_delta':
        if (event.delta.stop_reason) finishReason = event.delta.stop_reason;
        outputTokens = event.usage.output_tokens ?? outputTokens;
        break;
      default:
        break;
    }
  }
  const toolCalls = [...calls.entries()].sort(([a], [b]) => a - b).map(([, call]) => call);
  return { text, toolCalls, finishReason, usage: { inputTokens, outputTokens } };
}
