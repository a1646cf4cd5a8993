/**
 * The Node request listener in front of the Hono app. Every response passes
 * here first, so what every answer carries (the request id, the keep-alive
 * hint) is set before anything can write it: Hono's adapter answers a request
 * it cannot parse (a backslash in the path, no Host, an asterisk-form target)
 * synchronously, and a header set after that throws ERR_HTTP_HEADERS_SENT out
 * of the server — one unauthenticated request used to end the process.
 *
 * Nothing one request does may stop the server: an error the app did not map
 * is logged with the request's id and answered 500 to that request alone.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { randomUUID } from 'node:crypto';
import { type IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { getRequestListener } from '@hono/node-server';
import type { Hono } from 'hono';
import type { Logger } from 'pino';
import { claimedPorts } from '../ports/port-address.js';
import type { PortDoor } from '../ports/port-door.js';
import { errorBody, HttpError } from './errors.js';
import type { Forwarder } from './forwarding.js';

/** The response header naming a request, as it appears in the server's log. */
export const REQUEST_ID_HEADER = 'X-Request-Id';

const requestIds = new AsyncLocalStorage<string>();

/** The id of the request being answered, or undefined outside one. */
export function currentRequestId(): string | undefined {
  return requestIds.getStore();
}

export interface RequestListenerOptions {
  logger: Logger;
  /** Sent as `Keep-Alive` on every answer (Node would announce the timeout it enforces, a longer one). */
  keepAliveHint: string;
  /** In a cluster: sends a request for a session another node holds to that node (forwarding.ts). */
  forwarder?: Forwarder;
  /** Requests for a port a sandbox serves, which nothing else of the server sees (ports/port-door.ts). */
  ports?: PortDoor;
}

const jsonResponse = (error: HttpError, requestId: string | undefined): Response =>
  new Response(JSON.stringify(errorBody(error)), {
    status: error.status,
    headers: { 'content-type': 'application/json', ...(requestId ? { [REQUEST_ID_HEADER]: requestId } : {}) },
  });

/** A request line or head the adapter could not turn into a URL (its `RequestError`). */
const isRequestError = (error: unknown): error is Error => error instanceof Error && error.name === 'RequestError';

export function createRequestListener(
  app: Hono,
  options: RequestListenerOptions,
): (request: IncomingMessage, response: ServerResponse) => void {
  const { logger } = options;
  const honoListener = getRequestListener(app.fetch, {
    // Called when no Request could be built from the head, or the app threw outside its own onError.
    errorHandler: (error) => {
      const requestId = currentRequestId();
      if (isRequestError(error)) {
        logger.debug({ requestId, reason: error.message }, 'malformed request refused');
        return jsonResponse(
          new HttpError(400, 'malformed-request', `The request could not be read: ${error.message}.`),
          requestId,
        );
      }
      logger.error({ err: error, requestId }, 'unexpected error answering a request');
      return jsonResponse(internalError(requestId), requestId);
    },
  });
  const { forwarder } = options;
  /** Answers here with `local`, or, in a cluster, on the node that holds the session the request is for. */
  const answer = (
    request: IncomingMessage,
    response: ServerResponse,
    requestId: string,
    local: () => Promise<void>,
  ): Promise<void> => {
    if (!forwarder) return requestIds.run(requestId, local);
    return requestIds.run(requestId, async () => {
      // A port's traffic is never a list, whatever its path (it is the app's).
      const list = claimedPorts.has(request) ? undefined : forwarder.listOf(request);
      if (list && (await forwarder.gather(request, response, list))) return;
      // A peer found dead on the way is passed over: the next look finds where the session went, or this node.
      for (let attempt = 0; attempt < 2; attempt++) {
        const peer = await forwarder.target(request).catch((error: Error) => {
          logger.warn({ requestId, error: error.message }, 'could not tell which node holds the session');
          return undefined;
        });
        if (!peer) break;
        if (await forwarder.forward(request, response, peer)) return;
      }
      try {
        await local();
      } finally {
        await forwarder.done(request);
      }
    });
  };
  const { ports } = options;
  return (request, response) => {
    const requestId = randomUUID();
    response.setHeader(REQUEST_ID_HEADER, requestId);
    response.setHeader('Keep-Alive', options.keepAliveHint);
    const address = ports?.claims(request);
    if (address) claimedPorts.set(request, address);
    const local =
      address && ports ? () => ports.serve(request, response, address) : () => honoListener(request, response);
    answer(request, response, requestId, local).catch((error: unknown) => {
      logger.error({ err: error, requestId, method: request.method }, 'unexpected error answering a request');
      if (response.headersSent) {
        response.destroy();
        return;
      }
      const body = JSON.stringify(errorBody(internalError(requestId)));
      response.writeHead(500, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
      response.end(body);
    });
  };
}

/** The 500 a client sees for an error the server did not expect: no internals, the id to find it in the log. */
export function internalError(requestId: string | undefined): HttpError {
  return new HttpError(
    500,
    'internal-error',
    `The server met an unexpected error; see its log${requestId ? ` (request ${requestId})` : ''}.`,
  );
}

/**
 * An upgrade request no front door takes (`Upgrade: h2c` from `curl --http2`,
 * a protocol nobody speaks) is answered as the plain HTTP request it also is,
 * as a server that ignores the header would (RFC 9110 §7.8), then the
 * connection is closed: Node has already handed the socket over, so it cannot
 * carry another request. Its body, if it has one, was not read by Node's
 * parser either, so such a request is refused instead.
 */
export function answerUpgradeAsHttp(
  request: IncomingMessage,
  socket: Duplex,
  listener: (request: IncomingMessage, response: ServerResponse) => void,
): void {
  socket.on('error', () => socket.destroy());
  const hasBody =
    request.headers['transfer-encoding'] !== undefined || Number(request.headers['content-length'] ?? 0) > 0;
  if (hasBody) {
    const body = JSON.stringify(
      errorBody(
        new HttpError(
          400,
          'upgrade-not-supported',
          `This server does not switch to ${JSON.stringify(request.headers.upgrade ?? '')} here; send the request without the Upgrade header.`,
        ),
      ),
    );
    socket.end(
      `HTTP/1.1 400 Bad Request\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
    return;
  }
  const response = new ServerResponse(request);
  response.shouldKeepAlive = false;
  response.assignSocket(socket as Socket);
  response.once('finish', () => {
    response.detachSocket(socket as Socket);
    socket.end();
  });
  listener(request, response);
}
