/**
 * A session's terminals under /v1: open one (an interactive login bash unless
 * `command` says otherwise), list, resize, type into and close them. Their
 * bytes go through a WebSocket, `GET /v1/sessions/{id}/terminals/{terminalId}`
 * with `Upgrade: websocket` (src/server/terminals/terminal-upgrades.ts: the
 * key in Authorization, or, for a browser, in the subprotocol
 * `sandcell.key.BASE64URL` beside `sandcell.terminal`). A pause ends every
 * terminal of the session, saying so on its socket.
 */
import { z } from 'zod';
import { MAX_TERMINAL_SIZE, TERMINAL_INPUT_BYTES } from '../../session/terminal.js';
import type { TerminalHandle } from '../../session/terminals.js';
import type { ServerContext } from '../core/context.js';
import type { ManagedSession } from '../core/managed-session.js';
import { ErrorSchema } from '../http/common-schemas.js';
import { HttpError } from '../http/errors.js';
import { defineRoute, type RouteSpec } from '../http/route.js';
import { SessionIdParams } from './schemas.js';

const TAGS = ['terminals'];
const Size = z.number().int().min(1).max(MAX_TERMINAL_SIZE);
const TerminalParams = SessionIdParams.extend({ terminalId: z.string().regex(/^terminal-\d{1,9}$/) });
const OpenBody = z.object({
  cols: Size.optional().meta({ description: 'Columns (default 80).' }),
  rows: Size.optional().meta({ description: 'Rows (default 24).' }),
  cwd: z.string().max(4096).optional().meta({ description: 'Working directory (default /mnt/data).' }),
  env: z.record(z.string(), z.string()).optional().meta({ description: 'Variables on top of the session’s.' }),
  command: z
    .array(z.string().max(65_536))
    .min(1)
    .max(4096)
    .optional()
    .meta({ description: 'The program and its arguments (default: an interactive login bash).' }),
});
const ResizeBody = z.object({ cols: Size, rows: Size });
const InputBody = z.object({
  data: z.string().meta({ description: `Text typed in (UTF-8, at most ${TERMINAL_INPUT_BYTES} bytes).` }),
});
const TerminalSchema = z
  .object({
    id: z.string(),
    pid: z.number().int(),
    cols: z.number().int(),
    rows: z.number().int(),
    socket: z.string().meta({ description: 'The path of its WebSocket.' }),
  })
  .meta({ title: 'Terminal' });
const TerminalListSchema = z.object({ terminals: z.array(TerminalSchema) }).meta({ title: 'TerminalList' });
const notFound = { description: 'No such session or terminal (or not yours).', json: ErrorSchema };

const present = (entry: ManagedSession, terminal: TerminalHandle) => ({
  id: terminal.id,
  pid: terminal.pid,
  cols: terminal.cols,
  rows: terminal.rows,
  socket: `/v1/sessions/${entry.id}/terminals/${terminal.id}`,
});

/** The open terminal `terminalId` of the key's live session `id`. */
export function findTerminal(
  server: ServerContext,
  owner: Parameters<ServerContext['registry']['find']>[0],
  id: string,
  terminalId: string,
) {
  const entry = server.registry.find(owner, id);
  const terminal = entry?.session.terminals.get(terminalId);
  if (!entry || !terminal) {
    throw new HttpError(
      404,
      'terminal-not-found',
      `No open terminal ${terminalId} in session ${id}: it ended, or its session was paused or closed.`,
    );
  }
  return { entry, terminal };
}

export function terminalRoutes(server: ServerContext): RouteSpec<never, never, never>[] {
  const { registry } = server;
  const routes = [
    defineRoute({
      method: 'post',
      path: '/v1/sessions/{id}/terminals',
      operationId: 'openTerminal',
      summary:
        'Opens a terminal in the session’s sandbox: a program on a pseudo-terminal, an interactive bash by default.',
      tags: TAGS,
      params: SessionIdParams,
      body: { json: OpenBody, required: false },
      responses: {
        201: { description: 'It runs; connect to its socket.', json: TerminalSchema },
        404: notFound,
        429: { description: 'The session’s or the key’s terminals are all in use.', json: ErrorSchema },
      },
      handler: async (c, { owner, params, body }) => {
        const request = (body ?? {}) as z.output<typeof OpenBody>;
        const entry = await registry.open(owner, params.id);
        const terminal = await registry.terminals.open(entry, request);
        return c.json(present(entry, terminal), 201);
      },
    }),
    defineRoute({
      method: 'get',
      path: '/v1/sessions/{id}/terminals',
      operationId: 'listTerminals',
      summary: 'The session’s open terminals (a paused session has none, and is not resumed by this).',
      tags: TAGS,
      params: SessionIdParams,
      responses: { 200: { description: 'Open terminals.', json: TerminalListSchema }, 404: notFound },
      handler: async (c, { owner, params }) => {
        const entry = registry.find(owner, params.id);
        if (!entry) {
          if (!(await registry.pauses.find(owner, params.id)))
            throw new HttpError(404, 'session-not-found', `No session ${params.id}.`);
          return c.json({ terminals: [] });
        }
        return c.json({ terminals: entry.session.terminals.list().map((terminal) => present(entry, terminal)) });
      },
    }),
    defineRoute({
      method: 'post',
      path: '/v1/sessions/{id}/terminals/{terminalId}/resize',
      operationId: 'resizeTerminal',
      summary: 'Resizes a terminal (its program gets SIGWINCH).',
      tags: TAGS,
      params: TerminalParams,
      body: { json: ResizeBody },
      responses: { 204: { description: 'Resized.' }, 404: notFound },
      handler: async (c, { owner, params, body }) => {
        const size = body as z.output<typeof ResizeBody>;
        findTerminal(server, owner, params.id, params.terminalId).terminal.resize(size.cols, size.rows);
        return c.body(null, 204);
      },
    }),
    defineRoute({
      method: 'post',
      path: '/v1/sessions/{id}/terminals/{terminalId}/input',
      operationId: 'writeTerminal',
      summary: 'Types text into a terminal (for clients without a WebSocket; `\\u0003` is Ctrl-C).',
      tags: TAGS,
      params: TerminalParams,
      body: { json: InputBody },
      responses: { 204: { description: 'Written.' }, 404: notFound },
      handler: async (c, { owner, params, body }) => {
        findTerminal(server, owner, params.id, params.terminalId).terminal.write(
          (body as z.output<typeof InputBody>).data,
        );
        return c.body(null, 204);
      },
    }),
    defineRoute({
      method: 'delete',
      path: '/v1/sessions/{id}/terminals/{terminalId}',
      operationId: 'closeTerminal',
      summary: 'Closes a terminal: SIGKILL to every job in it.',
      tags: TAGS,
      params: TerminalParams,
      responses: { 204: { description: 'Closed.' }, 404: notFound },
      handler: async (c, { owner, params }) => {
        await findTerminal(server, owner, params.id, params.terminalId).terminal.close();
        return c.body(null, 204);
      },
    }),
  ];
  return routes as unknown as RouteSpec<never, never, never>[];
}
