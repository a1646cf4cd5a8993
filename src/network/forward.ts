/**
 * A plain-HTTP request in absolute form (`GET http://host/path HTTP/1.1`): checked, rewritten to
 * origin form and sent to the checked address with one request per connection. The rewrite drops
 * what belongs to the hop to the gate (Proxy-Authorization above all: it is never forwarded); the
 * same rewrite adds a destination-bound secret to the requests HTTPS interception reads. A plain
 * request to a host with a secret is refused: the key is never sent in clear.
 */
import type { Socket } from 'node:net';
import { type GateContext, trackSocket } from './gate-connection.js';
import { GateRefusal } from './refusal.js';
import { relay } from './relay.js';
import { headerValues, type RequestHead } from './request-head.js';
import { parseAbsoluteTarget } from './request-target.js';
import { connectChecked } from './upstream-connect.js';

/** Headers for the hop from the sandbox to the gate; the destination never sees them. */
const HOP_HEADERS = new Set([
  'connection',
  'keep-alive',
  'proxy-authorization',
  'proxy-authenticate',
  'proxy-connection',
  'te',
  'trailer',
  'upgrade',
  'host',
]);

export async function handleForward(
  context: GateContext,
  client: Socket,
  head: RequestHead,
  rest: Buffer,
): Promise<void> {
  const { destination, originForm } = parseAbsoluteTarget(head.target);
  // A secret would cross the network in clear: it is added over HTTPS only (intercept.ts), and a plain
  // request to its host is refused rather than carried without it (an unexplained 401 from the host).
  if (context.secrets.has(destination.host)) {
    throw new GateRefusal(
      403,
      'secret-needs-https',
      `a key for ${destination.host} is added to HTTPS requests only, so that it never crosses the network in clear; use https://`,
    );
  }
  const bodyBytes = bodyLength(head);
  if (rest.length > bodyBytes) {
    throw new GateRefusal(
      400,
      'pipelining',
      'a second request arrived before the first was answered; send one at a time',
    );
  }
  // Everything about the request is settled before the destination is looked up or contacted.
  const outgoing = rewriteHead(context, head, destination.host, destination.authority, originForm);
  if (!context.budget.spend('out', outgoing.length + rest.length)) {
    throw new GateRefusal(429, 'byte-limit', "this session's outgoing byte limit is used up");
  }
  const started = Date.now();
  const { socket: upstream, address } = await connectChecked(context, destination);
  if (client.destroyed) {
    upstream.destroy();
    return;
  }
  trackSocket(context, upstream);
  await sendRequest(context, {
    client,
    upstream,
    outgoing,
    rest,
    bodyBytes,
    kind: 'forward',
    destination,
    address,
    started,
  });
}

/**
 * Sends one request's rewritten head and the body bytes that came with it, relays the rest of the
 * body (no more than it declared) and the answer, and logs the connection's end: the tail of both
 * plain-HTTP forwarding and HTTPS interception.
 */
export async function sendRequest(
  context: GateContext,
  request: {
    client: Socket;
    upstream: Socket;
    outgoing: Buffer;
    rest: Buffer;
    bodyBytes: number;
    kind: 'forward' | 'intercept';
    destination: { host: string; port: number };
    address: string;
    started: number;
  },
): Promise<void> {
  const { upstream, outgoing, rest } = request;
  upstream.write(outgoing);
  if (rest.length > 0) upstream.write(rest);
  const { done } = relay({
    client: request.client,
    upstream,
    budget: context.budget,
    idleTimeoutMs: context.limits.idleTimeoutMs,
    clientBytesAllowed: request.bodyBytes - rest.length,
  });
  const result = await done;
  context.log({
    event: 'connection-end',
    sessionId: context.sessionId,
    kind: request.kind,
    host: request.destination.host,
    port: request.destination.port,
    address: request.address,
    bytesOut: result.bytesOut + outgoing.length + rest.length,
    bytesIn: result.bytesIn,
    durationMs: Date.now() - request.started,
    outcome: context.closing && result.outcome === 'closed' ? 'gate-closed' : result.outcome,
  });
}

/**
 * The body's length from a single Content-Length. A chunked body is refused with 411 rather than
 * re-framed: the common tools (pip, requests, curl, git) send lengths, and a second framing
 * parser in the gate is a second place for two readers to disagree.
 */
export function bodyLength(head: RequestHead): number {
  const lengths = headerValues(head, 'content-length');
  const encodings = headerValues(head, 'transfer-encoding');
  if (encodings.length > 0 && lengths.length > 0) {
    throw new GateRefusal(400, 'smuggling', 'both Content-Length and Transfer-Encoding were sent');
  }
  if (encodings.length > 0) {
    throw new GateRefusal(411, 'body-unsupported', 'a chunked request body is not carried; send a Content-Length');
  }
  if (lengths.length > 1) throw new GateRefusal(400, 'smuggling', 'more than one Content-Length was sent');
  const [length] = lengths;
  if (length === undefined) return 0;
  if (!/^[0-9]{1,15}$/.test(length))
    throw new GateRefusal(400, 'smuggling', `the Content-Length ${JSON.stringify(length)} is not a number`);
  return Number(length);
}

export function rewriteHead(
  context: GateContext,
  head: RequestHead,
  host: string,
  authority: string,
  originForm: string,
): Buffer {
  if (headerValues(head, 'host').length > 1)
    throw new GateRefusal(400, 'smuggling', 'more than one Host header was sent');
  const named = new Set(
    headerValues(head, 'connection').flatMap((value) => value.split(',').map((name) => name.trim().toLowerCase())),
  );
  if (named.has('content-length') || named.has('host')) {
    throw new GateRefusal(400, 'smuggling', 'the Connection header names a header that frames or routes the request');
  }
  const secrets = context.secrets.get(host) ?? [];
  const replaced = new Set(secrets.map((secret) => secret.header.toLowerCase()));
  const kept = head.headers.filter(([name]) => {
    const lower = name.toLowerCase();
    return !HOP_HEADERS.has(lower) && !named.has(lower) && !replaced.has(lower);
  });
  const lines = [
    `${head.method} ${originForm} HTTP/1.1`,
    `Host: ${authority}`,
    ...kept.map(([name, value]) => `${name}: ${value}`),
    ...secrets.map((secret) => `${secret.header}: ${secret.value}`),
    'Connection: close',
    '',
    '',
  ];
  return Buffer.from(lines.join('\r\n'), 'latin1');
}
