/**
 * The one HTTP server behind the fake: REST under /api/v10 (bot-token auth, Discord's rate-limit
 * headers, JSON errors, unknown routes logged loudly and answered 404 like Discord), the CDN route
 * /attachments/... serving attachment bytes, and the websocket upgrade at /gateway. Once the fake
 * is silent, requests and upgrades are taken and never answered (close() ends their connections).
 */
import http from 'node:http';
import { DiscordApiError, rateLimitHeaders, unauthorized } from './discord-errors.js';
import type { DiscordState } from './discord-state.js';
import { readRequestBody } from './request-body.js';
import { matchTemplate, type Route, type RouteAnswer } from './route.js';

const API_PREFIX = '/api/v10';

export function createDiscordServer(state: DiscordState, routes: Route[]): http.Server {
  const server = http.createServer((request, response) => {
    if (state.silent) return;
    void answer(state, routes, request)
      .then(({ status, headers, body }) => {
        response.writeHead(status, headers);
        response.end(body);
      })
      .catch((error: unknown) => {
        state.settings.log(`internal error: ${error instanceof Error ? error.stack : String(error)}`);
        response.writeHead(500, { 'content-type': 'application/json' });
        response.end(JSON.stringify({ message: '500: Internal Server Error', code: 0 }));
      });
  });
  server.on('upgrade', (request, socket, head) => {
    if (new URL(request.url ?? '/', 'http://fake-discord.invalid').pathname === '/gateway') {
      state.gateway.handleUpgrade(request, socket, head);
    } else {
      socket.destroy();
    }
  });
  return server;
}

interface RawAnswer {
  status: number;
  headers: Record<string, string>;
  body?: Buffer | string;
}

async function answer(state: DiscordState, routes: Route[], request: http.IncomingMessage): Promise<RawAnswer> {
  const url = new URL(request.url ?? '/', 'http://fake-discord.invalid');
  const method = request.method ?? 'GET';
  if (method === 'GET' && url.pathname.startsWith('/attachments/')) return attachment(state, url.pathname);
  const path = url.pathname.startsWith(API_PREFIX) ? url.pathname.slice(API_PREFIX.length) : undefined;
  if (path !== undefined) state.requests.push(`${method} ${path}`);
  for (const route of routes) {
    const params = path === undefined || route.method !== method ? undefined : matchTemplate(route.template, path);
    if (!params) continue;
    const headers = { ...rateLimitHeaders(method, route.template), 'content-type': 'application/json' };
    try {
      if (route.auth && request.headers.authorization !== `Bot ${state.settings.token}`) throw unauthorized();
      const result: RouteAnswer = await route.handle({
        state,
        params,
        query: url.searchParams,
        body: () => readRequestBody(request, state.settings.requestLimitBytes),
      });
      // Discord's 204s have no content type; @discordjs/rest would try to parse an empty JSON body.
      if (result.status === 204) return { status: 204, headers: rateLimitHeaders(method, route.template) };
      return { status: result.status, headers, body: JSON.stringify(result.body) };
    } catch (error) {
      if (!(error instanceof DiscordApiError)) throw error;
      return { status: error.status, headers, body: JSON.stringify(error.body()) };
    }
  }
  const line = `${method} ${url.pathname}${url.search}`;
  state.unknownRequests.push(line);
  state.settings.log(`UNKNOWN ROUTE ${line} — answered 404; add it to the fake if the bot needs it`);
  return {
    status: 404,
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ message: '404: Not Found', code: 0 }),
  };
}

function attachment(state: DiscordState, pathname: string): RawAnswer {
  const [, , channelId, attachmentId] = pathname.split('/');
  const stored = state.store.attachments.get(attachmentId ?? '');
  if (!stored || stored.channelId !== channelId) {
    return { status: 404, headers: { 'content-type': 'text/plain' }, body: 'Not Found' };
  }
  return {
    status: 200,
    headers: { 'content-type': stored.contentType, 'content-length': String(stored.bytes.length) },
    body: stored.bytes,
  };
}
