/**
 * The channels websocket, `GET /jupyter/api/kernels/{id}/channels`. Hono does
 * not see upgrades, so the Node server hands this the upgrades it `matches`,
 * and it applies what every HTTP request gets first: the connection caps (an upgrade
 * is a connection the limiter already counts), the browser guard (Host and
 * Origin), then the token and the kernel's owner. The subprotocol
 * `v1.kernel.websocket.jupyter.org` is chosen whenever it is offered (declining
 * it breaks `ws`, `websocket-client` and browsers); otherwise frames are JSON.
 */
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { type WebSocket, WebSocketServer } from 'ws';
import type { ServerContext } from '../core/context.js';
import type { ConnectionLimiter } from '../http/connection-limiter.js';
import { refuseUpgrade as refuse, upgradeGuard } from '../http/upgrade-guard.js';
import { decodeFrame, encodeV1Frame, FrameError, type FrameFormat, V1_SUBPROTOCOL } from './frame-codec.js';
import { authenticateJupyter } from './jupyter-auth.js';
import { jupyterErrorAnswer } from './jupyter-errors.js';
import type { KernelSocket } from './jupyter-kernel.js';
import type { KernelStore } from './kernel-store.js';
import { jsonFrames } from './output-frames.js';

const CHANNELS_PATH = /^\/jupyter\/api\/kernels\/([^/]+)\/channels\/?$/;
/** A client that stops reading is cut off past this much unsent output, rather than held in memory. */
const MAX_BUFFERED_BYTES = 64 * 1024 * 1024;

export interface JupyterChannels {
  /** Whether an upgrade request is for a kernel's channels websocket (the server sends it to `upgrade`). */
  matches(request: IncomingMessage): boolean;
  /** Answers the upgrade: refused with a status, or a websocket attached to the kernel. */
  upgrade(request: IncomingMessage, socket: Duplex, head: Buffer): void;
  /** Closes every channels socket (the server is shutting down). */
  close(): void;
}

export function jupyterChannels(
  server: ServerContext,
  kernels: KernelStore,
  connections?: ConnectionLimiter,
): JupyterChannels {
  const { apiKeys, logger } = server;
  // The same guard every HTTP request passes, run on the upgrade's headers.
  const guard = upgradeGuard(server);
  const sockets = new WebSocketServer({
    noServer: true,
    maxPayload: server.options.limits.maxRequestBytes,
    handleProtocols: (offered) => (offered.has(V1_SUBPROTOCOL) ? V1_SUBPROTOCOL : false),
  });

  const upgrade = async (request: IncomingMessage, socket: Duplex, head: Buffer): Promise<void> => {
    const url = new URL(request.url ?? '/', 'http://upgrade.invalid');
    const match = CHANNELS_PATH.exec(url.pathname);
    if (!match) {
      refuse(socket, 404, { message: 'Not Found', reason: null });
      return;
    }
    const refusal = await guard(request);
    if (refusal) {
      refuse(socket, refusal.status, refusal.body);
      return;
    }
    let kernel: Awaited<ReturnType<KernelStore['use']>>;
    try {
      const owner = authenticateJupyter(apiKeys, kernels.logins, {
        method: 'GET',
        authorization: request.headers.authorization,
        queryToken: url.searchParams.get('token') ?? undefined,
        cookie: request.headers.cookie,
      });
      // A dormant kernel (its session paused, here or before a restart) is resumed before its socket opens.
      kernel = await kernels.use(owner, decodeURIComponent(match[1] ?? ''));
    } catch (error) {
      const { status, message, reason } = jupyterErrorAnswer(error);
      refuse(socket, status, { message, reason });
      return;
    }
    if (apiKeys.enabled && 'remoteAddress' in socket) connections?.trust(socket as never);
    sockets.handleUpgrade(request, socket, head, (webSocket) => {
      const format: FrameFormat = webSocket.protocol === V1_SUBPROTOCOL ? 'v1' : 'json';
      const client = kernelSocket(webSocket, format);
      kernel.attach(client);
      webSocket.on('message', (data, isBinary) => {
        const bytes = Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data as ArrayBuffer);
        try {
          kernel.receive(client, decodeFrame(isBinary ? bytes : bytes.toString('utf8'), format));
        } catch (error) {
          if (error instanceof FrameError) {
            logger.debug({ kernel: kernel.id, reason: error.message }, 'jupyter frame dropped');
            return;
          }
          // Thrown here it would leave the process (an event handler); it ends this socket alone.
          logger.error({ err: error, kernel: kernel.id }, 'unexpected error on a jupyter channels socket');
          webSocket.close(1011, 'internal error; see the server log');
        }
      });
      webSocket.on('close', () => kernel.detach(client));
      webSocket.on('error', () => kernel.detach(client));
    });
  };

  return {
    matches(request) {
      if (request.headers.upgrade?.toLowerCase() !== 'websocket') return false;
      try {
        return CHANNELS_PATH.test(new URL(request.url ?? '/', 'http://upgrade.invalid').pathname);
      } catch {
        return false;
      }
    },
    upgrade(request, socket, head) {
      upgrade(request, socket, head).catch((error) => {
        logger.warn({ err: error }, 'jupyter channels upgrade failed');
        socket.destroy();
      });
    },
    close() {
      for (const client of sockets.clients) client.terminate();
      sockets.close();
    },
  };
}

function kernelSocket(webSocket: WebSocket, format: FrameFormat): KernelSocket {
  return {
    send(message) {
      if (webSocket.readyState !== webSocket.OPEN) return;
      if (webSocket.bufferedAmount > MAX_BUFFERED_BYTES) {
        webSocket.close(1008, 'client too slow: output not read');
        return;
      }
      if (format === 'v1') webSocket.send(encodeV1Frame(message));
      else for (const frame of jsonFrames(message)) webSocket.send(frame);
    },
    close(code, reason) {
      webSocket.close(code, reason);
    },
  };
}
