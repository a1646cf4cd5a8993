/** Health, Prometheus metrics, the OpenAPI document, and the MCP endpoint's entry in it. */
import { z } from 'zod';
import type { ServerContext } from '../core/context.js';
import { ErrorSchema } from '../http/common-schemas.js';
import { defineRoute, type RouteSpec } from '../http/route.js';

export const HealthSchema = z.object({
  status: z.enum(['ok', 'degraded', 'shutting-down']),
  sessions: z.object({ live: z.number(), warm: z.number(), starting: z.number(), running: z.number() }),
  lastError: z.string().optional(),
});

export const ReadySchema = z.object({
  status: z.enum(['ready', 'draining']),
  /** This server's node name (SANDCELL_NODE_NAME, else the host name): which pod answered. */
  node: z.string(),
  sessions: z.object({ live: z.number(), max: z.number() }),
});

export function systemRoutes(
  server: ServerContext,
  document: () => Record<string, unknown>,
): RouteSpec<never, never, never>[] {
  const routes = [
    defineRoute({
      method: 'get',
      path: '/healthz',
      operationId: 'health',
      summary: 'Whether the server can start sandboxes; 503 while shutting down.',
      tags: ['system'],
      authenticated: false,
      responses: {
        200: { description: 'Serving.', json: HealthSchema },
        503: { description: 'Shutting down.', json: HealthSchema },
      },
      handler: (c) => {
        const pool = server.pool.stats();
        const registry = server.registry.stats;
        const shuttingDown = server.registry.isShuttingDown;
        const body = {
          status: shuttingDown ? 'shutting-down' : pool.lastError ? 'degraded' : 'ok',
          sessions: { live: registry.live, warm: pool.warm, starting: pool.starting, running: registry.running },
          ...(pool.lastError ? { lastError: pool.lastError } : {}),
        };
        return c.json(body, shuttingDown ? 503 : 200);
      },
    }),
    defineRoute({
      method: 'get',
      path: '/readyz',
      operationId: 'ready',
      summary:
        'Whether this node takes requests for new sessions (a load balancer’s or Kubernetes’ readiness probe): 503 from the moment it starts draining.',
      tags: ['system'],
      authenticated: false,
      responses: {
        200: { description: 'Ready.', json: ReadySchema },
        503: {
          description: 'Draining: it finishes what runs, pauses its sessions to the store, and exits.',
          json: ReadySchema,
        },
      },
      handler: (c) => {
        const draining = server.registry.isDraining;
        const { live } = server.registry.stats;
        const body = {
          status: draining ? ('draining' as const) : ('ready' as const),
          node: server.registry.node,
          sessions: { live, max: server.registry.maxSessions },
        };
        return c.json(body, draining ? 503 : 200);
      },
    }),
    defineRoute({
      method: 'get',
      path: '/metrics',
      operationId: 'metrics',
      summary: 'Metrics in the Prometheus text format (needs a key when keys are configured).',
      tags: ['system'],
      responses: { 200: { description: 'Metrics.', contentTypes: ['text/plain; version=0.0.4'] } },
      handler: (c) =>
        c.text(server.metrics.render(), 200, { 'content-type': 'text/plain; version=0.0.4; charset=utf-8' }),
    }),
    defineRoute({
      method: 'get',
      path: '/openapi.json',
      operationId: 'openapi',
      summary: 'This document.',
      tags: ['system'],
      authenticated: false,
      responses: { 200: { description: 'OpenAPI 3.1.' } },
      handler: (c) => c.json(document()),
    }),
    defineRoute({
      method: 'post',
      path: '/mcp',
      register: false,
      operationId: 'mcp',
      summary: 'Model Context Protocol over Streamable HTTP (JSON-RPC; GET and DELETE with Mcp-Session-Id too).',
      description:
        'Tools: run_python, list_files, read_file, write_file, reset_session. Sessions live as long as the MCP session.',
      tags: ['mcp'],
      responses: {
        200: { description: 'A JSON-RPC response.' },
        404: { description: 'Unknown MCP session.', json: ErrorSchema },
      },
      handler: () => new Response(null, { status: 404 }),
    }),
  ];
  return routes as unknown as RouteSpec<never, never, never>[];
}
