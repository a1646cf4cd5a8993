/**
 * A ChatModel that answers from a script, for testing code built on the
 * agents (agents, conversations, bots) without a provider: no network, no SDK,
 * the same answers on every run. It records every request it was sent, so a
 * test can check what the model was told, and it streams and stops the way
 * the real adapters do: answer text in small deltas, an aborted request throws
 * AbortError. Modelled on vercel/ai's MockLanguageModelV2.
 */
import { AbortError } from '../errors.js';
import type { ChatModel, ChatRequest, ChatResponse, ChatUsage, ToolCall } from './model.js';

/** A tool call the scripted model makes. */
export interface ScriptedToolCall {
  /** @default `call_<call number>_<index>` */
  id?: string;
  name: string;
  /** An object is sent as JSON; a string as is (so it can be malformed JSON). */
  arguments: string | Record<string, unknown>;
}

/** One answer of the scripted model. */
export interface ScriptedReply {
  /** @default '' */
  text?: string;
  toolCalls?: ScriptedToolCall[];
  /** @default 'tool_calls' when there are tool calls, else 'stop' */
  finishReason?: string;
  /** `null`: the response reports no usage. @default { inputTokens: 100, outputTokens: 10 } */
  usage?: ChatUsage | null;
}

/** An answer, or an error the call throws (e.g. a `ModelResponseError`, as a failing provider would). */
export type ScriptedChatResponse = ScriptedReply | Error;

/** A request as the scripted model recorded it: `messages` is a copy taken when the call was made. */
export type ScriptedChatCall = Omit<ChatRequest, 'onTextDelta'>;

/**
 * Answers a call; `index` counts calls from 0. A promise that does not settle
 * models a model that keeps thinking: the call ends when its signal aborts.
 */
export type ScriptedChatResponder = (
  call: ScriptedChatCall,
  index: number,
) => ScriptedChatResponse | Promise<ScriptedChatResponse>;

export interface ScriptedChatModelOptions {
  /** Answers consumed in order, one per call (more can be added with `enqueue`), or a function that answers each call. @default [] */
  responses?: readonly ScriptedChatResponse[] | ScriptedChatResponder;
  /** @default 'scripted' */
  provider?: string;
  /** @default 'scripted' */
  model?: string;
  /** Stream answer text in small deltas, as the adapters do by default; false sends it in one delta. @default true */
  stream?: boolean;
}

/** The size of a streamed text delta, as a streaming provider sends them. */
const DELTA_CHARS = 12;
const DEFAULT_USAGE: ChatUsage = { inputTokens: 100, outputTokens: 10 };

export class ScriptedChatModel implements ChatModel {
  readonly provider: string;
  readonly model: string;
  /** Every request the model was sent, in order. */
  readonly calls: ScriptedChatCall[] = [];
  private readonly queue: ScriptedChatResponse[];
  private readonly responder?: ScriptedChatResponder;
  private readonly stream: boolean;
  private scripted: number;

  constructor(options: ScriptedChatModelOptions = {}) {
    this.provider = options.provider ?? 'scripted';
    this.model = options.model ?? 'scripted';
    this.stream = options.stream ?? true;
    const responses = options.responses ?? [];
    if (typeof responses === 'function') {
      this.responder = responses;
      this.queue = [];
    } else {
      this.queue = [...responses];
    }
    this.scripted = this.queue.length;
  }

  /** Scripted answers not yet used. */
  get remaining(): number {
    return this.queue.length;
  }

  /** Adds answers to the end of the script (for a model that outlives one test). */
  enqueue(...responses: ScriptedChatResponse[]): void {
    if (this.responder) throw new Error('ScriptedChatModel answers with a function: it has no script to add to.');
    this.queue.push(...responses);
    this.scripted += responses.length;
  }

  async complete(request: ChatRequest): Promise<ChatResponse> {
    const { onTextDelta, ...sent } = request;
    const call: ScriptedChatCall = { ...sent, messages: structuredClone([...request.messages]) };
    const index = this.calls.length;
    this.calls.push(call);
    throwIfAborted(request.signal);
    const response = await untilAborted(this.next(call, index), request.signal);
    if (response instanceof Error) throw response;
    const text = response.text ?? '';
    const toolCalls: ToolCall[] = (response.toolCalls ?? []).map((toolCall, position) => ({
      id: toolCall.id ?? `call_${index + 1}_${position}`,
      name: toolCall.name,
      arguments: typeof toolCall.arguments === 'string' ? toolCall.arguments : JSON.stringify(toolCall.arguments),
    }));
    for (const delta of this.stream ? pieces(text) : [text]) {
      if (!delta) continue;
      onTextDelta?.(delta);
      // A streaming adapter hands each delta over in a task of its own: a stop can come in between.
      if (this.stream) await new Promise((resolve) => setImmediate(resolve));
      throwIfAborted(request.signal);
    }
    return {
      text,
      toolCalls,
      finishReason: response.finishReason ?? (toolCalls.length > 0 ? 'tool_calls' : 'stop'),
      usage: response.usage === null ? undefined : (response.usage ?? DEFAULT_USAGE),
    };
  }

  private async next(call: ScriptedChatCall, index: number): Promise<ScriptedChatResponse> {
    if (this.responder) return this.responder(call, index);
    const next = this.queue.shift();
    if (next) return next;
    throw new Error(
      `ScriptedChatModel: call ${index + 1} asked for a response, but only ${this.scripted} ${this.scripted === 1 ? 'was' : 'were'} scripted. It was asked: ${describeLast(call)}`,
    );
  }
}

function throwIfAborted(signal: AbortSignal | undefined): void {
  if (signal?.aborted) throw new AbortError('The model request was aborted.');
}

/** Settles with `promise`, or throws AbortError as soon as `signal` aborts. */
function untilAborted<T>(promise: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) return promise;
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(new AbortError('The model request was aborted.'));
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}

function pieces(text: string): string[] {
  const parts: string[] = [];
  for (let index = 0; index < text.length; index += DELTA_CHARS) parts.push(text.slice(index, index + DELTA_CHARS));
  return parts;
}

/** The last message of a call, shortly: what the model was being asked when the script ran out. */
function describeLast(call: ScriptedChatCall): string {
  const last = call.messages[call.messages.length - 1];
  if (!last) return '(no messages)';
  const content = last.content.length > 200 ? `${last.content.slice(0, 200)}…` : last.content;
  const about = last.role === 'tool' ? ` (result of ${last.name} call ${last.toolCallId})` : '';
  return `${last.role}${about}: ${JSON.stringify(content)}`;
}
