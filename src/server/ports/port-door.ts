/**
 * The door to the apps sandboxes serve: a request whose host name is `PORT-ID.DOMAIN`, or that
 * carries E2B's `E2b-Sandbox-Id` and `E2b-Sandbox-Port` headers for a port of its own, goes to
 * that port inside that sandbox (port-address.ts), before the API, the web UI or anything else of
 * the server sees it: a sandbox's host name reaches nothing but its apps, and its apps nothing but
 * their own traffic.
 *
 * Which sandbox: an E2B sandbox, found as its own traffic finds it (a paused one answers 409 unless
 * its lifecycle lets traffic resume it; one the server paused while idle is resumed). Who may: any
 * client when the sandbox allows public traffic (E2B's default), else one that sends its traffic
 * token as `e2b-traffic-access-token` (403 without). Answers of its own are E2B's proxy's: JSON
 * with `sandboxId`, `message` and `code`, and `port` when nothing listens there (502).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Logger } from 'pino';
import { SandcellError } from '../../errors.js';
import { E2B_PREFIX } from '../e2b/routes.js';
import { tokenMatches } from '../e2b/sandbox-row.js';
import type { SandboxTable } from '../e2b/sandbox-table.js';
import { type PortAddress, portAddressOf } from './port-address.js';
import { type PortTarget, proxyHttp, proxyUpgrade } from './port-proxy.js';

/** Requests to one sandbox's ports under way at once; past it, 503 (the agents queue the rest below it). */
const MAX_IN_FLIGHT_PER_SANDBOX = 256;

export interface PortDoorOptions {
  /** The server's `--sandbox-domain`; undefined: `localhost:PORT` of the port a request came to. */
  sandboxDomain: string | undefined;
  sandboxes: SandboxTable;
  logger: Logger;
}

/** An answer of the door's own, in E2B's proxy's shape. */
class PortAnswer extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly fields: Record<string, unknown> = {},
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
  }
}

const MESSAGES: Record<string, { status: number; message: string }> = {
  'port-closed': { status: 502, message: 'The sandbox is running but port is not open' },
  'port-busy': { status: 503, message: 'The sandbox has as many connections to its ports open as it may' },
  'port-unreachable': { status: 504, message: 'The sandbox did not answer in time' },
  'ports-unavailable': { status: 501, message: "This sandbox's ports cannot be reached on this server" },
};

const TOO_MANY = ({ sandboxId }: PortAddress) =>
  new PortAnswer(503, 'Too many requests to this sandbox at once', { sandboxId }, { 'Retry-After': '1' });

export class PortDoor {
  private readonly inFlight = new Map<string, number>();

  constructor(private readonly options: PortDoorOptions) {}

  /** The port a request is for, or undefined when it is the server's own. */
  claims(request: IncomingMessage): PortAddress | undefined {
    return portAddressOf(request, this.options.sandboxDomain);
  }

  /** Answers a request for a port: the app's answer, or the door's own. */
  async serve(request: IncomingMessage, response: ServerResponse, address: PortAddress): Promise<void> {
    const release = this.enter(address.sandboxId);
    if (!release) return this.answer(response, address, TOO_MANY(address));
    response.once('close', release);
    try {
      const target = await this.target(request, address);
      proxyHttp(request, response, target, this.pathOf(request, address), (error) =>
        this.answer(response, address, this.failure(error, address)),
      );
    } catch (error) {
      this.answer(response, address, this.failure(error, address));
    }
  }

  /** An upgrade for a port (a WebSocket): joined to the app's, or answered as the door's own and closed. */
  async upgrade(request: IncomingMessage, socket: Duplex, head: Buffer, address: PortAddress): Promise<void> {
    socket.on('error', () => socket.destroy());
    const release = this.enter(address.sandboxId);
    if (!release) return this.answerRaw(socket, address, TOO_MANY(address));
    socket.once('close', release);
    try {
      const target = await this.target(request, address);
      proxyUpgrade(request, socket, head, target, this.pathOf(request, address), (error) =>
        this.answerRaw(socket, address, this.failure(error, address)),
      );
    } catch (error) {
      this.answerRaw(socket, address, this.failure(error, address));
    }
  }

