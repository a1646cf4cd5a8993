/**
 * A session's ports under /v1: what listens inside its sandbox, each with its URL (served by the
 * port door, src/server/ports/), a wait until a port listens (a server the code or a command
 * started is up), and preview links: a URL that reaches one port without the key until it expires,
 * for a browser or a frame (its token becomes a cookie of that host alone).
 */
import type { HttpBindings } from '@hono/node-server';
import type { Context } from 'hono';
import { z } from 'zod';
import { PortError } from '../../errors.js';
import type { ServerContext } from '../core/context.js';
import { SessionNotFoundError } from '../core/errors.js';
import { ErrorSchema } from '../http/common-schemas.js';
import { HttpError } from '../http/errors.js';
import { defineRoute, type RouteSpec } from '../http/route.js';
import { PREVIEW_PARAMETER } from '../ports/port-access.js';
import { portUrl, sandboxDomain } from '../ports/port-address.js';
import { SessionIdParams } from './schemas.js';

const TAGS = ['ports'];
const DEFAULT_PREVIEW_SECONDS = 3600;
const MAX_PREVIEW_SECONDS = 7 * 86_400;
const MAX_WAIT_MS = 120_000;

const PortParams = SessionIdParams.extend({ port: z.coerce.number().int().min(1).max(65_535) });
const PortSchema = z
  .object({
    port: z.number().int(),
    address: z.string().meta({ description: 'What it listens on inside: 127.0.0.1, ::1, 0.0.0.0 or ::.' }),
    url: z
      .string()
      .nullable()
      .meta({
        description:
          'Where it is served: http://PORT-ID.DOMAIN/ (--sandbox-domain; localhost:PORT of the server by default). ' +
          'Null for a session whose id cannot be part of a host name (upper case or `_`). With the key, or a preview link.',
      }),
  })
  .meta({ title: 'Port' });
const PortListSchema = z.object({ ports: z.array(PortSchema) }).meta({ title: 'PortList' });
const WaitQuery = z.object({
  waitMs: z.coerce
    .number()
    .int()
    .min(0)
    .max(MAX_WAIT_MS)
    .optional()
    .meta({
      description: `Wait until something listens on the port, up to this long (at most ${MAX_WAIT_MS}); 0 or absent: answer now.`,
    }),
});
const PreviewBody = z.object({
  expiresInSeconds: z
    .number()
    .int()
    .min(1)
    .max(MAX_PREVIEW_SECONDS)
    .optional()
    .meta({
      description: `How long the link works (default ${DEFAULT_PREVIEW_SECONDS}, at most ${MAX_PREVIEW_SECONDS}).`,
    }),
});
const PreviewSchema = z
  .object({ url: z.string(), expiresAt: z.string().meta({ description: 'ISO 8601.' }) })
  .meta({ title: 'PreviewLink' });

const notFound = { description: 'No such session (or not yours).', json: ErrorSchema };

export function portRoutes(server: ServerContext): RouteSpec<never, never, never>[] {
  const { registry, options } = server;
  const urlOf = (c: Context, port: number, id: string) =>
    portUrl(
      options.sandboxScheme,
      sandboxDomain(options.sandboxDomain, (c.env as Partial<HttpBindings> | undefined)?.incoming?.socket.localPort),
      port,
      id,
    );
  const routes = [
    defineRoute({
      method: 'get',
      path: '/v1/sessions/{id}/ports',
      operationId: 'listPorts',
      summary: 'The TCP ports something listens on inside the session’s sandbox, each with its URL.',
      description:
        'A paused session is not resumed by this: it serves nothing (a pause keeps no process), so its list is empty.',
      tags: TAGS,
      params: SessionIdParams,
      responses: { 200: { description: 'Listening ports, by number.', json: PortListSchema }, 404: notFound },
      handler: async (c, { owner, params }) => {
        const entry = registry.find(owner, params.id);
        if (!entry) {
          if (!(await registry.pauses.find(owner, params.id))) throw new SessionNotFoundError(params.id);
          return c.json({ ports: [] });
        }
        const ports = await entry.session.ports.list();
        return c.json({ ports: ports.map((listening) => ({ ...listening, url: urlOf(c, listening.port, entry.id) })) });
      },
    }),
    defineRoute({
      method: 'get',
      path: '/v1/sessions/{id}/ports/{port}',
      operationId: 'getPort',
      summary: 'One port, once something listens on it (`waitMs` waits for a server that is starting).',
      tags: TAGS,
      params: PortParams,
      query: WaitQuery,
      responses: {
        200: { description: 'It listens.', json: PortSchema },
        404: { description: 'No such session, or nothing listens there (within `waitMs`).', json: ErrorSchema },
      },
      handler: async (c, { owner, params, query }) => {
        const entry = await registry.open(owner, params.id);
        try {
          const listening = await entry.session.ports.waitFor(params.port, {
            timeoutMs: query.waitMs ?? 0,
            signal: c.req.raw.signal,
          });
          return c.json({ ...listening, url: urlOf(c, params.port, entry.id) });
        } catch (error) {
          if (error instanceof PortError && error.code === 'port-closed') {
            throw new HttpError(404, 'port-not-listening', error.message);
          }
          throw error;
        }
      },
    }),
    defineRoute({
      method: 'post',
      path: '/v1/sessions/{id}/ports/{port}/preview',
      operationId: 'createPreviewLink',
      summary: 'A link that reaches one port of the session without the key, until it expires.',
      description:
        'For a browser or a frame: opening it trades its token for a cookie of that host alone (it works for that ' +
        'session and port only), then loads the app’s own URL. Anyone with the link reaches the app until then.',
      tags: TAGS,
      params: PortParams,
      body: { json: PreviewBody, required: false },
      responses: {
        201: { description: 'The link.', json: PreviewSchema },
        400: { description: 'A session whose id cannot be part of a host name, or bad input.', json: ErrorSchema },
        404: notFound,
      },
      handler: async (c, { owner, params, body }) => {
        const request = (body ?? {}) as z.output<typeof PreviewBody>;
        const entry = await registry.open(owner, params.id);
        const url = urlOf(c, params.port, entry.id);
        if (url === null) {
          throw new HttpError(
            400,
            'no-port-url',
            `Session ${entry.id} has an id that cannot be part of a host name (use lower-case letters, digits and "-"): its ports have no URL.`,
          );
        }
        const expiresAt = new Date(Date.now() + (request.expiresInSeconds ?? DEFAULT_PREVIEW_SECONDS) * 1000);
        const token = await registry.files.previewToken(entry, params.port, expiresAt);
        return c.json({ url: `${url}?${PREVIEW_PARAMETER}=${token}`, expiresAt: expiresAt.toISOString() }, 201);
      },
    }),
  ];
  return routes as unknown as RouteSpec<never, never, never>[];
}
