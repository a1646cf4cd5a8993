/**
 * Agent: a developer prompt, a model, tools and a conversation. `ask()` sends
 * the question, runs every tool call the model makes, and loops until the
 * model answers in words, bounded by `maxSteps` (then the model is asked to
 * wrap up without tools).
 */
import { AbortError } from '../errors.js';
import { ChatMessages, type ChatMessagesOptions } from './chat-messages.js';
import { ModelConfigurationError } from './errors.js';
import type { AgentAnswer, AgentEvent, AgentEventListener, StopReason } from './events.js';
import type { ChatMessage, ChatModel } from './model.js';
import type { Tool } from './tool.js';
import { ToolManager } from './tool-manager.js';

export const DEFAULT_MAX_STEPS = 12;

export interface AgentOptions {
  /** Names the agent in events. @default 'agent' */
  name?: string;
  /** The model; an agent without one can still run its tools directly. */
  model?: ChatModel;
  /** The developer prompt. */
  instructions: string;
  tools?: Tool[];
  /** Model responses whose tool calls are run per question; then one more call, without tools, for the answer. @default 12 */
  maxSteps?: number;
  history?: ChatMessagesOptions;
  onEvent?: AgentEventListener;
}

export interface AskOptions {
  signal?: AbortSignal;
}

export class Agent {
  readonly name: string;
  model?: ChatModel;
  instructions: string;
  readonly tools: ToolManager;
  readonly messages: ChatMessages;
  maxSteps: number;
  private readonly listeners = new Set<AgentEventListener>();

  constructor(options: AgentOptions) {
    this.name = options.name ?? 'agent';
    this.model = options.model;
    this.instructions = options.instructions;
    this.tools = new ToolManager(options.tools);
    this.messages = new ChatMessages(options.history);
    this.maxSteps = options.maxSteps ?? DEFAULT_MAX_STEPS;
    if (!Number.isInteger(this.maxSteps) || this.maxSteps < 1) {
      throw new ModelConfigurationError(`\`maxSteps\` must be a positive integer; got ${String(options.maxSteps)}.`);
    }
    if (options.onEvent) this.listeners.add(options.onEvent);
  }

  /** Subscribes to events; returns the function that unsubscribes. */
  on(listener: AgentEventListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  protected emit(event: AgentEvent): void {
    for (const listener of this.listeners) listener(event);
  }

  /** Called when a question starts (subclasses reset per-question state). */
  protected beginQuestion(): void {}

  /** A reason to stop offering tools before `maxSteps` (e.g. every attempt failed). */
  protected stopReason(): StopReason | undefined {
    return undefined;
  }

  async ask(question: string, options: AskOptions = {}): Promise<AgentAnswer> {
    const model = this.model;
    if (!model) throw new ModelConfigurationError(`The ${this.name} agent has no model to ask: pass \`model\`.`);
    this.beginQuestion();
    this.messages.add({ role: 'user', content: question });
    const usage = { inputTokens: 0, outputTokens: 0 };
    const definitions = this.tools.definitions();
    try {
      for (let step = 1; ; step++) {
        if (options.signal?.aborted) throw new AbortError('The question was aborted.');
        const wrapUp = this.stopReason() ?? (step > this.maxSteps ? 'max-steps' : undefined);
        this.emit({ type: 'step-start', agent: this.name, step, maxSteps: this.maxSteps });
        const response = await model.complete({
          instructions: this.instructions,
          messages: this.messages.messages,
          tools: definitions,
          toolChoice: wrapUp ? 'none' : 'auto',
          signal: options.signal,
          onTextDelta: (text) => this.emit({ type: 'answer-delta', agent: this.name, text }),
        });
        usage.inputTokens += response.usage?.inputTokens ?? 0;
        usage.outputTokens += response.usage?.outputTokens ?? 0;
        this.messages.add({ role: 'assistant', content: response.text, toolCalls: response.toolCalls });
        this.emit({ type: 'step-end', agent: this.name, step, response });
        if (wrapUp || response.toolCalls.length === 0) {
          // A model that calls tools when told not to still gets every call answered, so the history stays valid.
          this.answerPending('Not run: no more tool calls are allowed for this question. Answer in words.');
          const text =
            response.text ||
            (wrapUp === 'gave-up'
              ? 'The code failed on every attempt, so I stopped without an answer.'
              : `I stopped after ${this.maxSteps} steps without reaching an answer.`);
          const answer: AgentAnswer = { text, stopReason: wrapUp ?? 'answer', steps: step, usage };
          this.emit({ type: 'answer-end', agent: this.name, ...answer });
          return answer;
        }
        const { messages } = await this.tools.runAll(response.toolCalls, {
          signal: options.signal,
          onStart: (toolCall) => this.emit({ type: 'tool-call-start', agent: this.name, toolCall }),
          onEnd: ({ toolCall, output }) => this.emit({ type: 'tool-call-end', agent: this.name, toolCall, output }),
        });
        this.messages.add(...messages);
      }
    } catch (error) {
      this.answerPending('Interrupted before this call finished.');
      throw error;
    }
  }

  /** Answers every tool call of the last assistant message that has no result yet. */
  private answerPending(content: string): void {
    const all = this.messages.messages;
    const lastAssistant = all.findLastIndex((message) => message.role === 'assistant');
    if (lastAssistant < 0) return;
    const assistant = all[lastAssistant] as Extract<ChatMessage, { role: 'assistant' }>;
    const answered = new Set(
      all.slice(lastAssistant + 1).flatMap((message) => (message.role === 'tool' ? [message.toolCallId] : [])),
    );
    const missing = (assistant.toolCalls ?? []).filter((call) => !answered.has(call.id));
    this.messages.add(
      ...missing.map(
        (call): ChatMessage => ({ role: 'tool', toolCallId: call.id, name: call.name, content, isError: true }),
      ),
    );
  }
}