  /** Counts a request to the sandbox's ports: its release (idempotent), or undefined past the bound. */
  private enter(sandboxId: string): (() => void) | undefined {
    const count = this.inFlight.get(sandboxId) ?? 0;
    if (count >= MAX_IN_FLIGHT_PER_SANDBOX) return undefined;
    this.inFlight.set(sandboxId, count + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const left = (this.inFlight.get(sandboxId) ?? 1) - 1;
      if (left > 0) this.inFlight.set(sandboxId, left);
      else this.inFlight.delete(sandboxId);
    };
  }

  /** The session behind the address, once the request may reach it. */
  private async target(request: IncomingMessage, address: PortAddress): Promise<PortTarget> {
    const { sandboxId, port } = address;
    const row = sandboxId === '' ? undefined : await this.options.sandboxes.forTraffic(sandboxId);
    if (!row) throw new PortAnswer(404, 'The sandbox was not found', { sandboxId });
    if (!row.traffic.public) {
      const token = request.headers['e2b-traffic-access-token'];
      if (typeof token !== 'string' || !tokenMatches(token, row.trafficAccessToken)) {
        throw new PortAnswer(403, 'This sandbox accepts traffic only with its traffic access token', { sandboxId });
      }
    }
    let sandbox: Awaited<ReturnType<SandboxTable['serve']>>;
    try {
      sandbox = await this.options.sandboxes.serve(row);
    } catch (error) {
      const status = (error as { status?: unknown }).status;
      if (status === 409) throw new PortAnswer(409, 'The sandbox is paused', { sandboxId, canAutoResume: false });
      if (status === 502) throw new PortAnswer(404, 'The sandbox was not found', { sandboxId });
      throw error;
    }
    const mask = row.traffic.maskRequestHost;
    // biome-ignore lint/suspicious/noTemplateCurlyInString: E2B's placeholder, replaced here
    const placeholder = '${PORT}';
    return {
      session: sandbox.entry.session,
      port,
      tls: row.traffic.httpsPorts.includes(port),
      ...(mask !== undefined ? { host: mask.replaceAll(placeholder, String(port)) } : {}),
    };
  }

  /** The app's path: as asked by host name; by E2B's headers, under the E2B door's prefix when sent there. */
  private pathOf(request: IncomingMessage, address: PortAddress): string {
    const url = request.url ?? '/';
    if (
      address.via === 'headers' &&
      (url === E2B_PREFIX || url.startsWith(`${E2B_PREFIX}/`) || url.startsWith(`${E2B_PREFIX}?`))
    ) {
      const rest = url.slice(E2B_PREFIX.length);
      return rest.startsWith('/') ? rest : `/${rest}`;
    }
    return url.startsWith('/') ? url : `/${url}`;
  }

  private failure(error: unknown, address: PortAddress): PortAnswer {
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
    this.options.logger.warn({ sandboxId, port, error: (error as Error).message }, 'a request for a port failed');
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
    response.writeHead(answer.status, {
      ...answer.headers,
      'content-type': 'application/json',
      'content-length': Buffer.byteLength(body),
      // The door's answer is the server's: no page of an app, nothing to sniff or frame.
      'x-content-type-options': 'nosniff',
      'cache-control': 'no-store',
    });
    response.end(body);
  }

  private answerRaw(socket: Duplex, _address: PortAddress, answer: PortAnswer): void {
    if (socket.destroyed) return;
    const body = this.body(answer);
    const extra = Object.entries(answer.headers).map(([name, value]) => `${name}: ${value}\r\n`);
    socket.end(
      `HTTP/1.1 ${answer.status} ${answer.status === 502 ? 'Bad Gateway' : 'Error'}\r\n${extra.join('')}` +
        `content-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
    );
  }
}
