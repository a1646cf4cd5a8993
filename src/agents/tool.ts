/**
 * A tool the model can call: a name, a description, a zod schema of its
 * arguments (sent to the model as JSON schema) and `run`.
 */
import { z } from 'zod';
import type { ToolDefinition } from './model.js';

/** What a tool gives back to the model: text, flagged as an error when the call failed. */
export interface ToolOutput {
  content: string;
  isError?: boolean;
}

export interface ToolContext {
  /** The id of the call being answered. */
  toolCallId: string;
  signal?: AbortSignal;
}

export interface Tool<Schema extends z.ZodType = z.ZodType> {
  name: string;
  description: string;
  parameters: Schema;
  run(input: z.output<Schema>, context: ToolContext): Promise<ToolOutput | string> | ToolOutput | string;
}

const TOOL_NAME = /^[A-Za-z0-9_-]{1,64}$/;

/** Defines a tool; the identity function with a type check and a name check. */
export function defineTool<Schema extends z.ZodType>(tool: Tool<Schema>): Tool<Schema> {
  if (!TOOL_NAME.test(tool.name)) {
    throw new TypeError(`A tool name is 1 to 64 letters, digits, "_" or "-"; got ${JSON.stringify(tool.name)}.`);
  }
  return tool;
}

/** The tool as the model sees it: its arguments as a JSON schema object. */
export function toToolDefinition(tool: Tool): ToolDefinition {
  const schema = z.toJSONSchema(tool.parameters, { target: 'draft-7', io: 'input' }) as Record<string, unknown>;
  delete schema.$schema;
  return { name: tool.name, description: tool.description, parameters: schema };
}
