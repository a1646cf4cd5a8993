/**
 * createServer(): the HTTP server on Node (Hono's adapter) with its pool
 * warmed before it accepts connections, and a graceful close: stop accepting,
 * let running executions finish (bounded), close every sandbox.
 */
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createAdaptorServer } from '@hono/node-server';
import type { Hono } from 'hono';
import { createApp } from './app.js';
import type { ServerContext } from './context.js';
import { isLoopback, resolveServerOptions, type ServerOptions } from './options.js';
import { createRuntime } from './runtime.js';

const CONNECTIONS_DRAIN_MS = 2_000;

export interface SandcellServer {
  /** Base URL, e.g. `http://127.0.0.1:8080`. */
  readonly url: string;
  readonly host: string;
  readonly port: number;
  readonly app: Hono;
  readonly context: ServerContext;
  readonly document: Record<string, unknown>;
  /** Graceful: stops accepting, waits for running executions (up to the shutdown grace), closes every sandbox. */
  close(): Promise<void>;
}

function urlHost(host: string): string {
  return host.includes(':') && !host.startsWith('[') ? `[${host}]` : host;
}

export async function createServer(options: ServerOptions = {}): Promise<SandcellServer> {
  const resolved = resolveServerOptions(options);
  const context = createRuntime(resolved);
  const { logger } = context;
  const { app, mcp, document } = createApp(context);
  try {
    await context.pool.start();
  } catch (error) {
    await context.pool.close();
    throw error;
  }
  const httpServer = createAdaptorServer({ fetch: app.fetch }) as Server;
  httpServer.keepAliveTimeout = 30_000;
  try {
    await new Promise<void>((resolve, reject) => {
      httpServer.once('error', reject);
      httpServer.listen(resolved.port, resolved.host, () => {
        httpServer.off('error', reject);
        resolve();
      });
    });
  } catch (error) {
    await context.pool.close();
    throw error;
  }
  const port = (httpServer.address() as AddressInfo).port;
  const url = `http://${urlHost(resolved.host)}:${port}`;
  logger.info(
    {
      url,
      apiKeys: context.apiKeys.enabled ? resolved.apiKeys.length : 0,
      poolSize: resolved.poolSize,
      maxSessions: resolved.maxSessions,
    },
    context.apiKeys.enabled
      ? `sandcell listening on ${url}`
      : `sandcell listening on ${url} without API keys: only this machine can connect (set SANDCELL_API_KEYS to serve others)`,
  );
  if (!context.apiKeys.enabled && !isLoopback(resolved.host)) throw new Error('unreachable: checked by options');

  let closing: Promise<void> | undefined;
  const close = (): Promise<void> => {
    closing ??= (async () => {
      logger.info('shutting down: no new connections');
      const connectionsClosed = new Promise<void>((resolve) => httpServer.close(() => resolve()));
      httpServer.closeIdleConnections();
      await context.registry.shutdown(resolved.shutdownGraceMs);
      context.conversations.shutdown();
      await mcp.close();
      // Answers of the executions that finished are on their way: give them a moment, then cut.
      const idle = setInterval(() => httpServer.closeIdleConnections(), 50);
      await Promise.race([connectionsClosed, new Promise((resolve) => setTimeout(resolve, CONNECTIONS_DRAIN_MS))]);
      clearInterval(idle);
      httpServer.closeAllConnections();
      logger.info('stopped');
      logger.flush();
    })();
    return closing;
  };

  return { url, host: resolved.host, port, app, context, document, close };
}
