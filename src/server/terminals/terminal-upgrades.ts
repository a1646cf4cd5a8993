/**
 * The terminals' WebSockets, which Hono does not see: the Node server hands
 * this the upgrades it `matches`.
 *
 * - `/jupyter/terminals/websocket/{name}`: Jupyter's (terminado's frames), the
 *   token as for every Jupyter route.
 * - `/v1/sessions/{id}/terminals/{terminalId}`: sandcell's framing. The key
 *   comes in Authorization, or, from a browser (which cannot set that header on
 *   a WebSocket), as the subprotocol `sandcell.key.` + the key in base64url,
 *   offered beside `sandcell.terminal`, which is the one chosen.
 *
 * Each passes what every request passes first (the connection caps, the
 * browser guard's Host and Origin checks), then its key, and the terminal must
 * be the key's: another key's is not found, as a missing one.
 */
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocketServer } from 'ws';
import type { Owner } from '../core/auth.js';
import type { ServerContext } from '../core/context.js';
import type { ConnectionLimiter } from '../http/connection-limiter.js';
import { toHttpError } from '../http/errors.js';
import { refuseUpgrade, upgradeGuard } from '../http/upgrade-guard.js';
import { authenticateJupyter } from '../jupyter/jupyter-auth.js';
import { jupyterErrorAnswer } from '../jupyter/jupyter-errors.js';
import type { KernelStore } from '../jupyter/kernel-store.js';
import { findTerminal } from '../v1/terminal-routes.js';
import { attachTerminalSocket, type TerminalFraming } from './terminal-socket.js';

const JUPYTER_PATH = /^\/jupyter\/terminals\/websocket\/([^/]{1,128})\/?$/;
const V1_PATH = /^\/v1\/sessions\/([^/]{1,128})\/terminals\/(terminal-\d{1,9})\/?$/;
export const TERMINAL_SUBPROTOCOL = 'sandcell.terminal';
const KEY_SUBPROTOCOL = 'sandcell.key.';

export interface TerminalUpgrades {
  matches(request: IncomingMessage): boolean;
  upgrade(request: IncomingMessage, socket: Duplex, head: Buffer): void;
  close(): void;
}

function pathOf(request: IncomingMessage): string {
  try {
    return new URL(request.url ?? '/', 'http://upgrade.invalid').pathname;
  } catch {
    return '';
  }
}

/** The key a browser offered as a subprotocol, decoded; undefined when none was. */
function subprotocolKey(request: IncomingMessage): string | undefined {
  const offered = (request.headers['sec-websocket-protocol'] ?? '').split(',').map((value) => value.trim());
  const encoded = offered.find((value) => value.startsWith(KEY_SUBPROTOCOL))?.slice(KEY_SUBPROTOCOL.length);
  if (encoded === undefined || !/^[A-Za-z0-9_-]{1,1024}$/.test(encoded)) return undefined;
  return Buffer.from(encoded, 'base64url').toString('utf8');
}

export function terminalUpgrades(
  server: ServerContext,
  kernels: KernelStore,
  connections?: ConnectionLimiter,
): TerminalUpgrades {
  const { apiKeys, logger } = server;
  const guard = upgradeGuard(server);
  const sockets = new WebSocketServer({
    noServer: true,
    maxPayload: 256 * 1024,
    handleProtocols: (offered) => (offered.has(TERMINAL_SUBPROTOCOL) ? TERMINAL_SUBPROTOCOL : false),
  });
  const onDropped = (reason: string) => logger.debug({ reason }, 'terminal frame dropped');

  const upgrade = async (request: IncomingMessage, socket: Duplex, head: Buffer): Promise<void> => {
    const path = pathOf(request);
    const refusal = await guard(request);
    if (refusal) {
      refuseUpgrade(socket, refusal.status, refusal.body);
      return;
    }
    const jupyter = JUPYTER_PATH.exec(path);
    let framing: TerminalFraming;
    let found: { terminal: Parameters<typeof attachTerminalSocket>[1]; touched?: () => void };
    if (jupyter) {
      framing = 'jupyter';
      try {
        const url = new URL(request.url ?? '/', 'http://upgrade.invalid');
        const owner = authenticateJupyter(apiKeys, kernels.logins, {
          method: 'GET',
          authorization: request.headers.authorization,
          queryToken: url.searchParams.get('token') ?? undefined,
          cookie: request.headers.cookie,
        });
        const record = kernels.terminals.get(owner, decodeURIComponent(jupyter[1] ?? ''));
        found = {
          terminal: record.terminal,
          touched: () => {
            record.lastActivity = new Date();
          },
        };
      } catch (error) {
        const { status, message, reason } = jupyterErrorAnswer(error);
        refuseUpgrade(socket, status, { message, reason });
        return;
      }
    } else {
      framing = 'sandcell';
      const match = V1_PATH.exec(path);
      try {
        const key = subprotocolKey(request);
        const owner: Owner = apiKeys.authenticate(key === undefined ? request.headers.authorization : `Bearer ${key}`);
        found = findTerminal(server, owner, decodeURIComponent(match?.[1] ?? ''), match?.[2] ?? '');
      } catch (error) {
        const answer = toHttpError(error);
        refuseUpgrade(socket, answer.status, { error: { code: answer.code, message: answer.message } });
        return;
      }
    }
    if (apiKeys.enabled && 'remoteAddress' in socket) connections?.trust(socket as never);
    sockets.handleUpgrade(request, socket, head, (webSocket) => {
      if (found.touched) webSocket.on('message', found.touched);
      attachTerminalSocket(webSocket, found.terminal, framing, { onDropped });
    });
  };

  return {
    matches(request) {
      if (request.headers.upgrade?.toLowerCase() !== 'websocket') return false;
      const path = pathOf(request);
      return JUPYTER_PATH.test(path) || V1_PATH.test(path);
    },
    upgrade(request, socket, head) {
      upgrade(request, socket, head).catch((error) => {
        logger.warn({ err: error }, 'terminal upgrade failed');
        socket.destroy();
      });
    },
    close() {
      for (const client of sockets.clients) client.terminate();
      sockets.close();
    },
  };
}
