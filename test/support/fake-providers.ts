/**
 * Fake LLM providers for tests: real HTTP servers on 127.0.0.1 that speak the
 * OpenAI Chat Completions and Anthropic Messages wire formats (JSON and
 * server-sent events), replay a scripted conversation, and record every
 * request so a test can check what the model was sent. The official SDKs
 * talk to them exactly as they would to the real services. They are for
 * tests of the adapters themselves and of processes that build a real
 * adapter from their flags (`sandcell serve`, `chat`, `ask`, `discord`); a
 * test of sandcell's own logic gives it a ScriptedChatModel (sandcell/testing).
 */
import { once } from 'node:events';
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ScriptedToolCall {
  id?: string;
  name: string;
  /** An object is sent as JSON; a string is sent as is (so it can be malformed). */
  arguments: string | Record<string, unknown>;
}

export type ScriptedResponse =
  | { text?: string; toolCalls?: ScriptedToolCall[] }
  | { status: number; message: string; headers?: Record<string, string> };

export interface RecordedRequest {
  path: string;
  headers: http.IncomingHttpHeaders;
  // biome-ignore lint/suspicious/noExplicitAny: a wire body, inspected by tests.
  body: any;
  /** The raw body text, to check what never appears in it (e.g. base64 images). */
  raw: string;
}

export interface FakeProvider {
  /** What to give the SDK as its base URL. */
  baseURL: string;
  port: number;
  requests: RecordedRequest[];
  /** Responses not yet served. */
  readonly remaining: number;
  /** Adds responses to the end of the script (for a server whose model outlives one test). */
  enqueue(...responses: ScriptedResponse[]): void;
  close(): Promise<void>;
}

type Dialect = 'openai' | 'anthropic';

export function startFakeOpenAI(script: ScriptedResponse[]): Promise<FakeProvider> {
  return startFake('openai', script);
}

export function startFakeAnthropic(script: ScriptedResponse[]): Promise<FakeProvider> {
  return startFake('anthropic', script);
}

