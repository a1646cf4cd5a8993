/**
 * The ports something listens on inside a session's sandbox, and connections
 * to them from the host: what a server that serves the app an agent built
 * (`sandcell serve`'s URLs per port) stands on. A connection is asked of the
 * supervisor (`port-connect`) and arrives on the session's ingress socket
 * (src/network/ingress.ts); its traffic counts as the session's activity, so
 * a session whose app is in use is not closed for idling (one left open and
 * silent is no use: a browser tab's WebSocket does not keep it forever).
 */
import type { Socket } from 'node:net';
import { InvalidInputError, PortError } from '../errors.js';
import type { IngressChannel } from '../network/ingress.js';
import type { KernelConnection } from './kernel-connection.js';
import type { ListeningPort } from './kernel-messages.js';

export type { ListeningPort } from './kernel-messages.js';

/** How long the supervisor has to connect to a port and to the ingress socket. */
const CONNECT_TIMEOUT_MS = 10_000;
/** How often `waitFor` asks what listens. */
const WAIT_POLL_MS = 100;
const MAX_WAIT_MS = 10 * 60_000;

export interface SessionPortsHost {
  /** The live sandbox, started if there is none. */
  connection(): Promise<KernelConnection>;
  /** Absent when the backend cannot bind one into the sandbox (SandboxBackend.servesPorts). */
  ingress?: IngressChannel;
  checkOpen(): void;
  touch(): void;
  requestTimeoutMs: number;
}

export class SessionPorts {
  private open = 0;

  constructor(private readonly host: SessionPortsHost) {}

  /** Whether the session's ports can be reached at all (its backend binds an ingress socket in). */
  get available(): boolean {
    return this.host.ingress !== undefined;
  }

  /** Connections to the sandbox's ports open now. */
  get openConnections(): number {
    return this.open;
  }

  /** The TCP ports something listens on inside the sandbox (on an address its loopback reaches), by number. */
  async list(): Promise<ListeningPort[]> {
    this.host.checkOpen();
    const connection = await this.host.connection();
    const reply = await connection.request({ type: 'port-list' }, this.host.requestTimeoutMs);
    return reply.ports;
  }

  /**
   * A connection to `port` inside the sandbox, as if from its own loopback: a stream of the port's
   * bytes both ways. It comes paused, so that not a byte is lost before the caller listens: pipe
   * it, or resume it once its listeners are on. Rejects with a PortError: `port-closed` when
   * nothing listens there.
   */
  async connect(port: number, options: { timeoutMs?: number } = {}): Promise<Socket> {
    checkPort(port);
    this.host.checkOpen();
    const ingress = this.host.ingress;
    if (!ingress) {
      throw new PortError('ports-unavailable', "This session's backend cannot reach ports inside its sandboxes.");
    }
    const connection = await this.host.connection();
    const expected = ingress.expect(port, options.timeoutMs ?? CONNECT_TIMEOUT_MS);
    try {
      await connection.request({ type: 'port-connect', port, token: expected.token }, this.host.requestTimeoutMs);
    } catch (error) {
      expected.cancel();
      throw error;
    }
    const socket = await expected.connection;
    this.open += 1;
    this.host.touch();
    // A listener of its own, which leaves the socket paused for the caller's.
    socket.on('data', () => this.host.touch());
    socket.once('close', () => {
      this.open -= 1;
      this.host.touch();
    });
    return socket;
  }

  /**
   * Resolves once something listens on `port` inside the sandbox (a server the code or a
   * command started is up); rejects with a PortError `port-closed` after `timeoutMs`.
   */
  async waitFor(port: number, options: { timeoutMs?: number; signal?: AbortSignal } = {}): Promise<ListeningPort> {
    checkPort(port);
    const timeoutMs = options.timeoutMs ?? 30_000;
    if (!Number.isFinite(timeoutMs) || timeoutMs < 0 || timeoutMs > MAX_WAIT_MS) {
      throw new InvalidInputError(`A wait for a port is 0 to ${MAX_WAIT_MS} ms.`);
    }
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      options.signal?.throwIfAborted();
      const found = (await this.list()).find((listening) => listening.port === port);
      if (found) return found;
      if (Date.now() >= deadline) {
        throw new PortError('port-closed', `Nothing listened on port ${port} in the sandbox within ${timeoutMs} ms.`);
      }
      await new Promise((resolve) => setTimeout(resolve, Math.min(WAIT_POLL_MS, Math.max(deadline - Date.now(), 0))));
    }
  }
}

function checkPort(port: number): void {
  if (!Number.isInteger(port) || port < 1 || port > 65_535) {
    throw new InvalidInputError('A port is a whole number from 1 to 65535.');
  }
}
