/**
 * The host's way in to the ports of a session's sandboxes. The sandbox's
 * network namespace has loopback alone, and the host is outside it; so the
 * host listens on a unix socket of the session's own, which every sandbox of
 * the session has bound in at INGRESS_SOCKET_MOUNT, and asks the supervisor
 * (`port-connect`, with the port and a token it chose) to connect to the port
 * inside and then to this socket, where it writes `TOKEN ok`, `TOKEN closed`
 * or `TOKEN busy` before the port's bytes (src/kernel/sandcell_ports.py).
 *
 * Everything arriving on the socket is the sandbox's, so untrusted: a
 * connection is taken only under a token the host is waiting for (128 random
 * bits, which code in the sandbox cannot know), its first line is bounded and
 * must come within a second, and connections that are not yet identified are
 * few. Bytes after the line are the port's (a server that speaks first, such
 * as VNC's) and stay in the socket. The socket belongs to the sandbox's uid,
 * mode 0600, in a directory others may cross but not list (socket-owner.ts).
 */
import { randomBytes } from 'node:crypto';
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { PortError } from '../errors.js';
import { restrictToOwner } from './socket-owner.js';

/** Where the session's ingress socket appears inside the sandbox. */
export const INGRESS_SOCKET_MOUNT = '/run/sandcell/ingress.sock';

const LINE_BYTES = 64;
const IDENTIFY_MS = 1_000;
/** Connections not yet identified by their line, at once: code in the sandbox can open these too. */
const MAX_UNIDENTIFIED = 32;
/** Tokens waited for at once: connections being opened to the sandbox's ports. */
const MAX_WAITING = 256;

export interface IngressChannel {
  /** The host path of the socket; the backend binds it into every sandbox of the session. */
  readonly socketPath: string;
  /** Set when the socket could not be given to the sandbox's uid (see socket-owner.ts). */
  readonly socketGroup?: number;
  /**
   * A token to send with `port-connect`, and the connection that arrives under it, paused (or
   * why none does); `cancel` stops waiting (the request could not be sent), and a connection under the
   * token later is refused.
   */
  expect(port: number, timeoutMs: number): { token: string; connection: Promise<Socket>; cancel(): void };
  /** Stops listening; connections waited for fail. Idempotent. */
  close(): Promise<void>;
  /** How many connections to the sandbox's ports are open now (a checkpoint cannot keep one). */
  openConnections(): number;
}

interface Waiting {
  port: number;
  resolve(socket: Socket): void;
  reject(error: Error): void;
  timer: NodeJS.Timeout;
}

export async function openIngress(options: {
  owner?: { uid: number; gid: number } | undefined;
  directory?: string;
}): Promise<IngressChannel> {
  const directory = await mkdtemp(path.join(options.directory ?? tmpdir(), 'sandcell-ingress-'));
  await chmod(directory, 0o711);
  const socketPath = path.join(directory, 'ingress.sock');
  const waiting = new Map<string, Waiting>();
  /** Connections whose line has not come, oldest first: each drops itself (a function). */
  const unidentified = new Set<() => void>();
  /** Connections handed out and not closed yet. */
  const open = new Set<Socket>();
  let closed = false;

  const identify = (socket: Socket) => {
    if (closed) {
      socket.destroy();
      return;
    }
    // Full: the oldest goes, not this one. The supervisor writes its line as it connects, so code in the
    // sandbox that holds connections open without one cannot keep the host's from arriving.
    if (unidentified.size >= MAX_UNIDENTIFIED) unidentified.values().next().value?.();
    let line = Buffer.alloc(0);
    let done = false;
    const drop = () => {
      if (finish()) socket.destroy();
    };
    unidentified.add(drop);
    const finish = () => {
      if (done) return false;
      done = true;
      unidentified.delete(drop);
      clearTimeout(timer);
      socket.off('data', onData);
      return true;
    };
    const timer = setTimeout(drop, IDENTIFY_MS);
    const onData = (chunk: Buffer) => {
      line = Buffer.concat([line, chunk]);
      const end = line.indexOf(0x0a);
      if (end < 0) {
        if (line.length > LINE_BYTES) drop();
        return;
      }
      if (!finish()) return;
      socket.pause();
      const match = /^([0-9a-f]{32}) (ok|closed|busy)$/.exec(line.subarray(0, end).toString('latin1'));
      const entry = match?.[1] ? waiting.get(match[1]) : undefined;
      if (!match?.[1] || !entry) {
        socket.destroy();
        return;
      }
      waiting.delete(match[1]);
      clearTimeout(entry.timer);
      if (match[2] !== 'ok') {
        socket.destroy();
        entry.reject(
          match[2] === 'closed'
            ? new PortError('port-closed', `Nothing in the sandbox listens on port ${entry.port}.`)
            : new PortError('port-busy', 'The sandbox has as many connections to its ports open as it may (256).'),
        );
        return;
      }
      const rest = line.subarray(end + 1);
      if (rest.length > 0) socket.unshift(rest);
      open.add(socket);
      socket.once('close', () => open.delete(socket));
      entry.resolve(socket);
    };
    socket.on('data', onData);
    socket.on('error', drop);
  };

  const server: Server = createServer({ pauseOnConnect: false }, identify);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(socketPath, () => {
      server.off('error', reject);
      resolve();
    });
  });
  let socketGroup: number | undefined;
  try {
    socketGroup = await restrictToOwner(socketPath, options.owner);
  } catch (error) {
    server.close();
    await rm(directory, { recursive: true, force: true });
    throw error;
  }
  let closing: Promise<void> | undefined;
  return {
    socketPath,
    openConnections: () => open.size,
    ...(socketGroup !== undefined ? { socketGroup } : {}),
    expect(port, timeoutMs) {
      if (closed) throw new PortError('ports-unavailable', 'The session is closed.');
      if (waiting.size >= MAX_WAITING) {
        throw new PortError(
          'port-busy',
          `${MAX_WAITING} connections to this session's ports are being opened already.`,
        );
      }
      const token = randomBytes(16).toString('hex');
      const connection = new Promise<Socket>((resolve, reject) => {
        const timer = setTimeout(() => {
          waiting.delete(token);
          reject(
            new PortError(
              'port-unreachable',
              `The sandbox did not connect to port ${port} within ${timeoutMs} ms (its supervisor is busy or stopped).`,
            ),
          );
        }, timeoutMs);
        waiting.set(token, { port, resolve, reject, timer });
      });
      const cancel = () => {
        const entry = waiting.get(token);
        if (!entry) return;
        waiting.delete(token);
        clearTimeout(entry.timer);
        entry.reject(new PortError('port-unreachable', `The connection to port ${port} was not asked for.`));
      };
      // A caller that cancels has its own error to give; this one is nobody's.
      connection.catch(() => undefined);
      return { token, connection, cancel };
    },
    close() {
      closing ??= (async () => {
        closed = true;
        for (const [token, entry] of waiting) {
          clearTimeout(entry.timer);
          entry.reject(new PortError('ports-unavailable', 'The session closed.'));
          waiting.delete(token);
        }
        await new Promise<void>((resolve) => server.close(() => resolve()));
        await rm(directory, { recursive: true, force: true });
      })();
      return closing;
    },
  };
}
