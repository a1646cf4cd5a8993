/**
 * A stand-in for the network gate, for the channel's own tests: every connection on the session's unix
 * socket is piped to one 127.0.0.1 port (an HTTP server that answers proxy requests). It enforces
 * nothing; the real gate's tests are its own.
 */
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import type { NetworkChannel, NetworkGate } from '../../src/network/gate-channel.js';

export interface StandInGate extends NetworkGate {
  /** The allow-lists sessions opened their channels with, by session id. */
  readonly opened: Map<string, readonly string[]>;
}

export function standInGate(targetPort: number): StandInGate {
  const opened = new Map<string, readonly string[]>();
  return {
    opened,
    async openChannel({ sessionId, allow }): Promise<NetworkChannel> {
      opened.set(sessionId, allow);
      const directory = await mkdtemp(path.join(os.tmpdir(), 'sandcell-stand-in-gate-'));
      // The sandbox runs as the session's own host uid: it must reach the socket, not list the directory.
      await chmod(directory, 0o711);
      const socketPath = path.join(directory, 'gate.sock');
      const sockets = new Set<net.Socket>();
      const server = net.createServer((client) => {
        const upstream = net.connect(targetPort, '127.0.0.1');
        sockets.add(client).add(upstream);
        client.pipe(upstream).pipe(client);
        const end = () => {
          client.destroy();
          upstream.destroy();
          sockets.delete(client);
          sockets.delete(upstream);
        };
        client.on('error', end).on('close', end);
        upstream.on('error', end).on('close', end);
      });
      await new Promise<void>((resolve) => server.listen(socketPath, resolve));
      await chmod(socketPath, 0o666);
      let closing: Promise<void> | undefined;
      return {
        socketPath,
        close: () => {
          closing ??= (async () => {
            for (const socket of sockets) socket.destroy();
            await new Promise<void>((resolve) => server.close(() => resolve()));
            await rm(directory, { recursive: true, force: true });
          })();
          return closing;
        },
      };
    },
  };
}
