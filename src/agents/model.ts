/**
 * The provider-neutral conversation model: messages with tool calls, and the
 * one interface every provider implements. Providers translate to and from
 * their wire formats; nothing above this file knows which provider it talks to.
 */

/** One call of a tool, as the model asked for it. `arguments` is the raw JSON text the model wrote. */
export interface ToolCall {
  id: string;
  name: string;
  arguments: string;
}

export type ChatMessage =
  | { role: 'user'; content: string }
  | { role: 'assistant'; content: string; toolCalls?: ToolCall[] }
  | { role: 'tool'; toolCallId: string; name: string; content: string; isError?: boolean };

/** A tool as the model sees it: a name, what it does, and a JSON schema of its arguments. */
export interface ToolDefinition {
  name: string;
  description: string;
  parameters: Record<string, unknown>;
}

export interface ChatRequest {
  /** The developer (system) prompt. */
  instructions: string;
  messages: readonly ChatMessage[];
  tools: readonly ToolDefinition[];
  /** `none` asks for an answer in words: used to wrap up when steps or attempts run out. @default 'auto' */
  toolChoice?: 'auto' | 'none';
  signal?: AbortSignal;
  /** Called with each piece of answer text as it streams in. */
  onTextDelta?: (text: string) => void;
}

export interface ChatUsage {
  inputTokens: number;
  outputTokens: number;
}

export interface ChatResponse {
  text: string;
  toolCalls: ToolCall[];
  /** The provider's own stop reason (`stop`, `tool_calls`, `end_turn`, `tool_use`, `length`, …). */
  finishReason: string;
  usage?: ChatUsage;
}

/** A chat model with tool calling. */
export interface ChatModel {
  /** `openai`, `azure`, `anthropic`, or the name of a custom provider. */
  readonly provider: string;
  readonly model: string;
  complete(request: ChatRequest): Promise<ChatResponse>;
}

export type ReasoningEffort = 'none' | 'minimal' | 'low' | 'medium' | 'high' | 'xhigh';
export const REASONING_EFFORTS: readonly ReasoningEffort[] = ['none', 'minimal', 'low', 'medium', 'high', 'xhigh'];

/** Defaults shared by the providers. */
export const DEFAULT_MODEL_TIMEOUT_MS = 120_000;
export const DEFAULT_MODEL_MAX_RETRIES = 3;
