/**
 * An execution streamed as it happens, as NDJSON (one JSON object a line) or
 * Server-Sent Events. Events: `stdout-delta`, `stderr-delta`, `result-ready`,
 * then `execution-end` with the whole execution, or `error` if it could not run.
 * A client that disconnects interrupts the code.
 */
import type { ExecutionStreamEvent } from '../../protocol/index.js';
import type { Execution, ExecutionResult } from '../../session/execution.js';
import { errorBody, toHttpError } from './errors.js';

export type StreamFormat = 'ndjson' | 'sse';

/**
 * The stream a request asks for: `?stream=` first (`none` for a JSON answer), else its Accept
 * header (NDJSON, then SSE); undefined for a JSON answer.
 */
export function requestedStreamFormat(
  accept: string | undefined,
  query: StreamFormat | 'none' | undefined,
): StreamFormat | undefined {
  if (query) return query === 'none' ? undefined : query;
  if (/application\/x-ndjson/i.test(accept ?? '')) return 'ndjson';
  if (/text\/event-stream/i.test(accept ?? '')) return 'sse';
  return undefined;
}

export interface StreamCallbacks {
  onStdout(text: string): void;
  onStderr(text: string): void;
  onResult(result: ExecutionResult): void;
  signal: AbortSignal;
}

/**
 * A streamed response: `produce` sends events until it resolves, then the
 * stream ends. `signal` aborts when the client goes away.
 */
export function eventStream<E extends { type: string }>(
  format: StreamFormat,
  produce: (send: (event: E) => void, signal: AbortSignal) => Promise<void>,
): Response {
  const encoder = new TextEncoder();
  const abort = new AbortController();
  let closed = false;
  const stream = new ReadableStream<Uint8Array>({
    start(controller) {
      const send = (event: E): void => {
        if (closed) return;
        const text =
          format === 'ndjson'
            ? `${JSON.stringify(event)}\n`
            : `event: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`;
        controller.enqueue(encoder.encode(text));
      };
      void produce(send, abort.signal).finally(() => {
        if (closed) return;
        closed = true;
        controller.close();
      });
    },
    cancel() {
      closed = true;
      abort.abort();
    },
  });
  return new Response(stream, {
    status: 200,
    headers: {
      'content-type': format === 'ndjson' ? 'application/x-ndjson' : 'text/event-stream',
      'cache-control': 'no-cache',
      'x-accel-buffering': 'no',
    },
  });
}

export function streamExecution(
  format: StreamFormat,
  run: (callbacks: StreamCallbacks) => Promise<{ execution: Execution; body: unknown }>,
  presentResult: (result: ExecutionResult) => unknown,
): Response {
  return eventStream<ExecutionStreamEvent>(format, (send, signal) =>
    run({
      onStdout: (text) => send({ type: 'stdout-delta', text }),
      onStderr: (text) => send({ type: 'stderr-delta', text }),
      onResult: (result) => send({ type: 'result-ready', result: presentResult(result) }),
      signal,
    })
      .then(({ body }) => send({ type: 'execution-end', execution: body }))
      .catch((error: unknown) => send({ type: 'error', ...errorBody(toHttpError(error)) })),
  );
}
