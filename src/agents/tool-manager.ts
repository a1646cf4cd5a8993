/**
 * Runs every tool call of a model response, in order, and answers each
 * tool_call_id: bad arguments (not JSON, or not matching the schema) and
 * unknown tools go back to the model as tool errors, not exceptions.
 */
import { AbortError, SandcellError } from '../errors.js';
import type { ChatMessage, ToolCall, ToolDefinition } from './model.js';
import { type Tool, type ToolOutput, toToolDefinition } from './tool.js';

export interface ToolCallOutcome {
  toolCall: ToolCall;
  output: ToolOutput;
}

/** Errors that are the model's or the user's doing go back to the model; infrastructure failures propagate. */
const MODEL_FIXABLE_CODES = new Set(['invalid-input', 'invalid-path', 'file-error']);

export class ToolManager {
  private readonly tools = new Map<string, Tool>();

  constructor(tools: Tool[] = []) {
    for (const tool of tools) this.add(tool);
  }

  add(tool: Tool): this {
    if (this.tools.has(tool.name)) throw new TypeError(`A tool named ${tool.name} is already registered.`);
    this.tools.set(tool.name, tool);
    return this;
  }

  get(name: string): Tool | undefined {
    return this.tools.get(name);
  }

  get names(): string[] {
    return [...this.tools.keys()];
  }

  definitions(): ToolDefinition[] {
    return [...this.tools.values()].map(toToolDefinition);
  }

  /** Runs one call; never throws for the model's mistakes. */
  async run(toolCall: ToolCall, signal?: AbortSignal): Promise<ToolOutput> {
    const tool = this.tools.get(toolCall.name);
    if (!tool) {
      return {
        content: `There is no tool named ${JSON.stringify(toolCall.name)}. Available tools: ${this.names.join(', ') || 'none'}.`,
        isError: true,
      };
    }
    let raw: unknown;
    try {
      raw = JSON.parse(toolCall.arguments.trim() === '' ? '{}' : toolCall.arguments);
    } catch (error) {
      return {
        content: `The arguments of this ${tool.name} call are not valid JSON (${(error as Error).message}). Nothing was run. Call the tool again with a JSON object that matches its schema.`,
        isError: true,
      };
    }
    const parsed = tool.parameters.safeParse(raw);
    if (!parsed.success) {
      const issues = parsed.error.issues
        .map((issue) => `${issue.path.length ? issue.path.join('.') : '(arguments)'}: ${issue.message}`)
        .join('; ');
      return {
        content: `The arguments of this ${tool.name} call do not match its schema (${issues}). Nothing was run. Call it again with valid arguments.`,
        isError: true,
      };
    }
    try {
      const output = await tool.run(parsed.data, { toolCallId: toolCall.id, signal });
      return typeof output === 'string' ? { content: output } : output;
    } catch (error) {
      if (error instanceof SandcellError && !MODEL_FIXABLE_CODES.has(error.code)) throw error;
      return { content: `${tool.name} failed: ${(error as Error).message}`, isError: true };
    }
  }

  /** Runs every call, in the order the model gave them, and returns the tool messages answering each. */
  async runAll(
    toolCalls: readonly ToolCall[],
    options: {
      signal?: AbortSignal;
      onStart?: (toolCall: ToolCall) => void;
      onEnd?: (outcome: ToolCallOutcome) => void;
    } = {},
  ): Promise<{ outcomes: ToolCallOutcome[]; messages: ChatMessage[] }> {
    const outcomes: ToolCallOutcome[] = [];
    for (const toolCall of toolCalls) {
      if (options.signal?.aborted) throw new AbortError('The question was aborted.');
      options.onStart?.(toolCall);
      const output = await this.run(toolCall, options.signal);
      const outcome = { toolCall, output };
      outcomes.push(outcome);
      options.onEnd?.(outcome);
    }
    const messages: ChatMessage[] = outcomes.map(({ toolCall, output }) => ({
      role: 'tool',
      toolCallId: toolCall.id,
      name: toolCall.name,
      content: output.content,
      ...(output.isError ? { isError: true } : {}),
    }));
    return { outcomes, messages };
  }
}
