/**
 * An execution on E2B's code-interpreter wire (`POST /execute`): one JSON object a line, as both
 * E2B SDKs parse it — `stdout`/`stderr` with an ISO timestamp (the Python SDK indexes it),
 * `result` with one field per format and `is_main_result`, `error` with the traceback as one
 * string, `number_of_executions`, `keepalive` while the code is quiet, and `end_of_execution`.
 * The line shapes only; the route decides what runs.
 */
import type { Execution, ExecutionError, ExecutionResult } from '../../session/execution.js';
import { formatTraceback } from '../../session/execution.js';

export type InterpreterLine =
  | { type: 'number_of_executions'; execution_count: number }
  | { type: 'stdout' | 'stderr'; text: string; timestamp: string }
  | ({ type: 'result'; is_main_result: boolean } & Record<string, unknown>)
  | { type: 'error'; name: string; value: string; traceback: string }
  | { type: 'keepalive' }
  | { type: 'end_of_execution' };

/** The MIME types E2B gives a field of their own; any other type goes to `extra`. */
const FIELD_BY_MIME_TYPE: Record<string, string> = {
  'text/plain': 'text',
  'text/html': 'html',
  'text/markdown': 'markdown',
  'image/svg+xml': 'svg',
  'image/png': 'png',
  'image/jpeg': 'jpeg',
  'application/pdf': 'pdf',
  'text/latex': 'latex',
  'application/json': 'json',
  'application/javascript': 'javascript',
  'e2b/data': 'data',
  'e2b/chart': 'chart',
};

/** Seconds between keepalive lines while an execution says nothing; E2B's own server uses 5. */
export const KEEPALIVE_INTERVAL_MS = 5_000;

export function outputLine(stream: 'stdout' | 'stderr', text: string, now = new Date()): InterpreterLine {
  return { type: stream, text, timestamp: now.toISOString() };
}

/**
 * A result as E2B presents it. A `text` in single quotes loses them (`'abc'` reads `abc`), as E2B's
 * server does, so `execution.text` of most strings is the string; double quotes stay (`"it's"`).
 */
export function resultLine(result: ExecutionResult): InterpreterLine {
  const fields: Record<string, unknown> = {};
  const extra: Record<string, unknown> = {};
  for (const [mimeType, value] of Object.entries(result.data)) {
    if (value === null || value === undefined) continue;
    const field = FIELD_BY_MIME_TYPE[mimeType];
    if (field) fields[field] = value;
    else extra[mimeType] = value;
  }
  if (typeof fields.text === 'string') fields.text = unquote(fields.text);
  return {
    type: 'result',
    ...fields,
    ...(Object.keys(extra).length > 0 ? { extra } : {}),
    is_main_result: result.type === 'execute_result',
  };
}

export function errorLine(error: ExecutionError): InterpreterLine {
  return { type: 'error', name: error.name, value: error.value, traceback: formatTraceback(error) };
}

/** The lines that close an execution whose output already streamed: its count and its error. */
export function closingLines(execution: Execution): InterpreterLine[] {
  return [
    { type: 'number_of_executions', execution_count: execution.executionCount },
    ...(execution.error ? [errorLine(execution.error)] : []),
    { type: 'end_of_execution' },
  ];
}

/** E2B's own rule (its server's Result model): a text that starts and ends with `'` loses its first and last character. */
function unquote(text: string): string {
  return text.startsWith("'") && text.endsWith("'") ? text.slice(1, -1) : text;
}

/**
 * JSON with every non-ASCII character escaped, as E2B's server writes it (Python's json.dumps). It
 * matters to both SDKs: the JS SDK decodes each network chunk on its own, so a multi-byte
 * character cut between two chunks would arrive garbled, and the Python SDK splits lines as
 * str.splitlines does, so a raw U+2028 or U+0085 in a string would cut a line in two.
 */
export function asciiJson(value: unknown): string {
  return JSON.stringify(value).replace(
    /[\u007f-\uffff]/g,
    (character) => `\\u${character.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
}

/**
 * The streamed answer: `produce` sends lines until it resolves; a keepalive goes out whenever
 * nothing did for KEEPALIVE_INTERVAL_MS, so a client (and any proxy) sees the connection live and
 * a vanished client is noticed at the next write. `signal` aborts when the client goes away.
 */
export function interpreterStream(
  produce: (send: (line: InterpreterLine) => void, signal: AbortSignal) => Promise<void>,
  keepaliveIntervalMs = KEEPALIVE_INTERVAL_MS,
): Response {
  const encoder = new TextEncoder();
  const abort = new AbortController();
  let closed = false;
  let timer: NodeJS.Timeout | undefined;
  const stream = new ReadableStream<Uint8Array>({
    start(controller) {
      const send = (line: InterpreterLine): void => {
        if (closed) return;
        controller.enqueue(encoder.encode(`${asciiJson(line)}\n`));
        timer?.refresh();
      };
      timer = setInterval(() => send({ type: 'keepalive' }), keepaliveIntervalMs);
      timer.unref();
      void produce(send, abort.signal).finally(() => {
        clearInterval(timer);
        if (closed) return;
        closed = true;
        controller.close();
      });
    },
    cancel() {
      closed = true;
      clearInterval(timer);
      abort.abort();
    },
  });
  return new Response(stream, {
    status: 200,
    headers: { 'content-type': 'application/x-ndjson', 'cache-control': 'no-cache', 'x-accel-buffering': 'no' },
  });
}
