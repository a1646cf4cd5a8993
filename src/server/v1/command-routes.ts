/**
 * A session's shell commands under /v1: run one (JSON, or streamed like an
 * execution), start one in the background, list, kill, and write to a
 * background command's stdin. A client that disconnects from a command it
 * waits for (JSON or streamed) kills it, as an execution is interrupted: nobody
 * is left to read its result. A background command outlives its request.
 */
import type { z } from 'zod';
import type { CommandStreamEvent } from '../../protocol/index.js';
import type { CommandResult } from '../../session/command.js';
import type { ServerContext } from '../core/context.js';
import { ErrorSchema } from '../http/common-schemas.js';
import { badRequest, errorBody, HttpError, toHttpError } from '../http/errors.js';
import { eventStream, requestedStreamFormat } from '../http/execution-stream.js';
import { defineRoute, type RouteSpec } from '../http/route.js';
import {
  CommandBody,
  CommandListSchema,
  CommandPidParams,
  CommandResultSchema,
  StartedCommandSchema,
  StdinBody,
} from './command-schemas.js';
import { ExecuteQuery, SessionIdParams } from './schemas.js';

const TAGS = ['commands'];
const notFoundResponse = { description: 'No such session (or not yours), or no such command.', json: ErrorSchema };
const badRequestResponse = { description: 'Invalid input.', json: ErrorSchema };

/** The result as the wire carries it (the same fields, `signal` only when one ended it). */
export function presentCommandResult(result: CommandResult) {
  return {
    exitCode: result.exitCode,
    stdout: result.stdout,
    stderr: result.stderr,
    durationMs: result.durationMs,
    timedOut: result.timedOut,
    outputTruncated: result.outputTruncated,
    ...(result.signal ? { signal: result.signal } : {}),
  };
}

const commandNotFound = (pid: number) =>
  new HttpError(404, 'command-not-found', `No running command with pid ${pid} in this session (it may have ended).`);

export function commandRoutes(server: ServerContext): RouteSpec<never, never, never>[] {
  const { registry } = server;
  const routes = [
    defineRoute({
      method: 'post',
      path: '/v1/sessions/{id}/commands',
      operationId: 'runCommand',
      summary: 'Run a shell command (`bash -c`) in the session’s sandbox, beside its kernels.',
      description:
        'The answer is its result (a non-zero exit is data, not an HTTP error), or with `?stream=ndjson` / ' +
        '`Accept: application/x-ndjson` (or `sse` / `text/event-stream`) the events `stdout-delta`, `stderr-delta` ' +
        'and `command-end`; a failure once the stream has begun (too many commands running in the session, a ' +
        '`cwd` that is not there, the session closed) is an `error` event instead of `command-end`, with the body ' +
        'an HTTP error would have (`{ error: { code, message } }`), and ends the stream. A client that ' +
        'disconnects kills the command. `background: true` answers 202 once it has started.',
      tags: TAGS,
      params: SessionIdParams,
      query: ExecuteQuery,
      body: { json: CommandBody, required: true },
      responses: {
        200: {
          description: 'The command’s result (or its event stream).',
          json: CommandResultSchema,
          contentTypes: ['application/x-ndjson', 'text/event-stream'],
        },
        202: { description: 'Started in the background.', json: StartedCommandSchema },
        400: badRequestResponse,
        404: notFoundResponse,
        413: { description: 'The command is over the limit.', json: ErrorSchema },
        429: {
          description: 'Too many requests per minute for this key, or too many commands running in the session.',
          json: ErrorSchema,
        },
      },
      handler: async (c, { owner, params, query, body }) => {
        const request = body as z.output<typeof CommandBody>;
        const entry = await registry.open(owner, params.id);
        const format = requestedStreamFormat(c.req.header('accept'), query.stream);
        if (request.background && query.stream) {
          throw badRequest('A background command is not streamed; leave out `stream` or `background`.');
        }
        // Checked before any answer, so a refusal is an HTTP status rather than a stream event.
        registry.commands.admit(entry, request.command);
        const options = {
          admitted: true,
          ...(request.cwd === undefined ? {} : { cwd: request.cwd }),
          ...(request.env === undefined ? {} : { env: request.env }),
          ...(request.timeoutMs === undefined ? {} : { timeoutMs: request.timeoutMs }),
          ...(request.stdin === undefined ? {} : { stdin: request.stdin }),
        };
        if (request.background) {
          const handle = await registry.commands.start(entry, request.command, options);
          return c.json({ pid: handle.pid, id: handle.id }, 202);
        }
        if (!format) {
          const result = await registry.commands.run(entry, request.command, { ...options, signal: c.req.raw.signal });
          return c.json(presentCommandResult(result));
        }
        return eventStream<CommandStreamEvent>(format, (send, signal) =>
          registry.commands
            .run(entry, request.command, {
              ...options,
              signal,
              onStdout: (text) => send({ type: 'stdout-delta', text }),
              onStderr: (text) => send({ type: 'stderr-delta', text }),
            })
            .then((result) => send({ type: 'command-end', command: presentCommandResult(result) }))
            .catch((error: unknown) => send({ type: 'error', ...errorBody(toHttpError(error)) })),
        );
      },
    }),
    defineRoute({
      method: 'get',
      path: '/v1/sessions/{id}/commands',
      operationId: 'listCommands',
      summary: 'The commands running in the session now (waited for and background).',
      tags: TAGS,
      params: SessionIdParams,
      responses: { 200: { description: 'Running commands.', json: CommandListSchema }, 404: notFoundResponse },
      handler: async (c, { owner, params }) => {
        const entry = await registry.open(owner, params.id);
        const commands = await entry.session.commands.list();
        return c.json({
          commands: commands.map(({ id, pid, command, cwd, startedMs }) => ({
            id,
            pid,
            command,
            cwd,
            startedAt: new Date(startedMs).toISOString(),
          })),
        });
      },
    }),
    defineRoute({
      method: 'delete',
      path: '/v1/sessions/{id}/commands/{pid}',
      operationId: 'killCommand',
      summary: 'Kill a running command (SIGKILL to its process group); answers once it has ended.',
      tags: TAGS,
      params: CommandPidParams,
      responses: { 204: { description: 'Killed.' }, 400: badRequestResponse, 404: notFoundResponse },
      handler: async (c, { owner, params }) => {
        const entry = await registry.open(owner, params.id);
        if (!(await entry.session.commands.kill(params.pid))) throw commandNotFound(params.pid);
        return c.body(null, 204);
      },
    }),
    defineRoute({
      method: 'post',
      path: '/v1/sessions/{id}/commands/{pid}/stdin',
      operationId: 'writeCommandStdin',
      summary: 'Write text to a background command’s stdin, and optionally close it.',
      tags: TAGS,
      params: CommandPidParams,
      body: { json: StdinBody, required: true },
      responses: {
        204: { description: 'Written.' },
        400: badRequestResponse,
        404: { description: 'No such session, or no background command with this pid.', json: ErrorSchema },
      },
      handler: async (c, { owner, params, body }) => {
        const request = body as z.output<typeof StdinBody>;
        const entry = await registry.open(owner, params.id);
        const handle = entry.backgroundCommands.get(params.pid);
        if (!handle) throw commandNotFound(params.pid);
        if (request.text !== '') handle.sendStdin(request.text);
        if (request.close) handle.closeStdin();
        return c.body(null, 204);
      },
    }),
  ];
  return routes as unknown as RouteSpec<never, never, never>[];
}
