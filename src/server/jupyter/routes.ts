/**
 * The Jupyter Server REST API under /jupyter: kernelspecs, kernels and
 * sessions, as JupyterLab, Jupyter Server's gateway client, Open WebUI and
 * AG2 call it. Bodies are bounded by the server's request limit; errors take
 * Jupyter's shape (jupyter-errors.ts).
 */
import { type Context, Hono } from 'hono';
import { listEnvironments } from '../../environments/store.js';
import type { ServerContext } from '../core/context.js';
import { limitBody } from '../http/body-limit.js';
import { authenticateJupyter } from './jupyter-auth.js';
import { JupyterHttpError, jupyterErrorResponse } from './jupyter-errors.js';
import type { JupyterKernel } from './jupyter-kernel.js';
import { presentTerminal } from './jupyter-terminals.js';
import { DEFAULT_KERNEL_NAME, environmentKernelSpec, KERNEL_SPECS, presentKernelSpec } from './kernel-specs.js';
import type { KernelStore } from './kernel-store.js';
import { passwordLoginRoutes } from './login-routes.js';
import { presentKernel, presentSession } from './present.js';

/** What Jupyter Server version this API matches, as `/api` says it (clients pick features by it). */
const JUPYTER_SERVER_VERSION = '2.14.0';

/** The JSON body as an object; an empty body (Open WebUI's POST api/kernels) is `{}`. */
async function readBody(context: Context): Promise<Record<string, unknown>> {
  const text = await context.req.text();
  if (text.trim() === '') return {};
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new JupyterHttpError(400, 'The body is not valid JSON.');
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
    throw new JupyterHttpError(400, 'The body must be a JSON object.');
  }
  return parsed as Record<string, unknown>;
}

const text = (value: unknown): string | undefined => (typeof value === 'string' ? value : undefined);

