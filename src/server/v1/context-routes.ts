/**
 * A session's contexts under /v1: one stateful kernel per context, each of one
 * language. Executions pick one with `context` or `language`; these routes
 * create, list, restart and remove them.
 */
import type { z } from 'zod';
import type { ServerContext } from '../core/context.js';
import { ErrorSchema } from '../http/common-schemas.js';
import { defineRoute, type RouteSpec } from '../http/route.js';
import { ContextIdParams, ContextListSchema, ContextSchema, CreateContextBody } from './command-schemas.js';
import { SessionIdParams } from './schemas.js';

const TAGS = ['contexts'];
const notFoundResponse = { description: 'No such session (or not yours), or no such context.', json: ErrorSchema };
const badRequestResponse = { description: 'Invalid input.', json: ErrorSchema };

export function contextRoutes(server: ServerContext): RouteSpec<never, never, never>[] {
  const { registry } = server;
  const routes = [
    defineRoute({
      method: 'post',
      path: '/v1/sessions/{id}/contexts',
      operationId: 'createContext',
      summary: 'Start a new context: a fresh kernel of a language, with its own variables and working directory.',
      tags: TAGS,
      params: SessionIdParams,
      body: { json: CreateContextBody, required: true },
      responses: {
        201: { description: 'The new context; run in it with `context` on an execution.', json: ContextSchema },
        400: badRequestResponse,
        404: notFoundResponse,
        422: { description: 'The sandbox has no runtime for the language.', json: ErrorSchema },
        429: { description: 'The session holds as many contexts as it may.', json: ErrorSchema },
      },
      handler: async (c, { owner, params, body }) => {
        const request = body as z.output<typeof CreateContextBody>;
        const entry = await registry.open(owner, params.id);
        const context = await entry.session.createContext({
          language: request.language,
          ...(request.cwd === undefined ? {} : { cwd: request.cwd }),
          ...(request.env === undefined ? {} : { env: request.env }),
          signal: c.req.raw.signal,
        });
        return c.json(context, 201);
      },
    }),
    defineRoute({
      method: 'get',
      path: '/v1/sessions/{id}/contexts',
      operationId: 'listContexts',
      summary: 'The session’s contexts (python first; a language’s default context once it has been used).',
      tags: TAGS,
      params: SessionIdParams,
      responses: { 200: { description: 'Contexts.', json: ContextListSchema }, 404: notFoundResponse },
      handler: async (c, { owner, params }) =>
        c.json({ contexts: (await registry.open(owner, params.id)).session.listContexts() }),
    }),
    defineRoute({
      method: 'post',
      path: '/v1/sessions/{id}/contexts/{contextId}/restart',
      operationId: 'restartContext',
      summary: 'Replace a context’s kernel with a fresh one: its variables are lost, files stay.',
      tags: TAGS,
      params: ContextIdParams,
      responses: { 200: { description: 'The restarted context.', json: ContextSchema }, 404: notFoundResponse },
      handler: async (c, { owner, params }) => {
        const entry = await registry.open(owner, params.id);
        return c.json(await entry.session.restartContext(params.contextId));
      },
    }),
    defineRoute({
      method: 'delete',
      path: '/v1/sessions/{id}/contexts/{contextId}',
      operationId: 'removeContext',
      summary: 'End a context and its kernel; executions waiting in it fail.',
      tags: TAGS,
      params: ContextIdParams,
      responses: { 204: { description: 'Removed.' }, 404: notFoundResponse },
      handler: async (c, { owner, params }) => {
        await (await registry.open(owner, params.id)).session.removeContext(params.contextId);
        return c.body(null, 204);
      },
    }),
  ];
  return routes as unknown as RouteSpec<never, never, never>[];
}
