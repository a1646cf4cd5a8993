/**
 * What every HTTP request passes first, run on a WebSocket upgrade's headers
 * (Hono does not see upgrades): the browser guard's Host and Origin checks.
 * Resolves with null when the upgrade may go on, else with the refusal's
 * status and body; `refuseUpgrade` writes a refusal on the raw socket.
 */
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { Hono } from 'hono';
import type { ServerContext } from '../core/context.js';
import { browserGuard } from './browser-guard.js';

export type UpgradeGuard = (
  request: IncomingMessage,
) => Promise<{ status: number; body: Record<string, unknown> } | null>;

export function upgradeGuard(server: ServerContext): UpgradeGuard {
  const guard = new Hono()
    .use(
      browserGuard({
        apiKeys: server.apiKeys,
        allowedHosts: server.options.allowedHosts,
        onRefused: (reason) => server.metrics.rejected.inc({ reason }),
      }),
    )
    .all('*', (context) => context.body(null, 204));
  guard.onError((error, context) =>
    context.json({ message: error.message, reason: null }, ((error as { status?: number }).status ?? 403) as 403),
  );
  return async (request) => {
    const headers = new Headers();
    for (const [name, value] of Object.entries(request.headers)) {
      if (typeof value === 'string') headers.set(name, value);
    }
    const verdict = await guard.fetch(new Request(`http://upgrade.invalid${request.url}`, { headers }));
    if (verdict.status === 204) return null;
    return { status: verdict.status, body: (await verdict.json()) as Record<string, unknown> };
  };
}

const REASONS: Record<number, string> = {
  400: 'Bad Request',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not Found',
  409: 'Conflict',
  429: 'Too Many Requests',
};

/** Answers an upgrade with a JSON refusal and closes the connection. */
export function refuseUpgrade(socket: Duplex, status: number, body: Record<string, unknown>): void {
  const text = JSON.stringify(body);
  socket.end(
    `HTTP/1.1 ${status} ${REASONS[status] ?? 'Refused'}\r\n` +
      `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(text)}\r\nConnection: close\r\n\r\n${text}`,
  );
}
