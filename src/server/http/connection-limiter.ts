/**
 * Bounds the TCP connections the HTTP server holds, overall and per client
 * address, so a flood of idle connections cannot lock out the key holder.
 * At a cap, the oldest connection that is idle and never proved a key is
 * closed to make room; only when none is left is the new connection refused.
 * A connection counts as busy while a request on it is being answered (a
 * streamed execution may take minutes), and as trusted once a request on it
 * carried a valid key.
 */
import type { Server } from 'node:http';
import type { Socket } from 'node:net';

export interface ConnectionLimiterOptions {
  /** Open connections on the whole server. */
  maxConnections: number;
  /** Open connections from one client address. */
  maxConnectionsPerAddress: number;
  /** Called for each connection closed or refused to stay within a cap, for metrics. */
  onShed?(reason: ShedReason): void;
}

export type ShedReason = 'connections' | 'connections-per-address';

interface Tracked {
  address: string;
  /** Requests on it being answered now. */
  active: number;
  /** A request on it carried a valid key. */
  trusted: boolean;
}

export class ConnectionLimiter {
  /** In the order they were opened, so eviction takes the oldest first. */
  private readonly sockets = new Map<Socket, Tracked>();
  private readonly byAddress = new Map<string, Set<Socket>>();

  constructor(private readonly options: ConnectionLimiterOptions) {}

  /** Connections open now. */
  get size(): number {
    return this.sockets.size;
  }

  attach(server: Server): void {
    server.on('connection', (socket: Socket) => this.admit(socket));
    server.on('request', (request, response) => {
      const tracked = this.sockets.get(request.socket);
      if (!tracked) return;
      tracked.active++;
      response.once('close', () => tracked.active--);
    });
  }

  /** Marks the connection as one a key holder uses: it is never closed to make room. */
  trust(socket: Socket): void {
    const tracked = this.sockets.get(socket);
    if (tracked) tracked.trusted = true;
  }

  private admit(socket: Socket): void {
    const address = socket.remoteAddress ?? 'unknown';
    const fromAddress = this.byAddress.get(address);
    if (
      fromAddress &&
      fromAddress.size >= this.options.maxConnectionsPerAddress &&
      !this.evictOne(fromAddress, 'connections-per-address')
    ) {
      this.refuse(socket, 'connections-per-address');
      return;
    }
    if (this.sockets.size >= this.options.maxConnections && !this.evictOne(this.sockets.keys(), 'connections')) {
      this.refuse(socket, 'connections');
      return;
    }
    this.sockets.set(socket, { address, active: 0, trusted: false });
    const peers = fromAddress ?? new Set<Socket>();
    peers.add(socket);
    this.byAddress.set(address, peers);
    socket.once('close', () => this.forget(socket));
  }

  /** Closes the oldest idle connection among `candidates` that never proved a key; false if there is none. */
  private evictOne(candidates: Iterable<Socket>, reason: ShedReason): boolean {
    for (const socket of candidates) {
      const tracked = this.sockets.get(socket);
      if (!tracked || tracked.trusted || tracked.active > 0) continue;
      this.forget(socket);
      socket.destroy();
      this.options.onShed?.(reason);
      return true;
    }
    return false;
  }

  private refuse(socket: Socket, reason: ShedReason): void {
    this.options.onShed?.(reason);
    socket.destroy();
  }

  private forget(socket: Socket): void {
    const tracked = this.sockets.get(socket);
    if (!tracked) return;
    this.sockets.delete(socket);
    const peers = this.byAddress.get(tracked.address);
    peers?.delete(socket);
    if (peers?.size === 0) this.byAddress.delete(tracked.address);
  }
}
