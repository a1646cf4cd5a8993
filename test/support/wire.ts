/** Reading recorded provider requests the same way for both wire formats. */
import type { RecordedRequest } from './fake-providers.js';

export type Dialect = 'openai' | 'anthropic';

export interface WireToolResult {
  id: string;
  content: string;
  isError: boolean;
}

/** The tool results a request sends, in order. */
export function toolResults(dialect: Dialect, request: RecordedRequest): WireToolResult[] {
  if (dialect === 'openai') {
    return request.body.messages
      .filter((message: { role: string }) => message.role === 'tool')
      .map((message: { tool_call_id: string; content: string }) => ({
        id: message.tool_call_id,
        content: message.content,
        // Chat Completions has no error flag; the text says it.
        isError: /failed|not valid JSON|Refused|Not run|do not match/.test(message.content),
      }));
  }
  const results: WireToolResult[] = [];
  for (const message of request.body.messages) {
    if (message.role !== 'user' || typeof message.content === 'string') continue;
    for (const block of message.content) {
      if (block.type === 'tool_result') {
        results.push({ id: block.tool_use_id, content: String(block.content), isError: block.is_error === true });
      }
    }
  }
  return results;
}

/** The tool calls the assistant turns of a request carry, in order (ids only). */
export function toolCallIds(dialect: Dialect, request: RecordedRequest): string[] {
  if (dialect === 'openai') {
    return request.body.messages.flatMap((message: { role: string; tool_calls?: { id: string }[] }) =>
      message.role === 'assistant' ? (message.tool_calls ?? []).map((call) => call.id) : [],
    );
  }
  return request.body.messages.flatMap((message: { role: string; content: unknown }) =>
    message.role === 'assistant' && Array.isArray(message.content)
      ? message.content.filter((block) => block.type === 'tool_use').map((block) => block.id as string)
      : [],
  );
}

export function instructions(dialect: Dialect, request: RecordedRequest): string {
  return dialect === 'openai' ? request.body.messages[0].content : request.body.system;
}

export function toolChoice(dialect: Dialect, request: RecordedRequest): string | undefined {
  return dialect === 'openai' ? request.body.tool_choice : request.body.tool_choice?.type;
}

export function toolNames(dialect: Dialect, request: RecordedRequest): string[] {
  return (request.body.tools ?? []).map((tool: { name?: string; function?: { name: string } }) =>
    dialect === 'openai' ? tool.function?.name : tool.name,
  );
}
