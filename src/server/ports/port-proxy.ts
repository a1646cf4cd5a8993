/**
 * HTTP to a port inside a sandbox: a reverse proxy over the session's ingress (session.ports),
 * with Node's own HTTP client on each connection. Bodies stream both ways with backpressure, so a
 * large upload or download, or an endless event stream, holds a chunk or so per direction and
 * never the whole; an upgrade (a WebSocket: a dev server's hot reload, noVNC, a notebook) becomes
 * a byte relay once the app agrees. Connections to a port are kept for the next request a little
 * while (a page's assets arrive as a burst), at most so many per port.
 *
 * The app is hostile to the page and to the server: what it answers is passed as its own, except
 * that hop-by-hop headers go, and a `Domain` on its cookies goes (host-only cookies: an app must
 * not set cookies for the server's host, or for another sandbox's), and nothing of sandcell's
 * (the E2B routing and token headers) reaches it.
 */
import {
  Agent,
  type ClientRequest,
  request as httpRequest,
  type IncomingMessage,
  type ServerResponse,
} from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { connect as tlsConnect } from 'node:tls';
import type { Session } from '../../session/session.js';
import { HOP_BY_HOP } from '../http/hop-by-hop.js';

/** Connections kept open for the next request, per port, and how long. */
const FREE_SOCKETS = 8;
const FREE_SOCKET_MS = 5_000;
/** Connections to one port at once; requests beyond wait their turn (the door bounds how many wait). */
const SOCKETS_PER_PORT = 64;

/** sandcell's own, which the app never sees. */
const OURS = /^e2b-(sandbox-id|sandbox-port|traffic-access-token)$/;

export interface PortTarget {
  session: Session;
  port: number;
  /** The app speaks TLS itself (E2B's httpsPorts): reached over TLS, its certificate unchecked. */
  tls: boolean;
  /** The Host the app sees; absent, the one the request came with. */
  host?: string;
  /** sandcell's own credentials the request carries, which the app never sees: a cookie, the key. */
  hidden?: { cookie?: string; authorization?: boolean };
}

/** An HTTP agent whose connections are the session's to one port (its ingress). */
class PortAgent extends Agent {
  constructor(private readonly target: Omit<PortTarget, 'host'>) {
    super({ keepAlive: true, maxSockets: SOCKETS_PER_PORT, maxFreeSockets: FREE_SOCKETS, timeout: FREE_SOCKET_MS });
  }

  override createConnection(
    _options: unknown,
    callback?: (error: Error | null, socket: Duplex) => void,
  ): Duplex | undefined {
    openConnection(this.target).then(
      (socket) => callback?.(null, socket),
      (error: Error) => callback?.(error, undefined as unknown as Duplex),
    );
    return undefined;
  }
}

/** A connection to the port, resumed once taken (plain), or wrapped in TLS first. */
async function openConnection(target: Omit<PortTarget, 'host'>): Promise<Socket> {
  const socket = await target.session.ports.connect(target.port);
  if (!target.tls) return socket;
  const secure = tlsConnect({ socket, rejectUnauthorized: false });
  socket.resume();
  return secure;
}

const agents = new WeakMap<Session, Map<string, PortAgent>>();

function agentFor(target: PortTarget): PortAgent {
  let byPort = agents.get(target.session);
  if (!byPort) {
    byPort = new Map();
    agents.set(target.session, byPort);
  }
  const key = `${target.port}/${target.tls}`;
  let agent = byPort.get(key);
  if (!agent) {
    agent = new PortAgent({ session: target.session, port: target.port, tls: target.tls });
    byPort.set(key, agent);
  }
  return agent;
}

/** The request's headers as the app gets them: no hop-by-hop ones, none of ours, the forwarding ones added. */
function upstreamHeaders(
  request: IncomingMessage,
  target: PortTarget,
  upgrade: boolean,
): Record<string, string | string[]> {
  const listed = new Set(
    String(request.headers.connection ?? '')
      .toLowerCase()
      .split(',')
      .map((name) => name.trim()),
  );
  const headers: Record<string, string | string[]> = {};
  const raw = request.rawHeaders;
  for (let index = 0; index + 1 < raw.length; index += 2) {
    const name = (raw[index] as string).toLowerCase();
    if (HOP_BY_HOP.has(name) || listed.has(name) || OURS.test(name) || name === 'host') continue;
    if (target.hidden?.authorization && (name === 'authorization' || name === 'x-api-key')) continue;
    let value = raw[index + 1] as string;
    if (name === 'cookie' && target.hidden?.cookie !== undefined) {
      value = withoutCookie(value, target.hidden.cookie);
      if (value === '') continue;
    }
    const existing = headers[name];
    headers[name] = existing === undefined ? [value] : [...existing, value];
  }
  const originalHost = request.headers.host ?? '';
  headers.host = target.host ?? originalHost;
  const forwardedFor = request.headers['x-forwarded-for'];
  const client = request.socket.remoteAddress ?? '';
  headers['x-forwarded-for'] = forwardedFor ? `${forwardedFor}, ${client}` : client;
  headers['x-forwarded-host'] ??= originalHost;
  headers['x-forwarded-proto'] ??= 'http';
  if (upgrade) {
    headers.connection = 'Upgrade';
    headers.upgrade = String(request.headers.upgrade ?? '');
  }
  return headers;
}

/** A Cookie header without the cookie `name`. */
function withoutCookie(header: string, name: string): string {
  return header
    .split(';')
    .map((part) => part.trim())
    .filter((part) => part !== '' && part.split('=', 1)[0] !== name)
    .join('; ');
}

