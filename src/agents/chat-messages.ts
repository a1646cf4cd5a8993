/**
 * The conversation history, kept within a size budget so long chats fit the
 * model's context: first the outputs of tools from earlier turns are cut to a
 * short head, then, if that is not enough, the oldest turns are dropped
 * whole (a turn is a user message and everything that answered it, so no
 * tool result is ever left without its call).
 */
import type { ChatMessage } from './model.js';

/** ~4 characters a token: about 40k tokens of history. */
export const DEFAULT_HISTORY_CHARS = 160_000;
export const TRIMMED_TOOL_OUTPUT_CHARS = 400;

export interface ChatMessagesOptions {
  /** Budget of the whole history, in characters. @default 160_000 */
  maxChars?: number;
}

function size(message: ChatMessage): number {
  let total = message.content.length;
  if (message.role === 'assistant') {
    for (const call of message.toolCalls ?? []) total += call.name.length + call.arguments.length;
  }
  return total;
}

export class ChatMessages {
  private items: ChatMessage[] = [];
  readonly maxChars: number;
  /** How many turns were dropped so far, to keep within the budget. */
  droppedTurns = 0;

  constructor(options: ChatMessagesOptions = {}) {
    this.maxChars = options.maxChars ?? DEFAULT_HISTORY_CHARS;
  }

  get messages(): readonly ChatMessage[] {
    return this.items;
  }

  get length(): number {
    return this.items.length;
  }

  get chars(): number {
    return this.items.reduce((total, message) => total + size(message), 0);
  }

  add(...messages: ChatMessage[]): void {
    this.items.push(...messages);
    this.fit();
  }

  clear(): void {
    this.items = [];
    this.droppedTurns = 0;
  }

  /** Trims old tool outputs, then drops old turns, until the history fits (the current turn is always kept). */
  private fit(): void {
    if (this.chars <= this.maxChars) return;
    const currentTurn = this.items.findLastIndex((message) => message.role === 'user');
    for (let index = 0; index < currentTurn && this.chars > this.maxChars; index++) {
      const message = this.items[index]!;
      if (message.role !== 'tool' || message.content.length <= TRIMMED_TOOL_OUTPUT_CHARS) continue;
      const cut = message.content.length - TRIMMED_TOOL_OUTPUT_CHARS;
      this.items[index] = {
        ...message,
        content: `${message.content.slice(0, TRIMMED_TOOL_OUTPUT_CHARS)}\n[… ${cut} more characters of this earlier output were trimmed to save context]`,
      };
    }
    while (this.chars > this.maxChars) {
      const nextTurn = this.items.findIndex((message, index) => index > 0 && message.role === 'user');
      const lastTurn = this.items.findLastIndex((message) => message.role === 'user');
      if (nextTurn <= 0 || nextTurn > lastTurn) break;
      this.items.splice(0, nextTurn);
      this.droppedTurns += 1;
    }
  }
}