export function jupyterRoutes(server: ServerContext, kernels: KernelStore): Hono {
  const app = new Hono();
  const { sessions } = kernels;
  const owner = (context: Context) =>
    authenticateJupyter(server.apiKeys, kernels.logins, {
      method: context.req.method,
      authorization: context.req.header('authorization'),
      queryToken: context.req.query('token'),
      cookie: context.req.header('cookie'),
      xsrfHeader: context.req.header('x-xsrftoken'),
    });

  app.onError((error, context) => jupyterErrorResponse(context, error));
  app.notFound((context) => context.json({ message: 'Not Found', reason: null }, 404));
  app.use(
    limitBody(server.options.limits.maxRequestBytes, () => {
      throw new JupyterHttpError(413, `The request body is over ${server.options.limits.maxRequestBytes} bytes.`);
    }),
  );

  app.get('/api', (context) => context.json({ version: JUPYTER_SERVER_VERSION }));
  passwordLoginRoutes(app, kernels.logins);
  // Everything else needs the token, checked before the route is looked at.
  app.use('/api/*', async (context, next) => {
    owner(context);
    await next();
  });

  app.get('/api/status', async (context) => {
    const mine = await kernels.list(owner(context));
    const last = mine.reduce(
      (latest, kernel) => Math.max(latest, kernel.lastActivity.getTime()),
      kernels.started.getTime(),
    );
    return context.json({
      connections: mine.reduce((sum, kernel) => sum + kernel.sockets.size, 0),
      kernels: mine.length,
      last_activity: new Date(last).toISOString(),
      started: kernels.started.toISOString(),
    });
  });

  // The languages' specs, then Python in each built environment.
  const allSpecs = async () => [
    ...KERNEL_SPECS,
    ...(await listEnvironments()).map((record) => environmentKernelSpec(record.name)),
  ];
  app.get('/api/kernelspecs', async (context) =>
    context.json({
      default: DEFAULT_KERNEL_NAME,
      kernelspecs: Object.fromEntries((await allSpecs()).map((spec) => [spec.name, presentKernelSpec(spec)])),
    }),
  );
  app.get('/api/kernelspecs/:name', async (context) => {
    const spec = (await allSpecs()).find((candidate) => candidate.name === context.req.param('name'));
    if (!spec) throw new JupyterHttpError(404, `Kernel spec not found: ${context.req.param('name')}`);
    return context.json(presentKernelSpec(spec));
  });

  // Dormant kernels (their sessions paused) are listed as idle; listing them resumes nothing.
  app.get('/api/terminals', (context) => context.json(kernels.terminals.list(owner(context)).map(presentTerminal)));
  app.post('/api/terminals', async (context) => {
    const body = await readBody(context);
    return context.json(presentTerminal(await kernels.terminals.create(owner(context), body.cwd)));
  });
  app.get('/api/terminals/:name', (context) =>
    context.json(presentTerminal(kernels.terminals.get(owner(context), context.req.param('name')))),
  );
  app.delete('/api/terminals/:name', async (context) => {
    await kernels.terminals.remove(owner(context), context.req.param('name'));
    return context.body(null, 204);
  });
  app.get('/api/kernels', async (context) => context.json((await kernels.list(owner(context))).map(presentKernel)));
  app.post('/api/kernels', async (context) => {
    // `env` and `path` (the gateway client posts its whole environment) are ignored: kernels are sandboxed.
    const body = await readBody(context);
    const kernel = await kernels.create(owner(context), text(body.name) || undefined);
    context.header('Location', `/jupyter/api/kernels/${kernel.id}`);
    return context.json(presentKernel(kernel), 201);
  });
  app.get('/api/kernels/:id', async (context) =>
    context.json(presentKernel(await kernels.get(owner(context), context.req.param('id')))),
  );
  app.delete('/api/kernels/:id', async (context) => {
    await kernels.remove(await kernels.get(owner(context), context.req.param('id')));
    return context.body(null, 204);
  });
  // A dormant kernel runs nothing: interrupting it resumes nothing either.
  app.post('/api/kernels/:id/interrupt', async (context) => {
    (await kernels.get(owner(context), context.req.param('id'))).interrupt();
    return context.body(null, 204);
  });
  app.post('/api/kernels/:id/restart', async (context) => {
    const kernel = await kernels.use(owner(context), context.req.param('id'));
    await kernel.restart();
    return context.json(presentKernel(kernel));
  });

  const kernelFor = async (context: Context, requested: unknown, current?: JupyterKernel) => {
    const wanted = (requested ?? {}) as Record<string, unknown>;
    const id = text(wanted.id);
    if (id !== undefined) return await kernels.get(owner(context), id);
    const name = text(wanted.name);
    if (current && (name === undefined || name === current.spec.name)) return current;
    return kernels.create(owner(context), name || undefined);
  };

  app.get('/api/sessions', async (context) => context.json((await sessions.list(owner(context))).map(presentSession)));
  app.post('/api/sessions', async (context) => {
    const body = await readBody(context);
    const notebook = (body.notebook ?? {}) as Record<string, unknown>;
    const path = text(body.path) ?? text(notebook.path) ?? '';
    const kernel = await kernelFor(context, body.kernel);
    const session = sessions.add(owner(context), {
      path,
      name: text(body.name) ?? text(notebook.name) ?? '',
      type: text(body.type) ?? 'notebook',
      kernel,
    });
    context.header('Location', `/jupyter/api/sessions/${session.id}`);
    return context.json(presentSession(session), 201);
  });
  app.get('/api/sessions/:id', async (context) =>
    context.json(presentSession(await sessions.get(owner(context), context.req.param('id')))),
  );
  app.patch('/api/sessions/:id', async (context) => {
    const session = await sessions.get(owner(context), context.req.param('id'));
    const body = await readBody(context);
    session.path = text(body.path) ?? session.path;
    session.name = text(body.name) ?? session.name;
    session.type = text(body.type) ?? session.type;
    const previous = session.kernel;
    if (body.kernel !== undefined) session.kernel = await kernelFor(context, body.kernel, previous);
    sessions.changed(session, previous);
    if (previous !== session.kernel) await sessions.releaseKernel(previous);
    return context.json(presentSession(session));
  });
  app.delete('/api/sessions/:id', async (context) => {
    await sessions.remove(await sessions.get(owner(context), context.req.param('id')));
    return context.body(null, 204);
  });

  return app;
}