/** Drops a `Domain` attribute: the cookie belongs to the host that set it alone. */
export function hostOnlyCookie(cookie: string): string {
  return cookie
    .split(';')
    .filter((part, index) => index === 0 || !/^\s*domain\s*=/i.test(part))
    .join(';');
}

/** The app's answer headers as the client gets them. */
function downstreamHeaders(answer: IncomingMessage): Record<string, string | string[]> {
  const listed = new Set(
    String(answer.headers.connection ?? '')
      .toLowerCase()
      .split(',')
      .map((name) => name.trim()),
  );
  const headers: Record<string, string | string[]> = {};
  const raw = answer.rawHeaders;
  for (let index = 0; index + 1 < raw.length; index += 2) {
    const name = (raw[index] as string).toLowerCase();
    if (HOP_BY_HOP.has(name) || listed.has(name)) continue;
    const value = name === 'set-cookie' ? hostOnlyCookie(raw[index + 1] as string) : (raw[index + 1] as string);
    const existing = headers[name];
    headers[name] = existing === undefined ? value : [...(Array.isArray(existing) ? existing : [existing]), value];
  }
  return headers;
}

function upstreamRequest(
  request: IncomingMessage,
  target: PortTarget,
  path: string,
  upgrade: boolean,
  failed: (error: Error) => void,
): ClientRequest {
  const headers = upstreamHeaders(request, target, upgrade);
  const upstream = upgrade
    ? httpRequest({
        method: request.method,
        path,
        headers,
        setHost: false,
        createConnection: (_options, callback) => {
          openConnection(target).then(
            (socket) => callback(null, socket),
            (error: Error) => callback(error, undefined as unknown as Socket),
          );
          return undefined as unknown as Socket;
        },
      })
    : httpRequest({ method: request.method, path, headers, setHost: false, agent: agentFor(target) });
  // A connection of the ingress comes paused, so that nothing is lost before the client listens: now it does.
  upstream.on('socket', (socket) => socket.resume());
  // Every error, not the first alone: a second one with no listener would end the process.
  upstream.on('error', failed);
  return upstream;
}

/**
 * Sends `request` to the app and its answer back. `failed` is told when the app could not be
 * reached before anything was answered (the caller answers it); afterwards a failure cuts the answer.
 */
export function proxyHttp(
  request: IncomingMessage,
  response: ServerResponse,
  target: PortTarget,
  path: string,
  failed: (error: Error) => void,
): void {
  let answered = false;
  const upstream = upstreamRequest(request, target, path, false, (error) => {
    if (!answered) failed(error);
    else response.destroy(error);
  });
  upstream.once('response', (answer) => {
    answer.on('error', (error) => response.destroy(error));
    answer.once('aborted', () => response.destroy());
    try {
      // The app's status and headers, as Node's parser took them; what Node will not send again (a
      // character it refuses in the reason) fails this answer alone, never the server. The response
      // half holds the app's headers by then: it is cut, not answered with the door's.
      response.writeHead(answer.statusCode ?? 502, answer.statusMessage, downstreamHeaders(answer));
    } catch {
      answer.destroy();
      response.destroy();
      return;
    }
    answered = true;
    answer.pipe(response);
  });
  // A client that goes away takes its request to the app with it.
  response.once('close', () => {
    if (!response.writableFinished) upstream.destroy();
  });
  request.pipe(upstream);
}

/**
 * An upgrade (a WebSocket) to the app: the request goes on, and once the app switches protocols
 * its answer goes back and both connections are joined. An app that declines answers as HTTP,
 * which goes back as is, and the client's connection ends.
 */
export function proxyUpgrade(
  request: IncomingMessage,
  client: Duplex,
  head: Buffer,
  target: PortTarget,
  path: string,
  failed: (error: Error) => void,
): void {
  let answered = false;
  client.on('error', () => client.destroy());
  const upstream = upstreamRequest(request, target, path, true, (error) => {
    if (!answered) failed(error);
    else client.destroy();
  });
  // A client that goes away before the app answers takes its request to the app with it.
  client.once('close', () => {
    if (!answered) upstream.destroy();
  });
  upstream.once('upgrade', (answer, app, appHead) => {
    answered = true;
    const lines = [`HTTP/1.1 ${answer.statusCode ?? 101} ${answer.statusMessage ?? 'Switching Protocols'}`];
    for (let index = 0; index + 1 < answer.rawHeaders.length; index += 2) {
      const name = answer.rawHeaders[index] as string;
      const value = answer.rawHeaders[index + 1] as string;
      lines.push(`${name}: ${name.toLowerCase() === 'set-cookie' ? hostOnlyCookie(value) : value}`);
    }
    client.write(`${lines.join('\r\n')}\r\n\r\n`);
    if (appHead.length > 0) client.write(appHead);
    if (head.length > 0) app.write(head);
    app.on('error', () => client.destroy());
    client.on('close', () => app.destroy());
    app.on('close', () => client.destroy());
    app.pipe(client);
    client.pipe(app);
  });
  upstream.once('response', (answer) => {
    answered = true;
    const lines = [`HTTP/1.1 ${answer.statusCode ?? 502} ${answer.statusMessage ?? ''}`];
    const headers = downstreamHeaders(answer);
    for (const [name, value] of Object.entries(headers)) {
      for (const each of Array.isArray(value) ? value : [value]) lines.push(`${name}: ${each}`);
    }
    lines.push('connection: close');
    client.write(`${lines.join('\r\n')}\r\n\r\n`);
    answer.on('error', () => client.destroy());
    answer.pipe(client);
  });
  upstream.end();
}
