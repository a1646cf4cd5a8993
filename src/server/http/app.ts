/** The Hono application: routes from one table, auth, limits, metrics, and JSON errors for everything. */
import type { HttpBindings } from '@hono/node-server';
import { type Context, Hono } from 'hono';
import { HTTPException } from 'hono/http-exception';
import { routePath } from 'hono/route';
import { azureRoutes } from '../azure/routes.js';
import { conversationRoutes } from '../conversations/routes.js';
import type { ServerContext } from '../core/context.js';
import { mountE2bRoutes } from '../e2b/routes.js';
import type { SandboxTable } from '../e2b/sandbox-table.js';
import { KernelStore } from '../jupyter/kernel-store.js';
import { jupyterRoutes } from '../jupyter/routes.js';
import { McpHttpEndpoint } from '../mcp/http.js';
import { sandboxDomain } from '../ports/port-address.js';
import { systemRoutes } from '../system/routes.js';
import { commandRoutes } from '../v1/command-routes.js';
import { contextRoutes } from '../v1/context-routes.js';
import { environmentRoutes } from '../v1/environment-routes.js';
import { portRoutes } from '../v1/port-routes.js';
import { v1Routes } from '../v1/routes.js';
import { snapshotRoutes } from '../v1/snapshot-routes.js';
import { terminalRoutes } from '../v1/terminal-routes.js';
import { volumeRoutes } from '../v1/volume-routes.js';
import { serveWebUi } from '../web-ui/routes.js';
import { browserGuard } from './browser-guard.js';
import type { ConnectionLimiter } from './connection-limiter.js';
import { errorBody, HttpError, toHttpError } from './errors.js';
import { buildOpenApiDocument } from './openapi.js';
import { relayed } from './relay.js';
import { currentRequestId, internalError } from './request-listener.js';
import { registerRoutes } from './route.js';

export interface SandcellApp {
  app: Hono;
  mcp: McpHttpEndpoint;
  /** The Jupyter kernels, whose channels websocket the Node server serves (jupyter/channels-socket.ts). */
  jupyter: KernelStore;
  /** The OpenAPI 3.1 document served at /openapi.json. */
  document: Record<string, unknown>;
  /** The E2B door's sandboxes, whose ports the port door serves (ports/port-door.ts). */
  e2bSandboxes: SandboxTable;
}

export interface AppOptions {
  /** The HTTP server's connection accounting: connections that prove a key are kept when it sheds load. */
  connections?: ConnectionLimiter;
}

export function createApp(server: ServerContext, options: AppOptions = {}): SandcellApp {
  const app = new Hono();
  const { metrics, logger } = server;
  const mcp = new McpHttpEndpoint(server);
  const jupyter = new KernelStore(server);

  app.use(async (c, next) => {
    const started = performance.now();
    await next();
    const seconds = (performance.now() - started) / 1000;
    const route = routePath(c) || 'unmatched';
    metrics.httpRequests.inc({ method: c.req.method, status: String(c.res.status) });
    metrics.httpDuration.observe(seconds, { route });
    if (logger.isLevelEnabled('debug') || c.res.status >= 500) {
      logger[c.res.status >= 500 ? 'warn' : 'debug'](
        { method: c.req.method, path: c.req.path, status: c.res.status, ms: Math.round(seconds * 1e4) / 10 },
        'request',
      );
    }
  });

  app.use(
    browserGuard({
      apiKeys: server.apiKeys,
      allowedHosts: server.options.allowedHosts,
      onKeyAccepted: (c) => {
        const socket = (c.env as Partial<HttpBindings> | undefined)?.incoming?.socket;
        if (socket) options.connections?.trust(socket);
      },
      onRefused: (reason) => metrics.rejected.inc({ reason }),
    }),
  );

  app.onError(async (error, c) => {
    // A request for volumes another node of the cluster keeps is answered there (relay.ts).
    const there = await relayed(c, error, server.cluster?.node);
    if (there) return there;
    const mapped =
      error instanceof HTTPException && !(error instanceof HttpError)
        ? new HttpError(error.status, error.status === 413 ? 'body-too-large' : 'http-error', error.message)
        : toHttpError(error);
    if (mapped.status >= 500 && mapped.code === 'internal-error') {
      const requestId = currentRequestId();
      logger.error({ err: error, path: c.req.path, requestId }, 'unexpected error');
      return c.json(errorBody(internalError(requestId)), 500);
    }
    return c.json(errorBody(mapped), mapped.status as 400, mapped.headers);
  });

  app.notFound((c) =>
    c.json(
      errorBody(new HttpError(404, 'route-not-found', `No route ${c.req.method} ${c.req.path}; see /openapi.json.`)),
      404,
    ),
  );

  const routeContext = {
    authenticate: (c: Context) => server.apiKeys.authenticate(c.req.header('authorization'), c.req.header('api-key')),
    limits: server.options.limits,
    onTooLarge: (kind: 'request' | 'upload') => metrics.rejected.inc({ reason: `${kind}-too-large` }),
  };

  let document: Record<string, unknown> = {};
  const routes = [
    ...systemRoutes(server, () => document),
    ...v1Routes(server),
    ...commandRoutes(server),
    ...portRoutes(server),
    ...terminalRoutes(server),
    ...volumeRoutes(server),
    ...contextRoutes(server),
    ...snapshotRoutes(server),
    ...environmentRoutes(server),
    ...conversationRoutes(server),
    ...azureRoutes(server),
  ];
  document = buildOpenApiDocument(routes, {
    title: 'sandcell',
    version: server.version,
    description:
      'A self-hosted code interpreter: stateful, sandboxed sessions (Python, JavaScript, TypeScript, bash, R, and ' +
      'shell commands). Native API under /v1 (sessions, contexts, commands, and conversations with the server’s model), Azure dynamic-sessions compatible API under /azure, ' +
      'MCP at /mcp, and the web UI at /.',
  });
  registerRoutes(app, routes, routeContext);

  const e2bSandboxes = mountE2bRoutes(app, server);
  app.on(['GET', 'POST', 'DELETE'], '/mcp', (c) => mcp.handle(c, routeContext.authenticate(c)));
  app.route('/jupyter', jupyterRoutes(server, jupyter));
  if (server.options.webRoot !== false) {
    const { sandboxDomain: domain, sandboxScheme: scheme } = server.options;
    // The apps sessions serve, which the page previews in a frame: every PORT-ID under the domain.
    serveWebUi(app, server.options.webRoot, (c) => {
      const localPort = (c.env as Partial<HttpBindings> | undefined)?.incoming?.socket.localPort;
      return `${scheme}://*.${sandboxDomain(domain, localPort)}`;
    });
  }

  return { app, mcp, jupyter, document, e2bSandboxes };
}