async function startFake(dialect: Dialect, script: ScriptedResponse[]): Promise<FakeProvider> {
  const queue = [...script];
  const requests: RecordedRequest[] = [];
  let counter = 0;
  const server = http.createServer(async (request, response) => {
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    const raw = Buffer.concat(chunks).toString('utf8');
    const route = request.url?.split('?')[0] ?? '';
    // Azure OpenAI puts the deployment in the path: /openai/deployments/<name>/chat/completions.
    const known =
      dialect === 'openai'
        ? route === '/v1/chat/completions' || /^\/openai\/deployments\/[^/]+\/chat\/completions$/.test(route)
        : route === '/v1/messages';
    if (request.method !== 'POST' || !known) {
      sendError(response, dialect, 404, `No route ${request.method} ${request.url}`);
      return;
    }
    let body: unknown;
    try {
      body = JSON.parse(raw);
    } catch {
      sendError(response, dialect, 400, 'The body is not JSON.');
      return;
    }
    requests.push({ path: request.url ?? '', headers: request.headers, body, raw });
    const next = queue.shift();
    if (!next) {
      sendError(response, dialect, 400, 'The fake provider has no scripted response left.');
      return;
    }
    if ('status' in next) {
      sendError(response, dialect, next.status, next.message, next.headers);
      return;
    }
    counter += 1;
    const stream = (body as { stream?: boolean }).stream === true;
    if (dialect === 'openai') replyOpenAI(response, next, counter, body as OpenAIBody, stream);
    else replyAnthropic(response, next, counter, body as { model: string }, stream);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  return {
    baseURL: dialect === 'openai' ? `http://127.0.0.1:${port}/v1` : `http://127.0.0.1:${port}`,
    port,
    requests,
    get remaining() {
      return queue.length;
    },
    enqueue: (...responses) => {
      queue.push(...responses);
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

function sendError(
  response: http.ServerResponse,
  dialect: Dialect,
  status: number,
  message: string,
  headers: Record<string, string> = {},
): void {
  const type = status === 429 ? 'rate_limit_error' : status >= 500 ? 'api_error' : 'invalid_request_error';
  const body =
    dialect === 'openai'
      ? { error: { message, type, code: null, param: null } }
      : { type: 'error', error: { type, message } };
  response.writeHead(status, { 'content-type': 'application/json', ...headers });
  response.end(JSON.stringify(body));
}

function argumentsText(call: ScriptedToolCall): string {
  return typeof call.arguments === 'string' ? call.arguments : JSON.stringify(call.arguments);
}

/** Splits text into small pieces, as a streaming model sends it. */
function pieces(text: string, size = 12): string[] {
  const parts: string[] = [];
  for (let index = 0; index < text.length; index += size) parts.push(text.slice(index, index + size));
  return parts;
}

function startEvents(response: http.ServerResponse): void {
  response.writeHead(200, {
    'content-type': 'text/event-stream',
    'cache-control': 'no-cache',
    connection: 'keep-alive',
  });
}

interface OpenAIBody {
  model: string;
  stream_options?: { include_usage?: boolean };
}

function replyOpenAI(
  response: http.ServerResponse,
  scripted: { text?: string; toolCalls?: ScriptedToolCall[] },
  counter: number,
  body: OpenAIBody,
  stream: boolean,
): void {
  const id = `chatcmpl-${counter}`;
  const created = Math.floor(Date.now() / 1000);
  const calls = (scripted.toolCalls ?? []).map((call, index) => ({
    id: call.id ?? `call_${counter}_${index}`,
    type: 'function' as const,
    function: { name: call.name, arguments: argumentsText(call) },
  }));
  const finishReason = calls.length > 0 ? 'tool_calls' : 'stop';
  const usage = { prompt_tokens: 100 * counter, completion_tokens: 10 * counter, total_tokens: 110 * counter };
  if (!stream) {
    response.writeHead(200, { 'content-type': 'application/json' });
    response.end(
      JSON.stringify({
        id,
        object: 'chat.completion',
        created,
        model: body.model,
        choices: [
          {
            index: 0,
            message: {
              role: 'assistant',
              content: scripted.text ?? null,
              ...(calls.length ? { tool_calls: calls } : {}),
            },
            finish_reason: finishReason,
            logprobs: null,
          },
        ],
        usage,
      }),
    );
    return;
  }
  startEvents(response);
  const send = (delta: Record<string, unknown>, finish: string | null = null) =>
    response.write(
      `data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created, model: body.model, choices: [{ index: 0, delta, finish_reason: finish, logprobs: null }] })}\n\n`,
    );
  send({ role: 'assistant', content: '' });
  for (const part of pieces(scripted.text ?? '')) send({ content: part });
  calls.forEach((call, index) => {
    send({
      tool_calls: [{ index, id: call.id, type: 'function', function: { name: call.function.name, arguments: '' } }],
    });
    for (const part of pieces(call.function.arguments, 20))
      send({ tool_calls: [{ index, function: { arguments: part } }] });
  });
  send({}, finishReason);
  if (body.stream_options?.include_usage) {
    response.write(
      `data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created, model: body.model, choices: [], usage })}\n\n`,
    );
  }
  response.end('data: [DONE]\n\n');
}

function replyAnthropic(
  response: http.ServerResponse,
  scripted: { text?: string; toolCalls?: ScriptedToolCall[] },
  counter: number,
  body: { model: string },
  stream: boolean,
): void {
  const id = `msg_${counter}`;
  const calls = (scripted.toolCalls ?? []).map((call, index) => ({
    id: call.id ?? `toolu_${counter}_${index}`,
    name: call.name,
    text: argumentsText(call),
  }));
  const stopReason = calls.length > 0 ? 'tool_use' : 'end_turn';
  const usage = { input_tokens: 100 * counter, output_tokens: 10 * counter };
  if (!stream) {
    const content: unknown[] = scripted.text ? [{ type: 'text', text: scripted.text }] : [];
    for (const call of calls)
      content.push({ type: 'tool_use', id: call.id, name: call.name, input: JSON.parse(call.text) });
    response.writeHead(200, { 'content-type': 'application/json' });
    response.end(
      JSON.stringify({
        id,
        type: 'message',
        role: 'assistant',
        model: body.model,
        content,
        stop_reason: stopReason,
        stop_sequence: null,
        usage,
      }),
    );
    return;
  }
  startEvents(response);
  const send = (event: Record<string, unknown>) =>
    response.write(`event: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`);
  send({
    type: 'message_start',
    message: {
      id,
      type: 'message',
      role: 'assistant',
      model: body.model,
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage: { input_tokens: usage.input_tokens, output_tokens: 1 },
    },
  });
  let index = 0;
  if (scripted.text) {
    send({ type: 'content_block_start', index, content_block: { type: 'text', text: '' } });
    for (const part of pieces(scripted.text))
      send({ type: 'content_block_delta', index, delta: { type: 'text_delta', text: part } });
    send({ type: 'content_block_stop', index });
    index += 1;
  }
  for (const call of calls) {
    send({
      type: 'content_block_start',
      index,
      content_block: { type: 'tool_use', id: call.id, name: call.name, input: {} },
    });
    for (const part of pieces(call.text, 20)) {
      send({ type: 'content_block_delta', index, delta: { type: 'input_json_delta', partial_json: part } });
    }
    send({ type: 'content_block_stop', index });
    index += 1;
  }
  send({
    type: 'message_delta',
    delta: { stop_reason: stopReason, stop_sequence: null },
    usage: { output_tokens: usage.output_tokens },
  });
  send({ type: 'message_stop' });
  response.end();
}
