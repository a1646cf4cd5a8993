/**
 * The door to the apps sandboxes serve: a request whose host name is `PORT-ID.DOMAIN`, or that
 * carries E2B's `E2b-Sandbox-Id` and `E2b-Sandbox-Port` headers for a port of its own, goes to
 * that port inside that sandbox (port-address.ts), before the API, the web UI or anything else of
 * the server sees it: a sandbox's host name reaches nothing but its apps, and its apps nothing but
 * their own traffic.
 *
 * Which session serves it and who may reach it is port-access.ts's. Answers of its own are E2B's
 * proxy's: JSON with `sandboxId`, `message` and `code`, and `port` when nothing listens there (502).
 * A preview link's token, in a navigation's query, becomes a cookie of that host alone (303 to the
 * same URL without it), so the frame that shows the app carries it on every later request.
 */
import { type IncomingMessage, type ServerResponse, STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import { SandcellError } from '../../errors.js';
import type { ServerContext } from '../core/context.js';
import type { SandboxTable } from '../e2b/sandbox-table.js';
import { PortAccess, PortAnswer, PREVIEW_COOKIE } from './port-access.js';
import { type PortAddress, portAddressOf, sandboxDomain } from './port-address.js';
import { proxyHttp, proxyUpgrade } from './port-proxy.js';

/** Requests to one sandbox's ports under way at once (WebSockets included); past it, 503. */
const MAX_IN_FLIGHT_PER_SANDBOX = 256;
/** And to all the sandboxes of one key: one key's apps cannot take every connection the server has. */
const MAX_IN_FLIGHT_PER_KEY = 1024;

export interface PortDoorOptions {
  server: ServerContext;
  sandboxes: SandboxTable;
}

const MESSAGES: Record<string, { status: number; message: string }> = {
  'port-closed': { status: 502, message: 'The sandbox is running but port is not open' },
  'port-busy': { status: 503, message: 'The sandbox has as many connections to its ports open as it may' },
  'port-unreachable': { status: 504, message: 'The sandbox did not answer in time' },
  'ports-unavailable': { status: 501, message: "This sandbox's ports cannot be reached on this server" },
};

const TOO_MANY = ({ sandboxId }: PortAddress, of = 'this sandbox') =>
  new PortAnswer(503, `Too many requests to ${of} at once`, { sandboxId }, { 'Retry-After': '1' });

export class PortDoor {
  private readonly bySandbox = new Map<string, number>();
  private readonly byKey = new Map<string, number>();
  private readonly access: PortAccess;

  constructor(private readonly options: PortDoorOptions) {
    this.access = new PortAccess(options.server, options.sandboxes);
  }

  /** The port a request is for, or undefined when it is the server's own. */
  claims(request: IncomingMessage): PortAddress | undefined {
    return portAddressOf(request, this.options.server.options.sandboxDomain);
  }

  /** Answers a request for a port: the app's answer, or the door's own. */
  async serve(request: IncomingMessage, response: ServerResponse, address: PortAddress): Promise<void> {
    const release = enter(this.bySandbox, address.sandboxId, MAX_IN_FLIGHT_PER_SANDBOX);
    if (!release) return this.answer(response, address, TOO_MANY(address));
    response.once('close', release);
    try {
      const resolved = await this.access.resolve(request, address);
      const releaseKey = enter(this.byKey, resolved.ownerId, MAX_IN_FLIGHT_PER_KEY);
      if (!releaseKey) return this.answer(response, address, TOO_MANY(address, "this key's sandboxes"));
      response.once('close', releaseKey);
      if (resolved.previewFromQuery !== undefined && (request.method === 'GET' || request.method === 'HEAD')) {
        // The link's token becomes a cookie of this host alone, and the app's own URL is loaded without it.
        response.writeHead(303, {
          location: resolved.path,
          'set-cookie': `${PREVIEW_COOKIE}=${resolved.previewFromQuery}; Path=/; HttpOnly; ${this.cookieScope(request)}`,
          'cache-control': 'no-store',
          'content-length': 0,
        });
        response.end();
        return;
      }
      proxyHttp(request, response, resolved.target, resolved.path, (error) =>
        this.answer(response, address, this.failure(error, address, 'app')),
      );
    } catch (error) {
      this.answer(response, address, this.failure(error, address));
    }
  }

  /** An upgrade for a port (a WebSocket): joined to the app's, or answered as the door's own and closed. */
  async upgrade(request: IncomingMessage, socket: Duplex, head: Buffer, address: PortAddress): Promise<void> {
    socket.on('error', () => socket.destroy());
    const release = enter(this.bySandbox, address.sandboxId, MAX_IN_FLIGHT_PER_SANDBOX);
    if (!release) return this.answerRaw(socket, address, TOO_MANY(address));
    socket.once('close', release);
    try {
      const resolved = await this.access.resolve(request, address);
      const releaseKey = enter(this.byKey, resolved.ownerId, MAX_IN_FLIGHT_PER_KEY);
      if (!releaseKey) return this.answerRaw(socket, address, TOO_MANY(address, "this key's sandboxes"));
      socket.once('close', releaseKey);
      proxyUpgrade(request, socket, head, resolved.target, resolved.path, (error) =>
        this.answerRaw(socket, address, this.failure(error, address, 'app')),
      );
    } catch (error) {
      this.answerRaw(socket, address, this.failure(error, address));
    }
  }

  /**
   * Where the preview cookie goes with the app's requests. The page that frames the app is another
   * site (PORT-ID.localhost is a site of its own, as is a domain of the app's own), so the cookie must
   * be one a frame sends: `SameSite=None; Secure`, partitioned by the framing site (browsers that keep
   * third-party cookies out keep partitioned ones), which a browser takes over https and from
   * `*.localhost` (a secure context even over http). A domain of one's own over plain http has only
   * `SameSite=Lax`: a tab works, a frame of another site does not.
   */
  private cookieScope(request: IncomingMessage): string {
    const { sandboxScheme, sandboxDomain: configured } = this.options.server.options;
    const name = sandboxDomain(configured, request.socket.localPort).replace(/:\d+$/, '');
    const secure = sandboxScheme === 'https' || name === 'localhost' || name.endsWith('.localhost');
    return secure ? 'SameSite=None; Secure; Partitioned' : 'SameSite=Lax';
  }

  /**
   * The door's answer for what went wrong. `app`: it went wrong talking to the app (the connection
   * failed, or the app closed it, or answered what is not HTTP): a 502 that says so, the app's own
   * doing. Anything else is the door's, and logged.
   */
  private failure(error: unknown, address: PortAddress, during?: 'app'): PortAnswer {
    if (error instanceof PortAnswer) return error;
    const { sandboxId, port } = address;
    if (error instanceof SandcellError) {
      const known = MESSAGES[error.code];
      if (known) {
        return new PortAnswer(
          known.status,
          known.message,
          { sandboxId, ...(error.code === 'port-closed' ? { port } : {}) },
          error.code === 'port-busy' ? { 'Retry-After': '1' } : {},
        );
      }
      if (error.code === 'session-closed') return new PortAnswer(404, 'The sandbox was not found', { sandboxId });
    }
    if (during === 'app') {
      this.options.server.logger.debug({ sandboxId, port, error: (error as Error).message }, 'an app gave no answer');
      return new PortAnswer(502, 'The app closed the connection without an answer', { sandboxId, port });
    }
    this.options.server.logger.warn(
      { sandboxId, port, error: (error as Error).message },
      'a request for a port failed',
    );
    return new PortAnswer(502, 'The sandbox could not be reached', { sandboxId });
  }

  private body(answer: PortAnswer): string {
    return JSON.stringify({ ...answer.fields, message: answer.message, code: answer.status });
  }

  private answer(response: ServerResponse, _address: PortAddress, answer: PortAnswer): void {
    if (response.headersSent) {
      response.destroy();
      return;
    }
    const body = this.body(answer);
    try {
      // The reason given: an app's that Node refused may be left on the response.
      response.writeHead(answer.status, STATUS_CODES[answer.status] ?? 'Error', {
        ...answer.headers,
        'content-type': 'application/json',
        'content-length': Buffer.byteLength(body),
        // The door's answer is the server's: no page of an app, nothing to sniff or frame.
        'x-content-type-options': 'nosniff',
        'cache-control': 'no-store',
      });
      response.end(body);
    } catch {
      response.destroy();
    }
  }

  private answerRaw(socket: Duplex, _address: PortAddress, answer: PortAnswer): void {
    if (socket.destroyed) return;
    const body = this.body(answer);
    const extra = Object.entries(answer.headers).map(([name, value]) => `${name}: ${value}\r\n`);
    socket.end(
      `HTTP/1.1 ${answer.status} ${STATUS_CODES[answer.status] ?? 'Error'}\r\n${extra.join('')}` +
        `content-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
    );
  }
}

/** Counts one under `key` in `counts`: its release (idempotent), or undefined when `bound` are under way. */
function enter(counts: Map<string, number>, key: string, bound: number): (() => void) | undefined {
  const count = counts.get(key) ?? 0;
  if (count >= bound) return undefined;
  counts.set(key, count + 1);
  let released = false;
  return () => {
    if (released) return;
    released = true;
    const left = (counts.get(key) ?? 1) - 1;
    if (left > 0) counts.set(key, left);
    else counts.delete(key);
  };
}
