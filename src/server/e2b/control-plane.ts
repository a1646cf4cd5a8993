/**
 * E2B's control plane under /e2b (requests without `E2b-Sandbox-Port`):
 * create (`POST /v2/sandboxes`, and `POST /sandboxes` of older SDKs and the
 * Python SDK: 201 both), connect, kill, timeout, info, list and metrics. The
 * API key arrives as `X-API-KEY`; each key sees only its own sandboxes.
 */
import type { Context } from 'hono';
import type { z } from 'zod';
import type { Owner } from '../core/auth.js';
import type { ServerContext } from '../core/context.js';
import { ConnectBody, CreateBody, DEFAULT_TEMPLATE, DEFAULT_TIMEOUT_SECONDS, TimeoutBody } from './control-schemas.js';
import { E2bError } from './errors.js';
import { listPage, parseListQuery } from './list-query.js';
import { networkOfCreation } from './network-fields.js';
import { presentConnection, presentInfo } from './present.js';
import type { SandboxTable } from './sandbox-table.js';

type Handler = (context: Context, owner: Owner, id: string | undefined) => Promise<Response>;

interface ControlRoute {
  method: string;
  pattern: RegExp;
  handler: Handler;
}

async function readJson<Schema extends z.ZodType>(context: Context, schema: Schema): Promise<z.output<Schema>> {
  const text = await context.req.text();
  let value: unknown = {};
  if (text.trim() !== '') {
    try {
      value = JSON.parse(text);
    } catch {
      throw new E2bError(400, 'The request body is not valid JSON.');
    }
  }
  const parsed = schema.safeParse(value);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new E2bError(
      400,
      `Invalid request body: ${issue ? `${issue.path.join('.') || 'body'}: ${issue.message}` : ''}`,
    );
  }
  return parsed.data;
}

const seconds = (value: number): number => value * 1000;

export function controlPlane(server: ServerContext, table: SandboxTable) {
  const create: Handler = async (context, owner) => {
    const body = await readJson(context, CreateBody);
    const sandbox = await table.create({
      owner,
      templateId: body.templateID ?? DEFAULT_TEMPLATE,
      timeoutMs: seconds(body.timeout ?? DEFAULT_TIMEOUT_SECONDS),
      envVars: body.envVars ?? {},
      metadata: body.metadata ?? {},
      network: networkOfCreation(body),
    });
    return context.json(presentConnection(sandbox), 201);
  };

  const connect: Handler = async (context, owner, id) => {
    const body = await readJson(context, ConnectBody);
    const sandbox = table.get(owner, id ?? '');
    // Connecting with a timeout moves the deadline, never earlier than it is (E2B's rule for running sandboxes).
    if (body.timeout !== undefined && Date.now() + seconds(body.timeout) > sandbox.endAt.getTime()) {
      table.setTimeout(sandbox, seconds(body.timeout));
    }
    return context.json(presentConnection(sandbox), 200);
  };

  const kill: Handler = async (context, owner, id) => {
    await table.kill(table.get(owner, id ?? ''));
    return context.body(null, 204);
  };

  const setTimeout: Handler = async (context, owner, id) => {
    const body = await readJson(context, TimeoutBody);
    table.setTimeout(table.get(owner, id ?? ''), seconds(body.timeout));
    return context.body(null, 204);
  };

  const info: Handler = async (context, owner, id) =>
    context.json(presentInfo(table.get(owner, id ?? ''), server.options), 200);

  const list: Handler = async (context, owner) => {
    const { page, nextToken } = listPage(table.list(owner), parseListQuery(context.req.query()));
    const headers: Record<string, string> = nextToken ? { 'x-next-token': nextToken } : {};
    return context.json(
      page.map((sandbox) => presentInfo(sandbox, server.options)),
      200,
      headers,
    );
  };

  // Usage history is not kept: an empty series, which the SDK returns as no metrics.
  const metrics: Handler = async (context, owner, id) => {
    table.get(owner, id ?? '');
    return context.json([], 200);
  };

  // The keep-alive of older SDKs: it extends by the duration given, as setTimeout does.
  const refresh: Handler = async (context, owner, id) => {
    const sandbox = table.get(owner, id ?? '');
    const body = await readJson(context, ConnectBody);
    table.setTimeout(sandbox, seconds(body.timeout ?? DEFAULT_TIMEOUT_SECONDS));
    return context.body(null, 204);
  };

  const unsupported =
    (what: string): Handler =>
    async (_context, owner, id) => {
      if (id !== undefined) table.get(owner, id);
      throw new E2bError(501, `${what} is not supported by this server (sandcell).`);
    };

  const ID = '([a-z0-9]{1,64})';
  const routes: ControlRoute[] = [
    { method: 'POST', pattern: /^\/(?:v2\/)?sandboxes$/, handler: create },
    { method: 'GET', pattern: /^\/(?:v2\/)?sandboxes$/, handler: list },
    { method: 'POST', pattern: new RegExp(`^/(?:v2/)?sandboxes/${ID}/connect$`), handler: connect },
    { method: 'POST', pattern: new RegExp(`^/sandboxes/${ID}/resume$`), handler: connect },
    { method: 'DELETE', pattern: new RegExp(`^/sandboxes/${ID}$`), handler: kill },
    { method: 'GET', pattern: new RegExp(`^/sandboxes/${ID}$`), handler: info },
    { method: 'POST', pattern: new RegExp(`^/sandboxes/${ID}/timeout$`), handler: setTimeout },
    { method: 'POST', pattern: new RegExp(`^/sandboxes/${ID}/refreshes$`), handler: refresh },
    { method: 'GET', pattern: new RegExp(`^/sandboxes/${ID}/metrics$`), handler: metrics },
    { method: 'POST', pattern: new RegExp(`^/sandboxes/${ID}/pause$`), handler: unsupported('Pausing a sandbox') },
    { method: 'POST', pattern: new RegExp(`^/sandboxes/${ID}/snapshots$`), handler: unsupported('Snapshots') },
    { method: 'POST', pattern: new RegExp(`^/sandboxes/${ID}/fork$`), handler: unsupported('Forking a sandbox') },
  ];

  /** Answers a control-plane request at `path` (below /e2b) for an authenticated owner. */
  return async (context: Context, owner: Owner, path: string): Promise<Response> => {
    for (const route of routes) {
      const match = route.pattern.exec(path);
      if (match && route.method === context.req.method) return route.handler(context, owner, match[1]);
    }
    throw new E2bError(404, `No E2B route ${context.req.method} ${path} on this server (sandcell).`);
  };
}
