/**
 * HTTPS to a host the session has a secret for. The key must never enter the sandbox, so the gate
 * cannot tunnel these bytes blind: it opens its own TLS connection to the destination (verifying
 * the real certificate against the system's authorities and the session's trusted ones), answers
 * the CONNECT, ends the sandbox's TLS with a certificate from the session's own authority, reads one
 * request with the same strict head parser as plain HTTP, adds the secret, and carries the answer
 * back. One request per connection: the upstream is told `Connection: close`, and the sandbox's
 * connection ends with it, so no second request can ride on a connection already checked. HTTP/1.1
 * only: ALPN offers the sandbox nothing else, and a client that insists on h2 fails its handshake.
 */
import type { Socket } from 'node:net';
import { connect as connectTls, TLSSocket } from 'node:tls';
import { bodyLength, rewriteHead, sendRequest } from './forward.js';
import { type GateContext, trackSocket } from './gate-connection.js';
import { GateRefusal, writeRefusal } from './refusal.js';
import { headerValues, readRequestHead } from './request-head.js';
import { type Destination, parseAuthority } from './request-target.js';

export interface InterceptInput {
  client: Socket;
  /** The TCP connection to the checked address; TLS to the destination starts on it here. */
  upstream: Socket;
  address: string;
  destination: Destination;
  started: number;
}

export async function handleIntercept(context: GateContext, input: InterceptInput): Promise<void> {
  const { client, destination } = input;
  const authority = context.authority;
  if (!authority) throw new Error('a gate with secrets has a session authority');
  trackSocket(context, input.upstream);
  const upstream = await verifiedUpstream(context, input);
  trackSocket(context, upstream);
  client.write('HTTP/1.1 200 Connection established\r\n\r\n');
  const secureClient = new TLSSocket(client, {
    isServer: true,
    secureContext: authority.contextFor(destination.host),
    ALPNProtocols: ['http/1.1'],
  });
  secureClient.on('error', () => {
    secureClient.destroy();
    upstream.destroy();
  });
  const headTimer = setTimeout(() => secureClient.destroy(), context.limits.idleTimeoutMs);
  let outgoing: Buffer;
  let rest: Buffer;
  let bodyBytes: number;
  try {
    const read = await readRequestHead(secureClient, context.limits.maxHeadBytes);
    clearTimeout(headTimer);
    rest = read.rest;
    checkOriginRequest(read.head.target, headerValues(read.head, 'host'), destination);
    bodyBytes = bodyLength(read.head);
    if (rest.length > bodyBytes) {
      throw new GateRefusal(400, 'pipelining', 'a second request arrived before the first was answered');
    }
    outgoing = rewriteHead(context, read.head, destination.host, hostHeader(destination), read.head.target);
    if (!context.budget.spend('out', outgoing.length + rest.length)) {
      throw new GateRefusal(429, 'byte-limit', "this session's outgoing byte limit is used up");
    }
  } catch (error) {
    clearTimeout(headTimer);
    upstream.destroy();
    if (!(error instanceof GateRefusal)) {
      secureClient.destroy();
      return;
    }
    context.log({
      event: 'request-refused',
      sessionId: context.sessionId,
      status: error.status,
      rule: error.rule,
      message: error.message,
      target: `https://${destination.authority}`,
    });
    writeRefusal(secureClient, error);
    return;
  }
  await sendRequest(context, {
    client: secureClient,
    upstream,
    outgoing,
    rest,
    bodyBytes,
    kind: 'intercept',
    destination,
    address: input.address,
    started: input.started,
  });
}

/** TLS to the destination on the checked connection; a certificate that does not verify is a 502 to the CONNECT. */
function verifiedUpstream(context: GateContext, input: InterceptInput): Promise<TLSSocket> {
  const { host } = input.destination;
  return new Promise((resolve, reject) => {
    const secure = connectTls({
      socket: input.upstream,
      servername: host,
      ...(context.upstreamContext ? { secureContext: context.upstreamContext } : {}),
      ALPNProtocols: ['http/1.1'],
      minVersion: 'TLSv1.2',
    });
    const timer = setTimeout(() => {
      secure.destroy();
      reject(new GateRefusal(504, 'connect-timeout', `no TLS handshake with ${host} within the connect timeout`));
    }, context.limits.connectTimeoutMs);
    secure.once('secureConnect', () => {
      clearTimeout(timer);
      secure.removeAllListeners('error');
      secure.on('error', () => {});
      resolve(secure);
    });
    secure.once('error', (error: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      secure.destroy();
      reject(
        new GateRefusal(
          502,
          'upstream-certificate',
          `the TLS connection to ${host} failed (${error.code ?? 'error'}); the gate sends secrets only to a host whose certificate verifies`,
        ),
      );
    });
  });
}

/** Inside the tunnel a request names a path, and its Host names the host the tunnel was opened for. */
function checkOriginRequest(target: string, hosts: string[], destination: Destination): void {
  if (!target.startsWith('/')) {
    throw new GateRefusal(400, 'bad-request', 'a request inside an HTTPS tunnel names a path, as in GET /path');
  }
  if (hosts.length !== 1) throw new GateRefusal(400, 'smuggling', 'a request needs exactly one Host header');
  let named: Destination;
  try {
    named = parseAuthority(hosts[0] as string, destination.port);
  } catch {
    throw new GateRefusal(400, 'bad-request', 'the Host header is not a host name');
  }
  // The connection is already the checked one; the port a client writes (or leaves out) changes nothing.
  if (named.host !== destination.host) {
    throw new GateRefusal(
      421,
      'misdirected-request',
      `this tunnel is for ${destination.authority}; the request names ${hosts[0]}`,
    );
  }
}

function hostHeader(destination: Destination): string {
  return destination.port === 443 ? destination.host : `${destination.host}:${destination.port}`;
}
