/** The native REST API under /v1: sessions, executions (JSON or streamed), files and images. */
import { randomUUID } from 'node:crypto';
import type { Context } from 'hono';
import { z } from 'zod';
import { FileOperationError } from '../../errors.js';
import { normalizeDataPath } from '../../internal/data-path.js';
import { IMAGE_TYPES } from '../../protocol/images.js';
import type { ExecutionResult } from '../../session/execution.js';
import type { ServerContext } from '../core/context.js';
import { SessionNotFoundError } from '../core/errors.js';
import type { ManagedSession } from '../core/managed-session.js';
import { ErrorSchema, UploadForm } from '../http/common-schemas.js';
import { fileHeaders, imageResponse } from '../http/content-type.js';
import { notFound } from '../http/errors.js';
import { requestedStreamFormat, streamExecution } from '../http/execution-stream.js';
import { readUploadForm } from '../http/multipart.js';
import { presentResult } from '../http/present-result.js';
import { defineRoute, type RouteSpec, tooLargeBody } from '../http/route.js';
import { presentExecution, presentFile, presentPausedSession, presentSession } from './present.js';
import {
  CreateSessionBody,
  ExecuteBody,
  ExecuteQuery,
  ExecutionSchema,
  FileListSchema,
  FilePathParams,
  FileSchema,
  ImportBody,
  ListFilesQuery,
  PausedSessionSchema,
  SessionIdParams,
  SessionListSchema,
  SessionSchema,
  UploadedSchema,
  UploadLinkBody,
  UploadLinkSchema,
} from './schemas.js';

const TAG_SESSIONS = ['sessions'];
/** A request without a body, read as one: an empty file. */
async function* emptyBody(): AsyncGenerator<Uint8Array> {}
const TAG_FILES = ['files'];
const notFoundResponse = { description: 'No such session (or not yours), or no such file.', json: ErrorSchema };
const badRequestResponse = { description: 'Invalid input.', json: ErrorSchema };

async function uploadMultipart(context: Context, server: ServerContext, entry: ManagedSession) {
  const { form, files } = await readUploadForm(
    context,
    'Upload with multipart/form-data (field `file`), or PUT the raw bytes to /v1/sessions/{id}/files/{path}.',
  );
  const directoryField = form.get('directory');
  const directory = normalizeDataPath(typeof directoryField === 'string' ? directoryField : '', { allowRoot: true });
  // Validate every name before writing any file.
  const targets = files.map((file) => {
    const name = normalizeDataPath(file.name, { allowRoot: false });
    return { file, path: directory && !file.name.startsWith('/mnt/data/') ? `${directory}/${name}` : name };
  });
  const written = [];
  for (const { file, path } of targets) {
    // Up to the server's upload limit, which the form as a whole is within: not bound by the transfer limit.
    await server.registry.files.writeUpload(entry, path, file.stream(), server.options.limits.maxUploadBytes);
    written.push(path);
  }
  return written;
}

async function describeWritten(entry: ManagedSession, paths: string[]) {
  const byDirectory = new Map<string, string[]>();
  for (const path of paths) {
    const directory = path.includes('/') ? path.slice(0, path.lastIndexOf('/')) : '';
    byDirectory.set(directory, [...(byDirectory.get(directory) ?? []), path]);
  }
  const described = [];
  for (const [directory, names] of byDirectory) {
    const listing = await entry.session.files.list(directory);
    for (const name of names) {
      const file = listing.find((candidate) => candidate.path === name);
      if (file) described.push(presentFile(entry, file));
    }
  }
  return described;
}

export function v1Routes(server: ServerContext): RouteSpec<never, never, never>[] {
  const { registry } = server;
  const { maxUploadBytes } = server.options.limits;

  /**
   * The raw request body streamed into the session at `path`, never whole in memory, at most the
   * upload limit; answered with the file written.
   */
  const putUpload = async (c: Context, entry: ManagedSession, path: string) => {
    let written: { path: string };
    try {
      written = await registry.files.writeUpload(entry, path, c.req.raw.body ?? emptyBody(), maxUploadBytes);
    } catch (error) {
      if (!(error instanceof FileOperationError && error.reason === 'too-large')) throw error;
      return tooLargeBody('upload', maxUploadBytes, (kind) =>
        server.metrics.rejected.inc({ reason: `${kind}-too-large` }),
      );
    }
    const [file] = await describeWritten(entry, [written.path]);
    return c.json(file, 201);
  };
  const routes = [
    defineRoute({
      method: 'post',
      path: '/v1/sessions',
      operationId: 'createSession',
      summary:
        'Create a session (a sandbox with a Python context; other languages start on first use), taken from the warm pool.',
      tags: TAG_SESSIONS,
      body: { json: CreateSessionBody },
      responses: {
        201: { description: 'The new session.', json: SessionSchema },
        429: { description: "The key's session limit is reached.", json: ErrorSchema },
        403: { description: 'The network asked for is beyond what the operator permits.', json: ErrorSchema },
        503: { description: 'The server is at capacity or cannot start sandboxes.', json: ErrorSchema },
      },
      handler: async (c, { owner, body }) => {
        const { environment, network, publishOutputs, volumes } = (body ?? {}) as z.output<typeof CreateSessionBody>;
        const entry = await registry.create(owner, 'v1', {
          ...(environment !== undefined ? { environment } : {}),
          ...(network !== undefined ? { network } : {}),
          ...(volumes?.length ? { mounts: volumes } : {}),
          ...(publishOutputs !== undefined ? { publishOutputs } : {}),
        });
        return c.json(presentSession(entry), 201, { location: `/v1/sessions/${entry.id}` });
      },
    }),
    defineRoute({
      method: 'get',
      path: '/v1/sessions',
      operationId: 'listSessions',
      summary: "The caller's sessions (from every API): the live ones, then the paused ones.",
      tags: TAG_SESSIONS,
      responses: { 200: { description: 'Sessions.', json: SessionListSchema } },
      handler: async (c, { owner }) =>
        c.json({
          sessions: [
            ...registry.list(owner).map(presentSession),
            ...(await registry.pauses.list(owner)).map(presentPausedSession),
          ],
        }),
    }),
    defineRoute({
      method: 'get',
      path: '/v1/sessions/{id}',
      operationId: 'getSession',
      summary: 'One session, live or paused (a paused one is not resumed by this).',
      tags: TAG_SESSIONS,
      params: SessionIdParams,
      responses: {
        200: { description: 'The session.', json: z.union([SessionSchema, PausedSessionSchema]) },
        404: notFoundResponse,
      },
      handler: async (c, { owner, params }) => {
        const live = registry.find(owner, params.id);
        if (live) return c.json(presentSession(live));
        const paused = await registry.pauses.find(owner, params.id);
        if (!paused) throw new SessionNotFoundError(params.id);
        return c.json(presentPausedSession(paused));
      },
    }),
    defineRoute({
      method: 'delete',
      path: '/v1/sessions/{id}',
      operationId: 'deleteSession',
      summary:
        'Close a session: its processes end and its files are removed; a paused session is deleted with its snapshot.',
      tags: TAG_SESSIONS,
      params: SessionIdParams,
      responses: { 204: { description: 'Closed.' }, 404: notFoundResponse },
      handler: async (c, { owner, params }) => {
        const live = registry.find(owner, params.id);
        if (live) await registry.remove(live);
        else if (!(await registry.pauses.remove(owner, params.id))) throw new SessionNotFoundError(params.id);
        return c.body(null, 204);
      },
    }),
    defineRoute({
      method: 'post',
      path: '/v1/sessions/{id}/executions',
      operationId: 'execute',
      summary: 'Run code in one of the session’s contexts (python unless `context` or `language` says otherwise).',
      description:
        'With `?stream=ndjson` / `Accept: application/x-ndjson` (or `sse` / `text/event-stream`) the events ' +
        '`stdout-delta`, `stderr-delta`, `result-ready` and `execution-end` arrive as they happen; a failure once ' +
        'the stream has begun (the session closed, the server shutting down) is an `error` event with the body an ' +
        'HTTP error would have (`{ error: { code, message } }`), and ends the stream. ' +
        'Errors in the code are part of the execution (`status: "error"`), not HTTP errors.',
      tags: TAG_SESSIONS,
      params: SessionIdParams,
      query: ExecuteQuery,
      body: { json: ExecuteBody, required: true },
      responses: {
        200: {
          description: 'The execution (or its event stream).',
          json: ExecutionSchema,
          contentTypes: ['application/x-ndjson', 'text/event-stream'],
        },
        400: badRequestResponse,
        404: notFoundResponse,
        413: { description: 'The code is over the limit.', json: ErrorSchema },
        429: {
          description:
            'Too many executions per minute for this key (`rate-limited`), or too many waiting in this session (`queue-full`).',
          json: ErrorSchema,
        },
      },
      handler: async (c, { owner, params, query, body }) => {
        const request = body as z.output<typeof ExecuteBody>;
        const entry = await registry.open(owner, params.id);
        const executionId = randomUUID();
        const format = requestedStreamFormat(c.req.header('accept'), query.stream);
        const where = {
          ...(request.language === undefined ? {} : { language: request.language }),
          ...(request.context === undefined ? {} : { context: request.context }),
        };
        if (!format) {
          const execution = await registry.execute(entry, request.code, {
            ...where,
            timeoutMs: request.timeoutMs,
            signal: c.req.raw.signal,
          });
          return c.json(presentExecution(entry, executionId, execution, request.images));
        }
        registry.admit(entry, request.code);
        const presented = new WeakMap<ExecutionResult, unknown>();
        const present = (result: ExecutionResult) => {
          if (!presented.has(result)) presented.set(result, presentResult(entry, result, request.images));
          return presented.get(result);
        };
        return streamExecution(
          format,
          async (callbacks) => {
            const execution = await registry.execute(entry, request.code, {
              ...where,
              timeoutMs: request.timeoutMs,
              ...callbacks,
            });
            const whole = presentExecution(entry, executionId, { ...execution, results: [] }, request.images);
            return { execution, body: { ...whole, results: execution.results.map(present) } };
          },
          present,
        );
      },
    }),
    defineRoute({
      method: 'get',
      path: '/v1/sessions/{id}/images/{name}',
      operationId: 'getImage',
      summary: 'An image an execution produced (linked from its results).',
      tags: TAG_SESSIONS,
      params: SessionIdParams.extend({ name: z.string().regex(/^[a-f0-9]{20}\.[a-z]{3,4}$/, 'not an image name') }),
      responses: {
        200: { description: 'The image.', contentTypes: IMAGE_TYPES.map((type) => type.mimeType) },
        404: notFoundResponse,
      },
      handler: (c, { owner, params }) => {
        // Images live with the live session: a paused one has none to give, and is not resumed for it.
        const image = registry.get(owner, params.id).images.get(params.name);
        if (!image) throw notFound(`No image ${params.name} in this session (only the latest images are kept).`);
        return imageResponse(c, image);
      },
    }),
    defineRoute({
      method: 'get',
      path: '/v1/sessions/{id}/files',
      operationId: 'listFiles',
      summary: 'List files under /mnt/data (or a directory in it).',
      tags: TAG_FILES,
      params: SessionIdParams,
      query: ListFilesQuery,
      responses: {
        200: { description: 'Files.', json: FileListSchema },
        400: badRequestResponse,
        404: notFoundResponse,
      },
      handler: async (c, { owner, params, query }) => {
        const entry = await registry.open(owner, params.id);
        const files = await entry.session.files.list(query.path ?? '', { recursive: query.recursive });
        return c.json({ files: files.map((file) => presentFile(entry, file)) });
      },
    }),
    defineRoute({
      method: 'post',
      path: '/v1/sessions/{id}/files',
      operationId: 'uploadFiles',
      summary: 'Upload files (multipart/form-data, field `file`, repeatable).',
      tags: TAG_FILES,
      params: SessionIdParams,
      body: { multipart: UploadForm, required: true },
      bodyKind: 'upload',
      responses: {
        201: { description: 'The files written.', json: UploadedSchema },
        400: badRequestResponse,
        404: notFoundResponse,
        413: { description: 'Over the upload limit.', json: ErrorSchema },
        415: { description: 'Not multipart/form-data.', json: ErrorSchema },
      },
      handler: async (c, { owner, params }) => {
        const entry = await registry.open(owner, params.id);
        const written = await uploadMultipart(c, server, entry);
        return c.json({ files: await describeWritten(entry, written) }, 201);
      },
    }),
    defineRoute({
      method: 'post',
      path: '/v1/sessions/{id}/files/import',
      operationId: 'importFile',
      summary:
        'Copy a published output of this key (its link, from an execution’s `files`) into the session: read from the server’s store, not fetched.',
      tags: TAG_FILES,
      params: SessionIdParams,
      body: { json: ImportBody, required: true },
      responses: {
        201: { description: 'The file written.', json: UploadedSchema },
        400: badRequestResponse,
        404: notFoundResponse,
        413: { description: 'Over the server’s upload limit (--max-upload-bytes).', json: ErrorSchema },
      },
      handler: async (c, { owner, params, body }) => {
        const { url, path } = body as z.output<typeof ImportBody>;
        const entry = await registry.open(owner, params.id);
        registry.admitUpload(entry);
        const written = await registry.files.importOutput(
          entry,
          url,
          path === undefined ? undefined : normalizeDataPath(path),
          server.options.limits.maxUploadBytes,
        );
        return c.json({ files: await describeWritten(entry, [written]) }, 201);
      },
    }),
    defineRoute({
      method: 'put',
      path: '/v1/sessions/{id}/files/{path}',
      wildcard: 'path',
      operationId: 'putFile',
      summary: 'Write a file from the raw request body (any content type), replacing it if it exists.',
      tags: TAG_FILES,
      params: FilePathParams,
      body: { raw: true, streamed: true, required: true },
      bodyKind: 'upload',
      responses: {
        201: { description: 'The file written.', json: FileSchema },
        400: badRequestResponse,
        404: notFoundResponse,
        413: { description: 'Over the upload limit.', json: ErrorSchema },
      },
      handler: async (c, { owner, params }) => {
        const entry = await registry.open(owner, params.id);
        return putUpload(c, entry, normalizeDataPath(params.path));
      },
    }),
    defineRoute({
      method: 'post',
      path: '/v1/sessions/{id}/files/upload-link',
      operationId: 'createUploadLink',
      summary:
        'A signed link that writes one file into the session: PUT its bytes there with no key, streamed (large inputs, a browser, another service) until it expires.',
      tags: TAG_FILES,
      params: SessionIdParams,
      body: { json: UploadLinkBody, required: true },
      responses: {
        201: { description: 'The link.', json: UploadLinkSchema },
        400: badRequestResponse,
        404: notFoundResponse,
      },
      handler: async (c, { owner, params, body }) => {
        const { path, expiresIn } = body as z.output<typeof UploadLinkBody>;
        const entry = await registry.open(owner, params.id);
        const target = normalizeDataPath(path);
        const expiresAt = new Date(
          Date.now() + (expiresIn === undefined ? server.options.linkTtlMs : expiresIn * 1000),
        );
        const url = await registry.files.uploadLink(entry, target, expiresAt);
        return c.json({ url, method: 'PUT' as const, path: target, expiresAt: expiresAt.toISOString() }, 201);
      },
    }),
    defineRoute({
      method: 'put',
      path: '/v1/uploads/{token}',
      operationId: 'putByUploadLink',
      summary:
        'Write the file an upload link names from the raw request body; needs no key until the link expires, and may be used again until then.',
      tags: TAG_FILES,
      authenticated: false,
      params: z.object({ token: z.string().max(2048) }),
      body: { raw: true, streamed: true, required: true },
      bodyKind: 'upload',
      responses: {
        201: { description: 'The file written.', json: FileSchema },
        404: { description: 'No such link, or it expired, or its session is gone.', json: ErrorSchema },
        413: { description: 'Over the upload limit.', json: ErrorSchema },
      },
      handler: async (c, { params }) => {
        const target = await registry.files.uploadTarget(params.token);
        // A link outlives neither its key (removed from the server) nor its session.
        const owner = target && server.apiKeys.ownerById(target.ownerId);
        if (!target || !owner) throw notFound('No such upload link, or it expired.');
        const entry = await registry.open(owner, target.sessionId);
        registry.admitUpload(entry);
        return putUpload(c, entry, target.path);
      },
    }),
    defineRoute({
      method: 'get',
      path: '/v1/sessions/{id}/files/{path}',
      wildcard: 'path',
      operationId: 'downloadFile',
      summary: 'Download a file.',
      tags: TAG_FILES,
      params: FilePathParams,
      responses: {
        200: { description: 'The bytes.', contentTypes: ['application/octet-stream'] },
        400: badRequestResponse,
        404: notFoundResponse,
      },
      handler: async (c, { owner, params }) => {
        const entry = await registry.open(owner, params.id);
        const path = normalizeDataPath(params.path);
        const data = await entry.session.files.read(path);
        return c.body(new Uint8Array(data), 200, fileHeaders(path, data.length));
      },
    }),
    defineRoute({
      method: 'get',
      path: '/v1/outputs/{token}',
      operationId: 'getPublishedOutput',
      summary:
        'A published output, by the signed link an execution answered with (on a server whose store is a directory); needs no key until the link expires.',
      tags: TAG_FILES,
      authenticated: false,
      params: z.object({ token: z.string().max(2048) }),
      responses: {
        200: { description: 'The bytes.', contentTypes: ['application/octet-stream'] },
        404: { description: 'No such link, or it expired.', json: ErrorSchema },
      },
      handler: async (c, { params }) => {
        const output = await registry.files.openOutput(params.token);
        if (!output) throw notFound('No such published output, or its link expired.');
        const { 'content-length': _length, ...headers } = fileHeaders(output.path, 0);
        if (c.req.method === 'HEAD') {
          // HEAD runs this GET handler and drops its body, and a stream never read stays open until
          // collected (a file per HEAD): start reading and stop, which closes it.
          for await (const _chunk of output.body) break;
          return c.body(null, 200, { ...headers, 'cache-control': 'private, no-store' });
        }
        return c.body(ReadableStream.from(output.body), 200, { ...headers, 'cache-control': 'private, no-store' });
      },
    }),
    defineRoute({
      method: 'delete',
      path: '/v1/sessions/{id}/files/{path}',
      wildcard: 'path',
      operationId: 'deleteFile',
      summary: 'Delete a file or a directory (recursively).',
      tags: TAG_FILES,
      params: FilePathParams,
      responses: { 204: { description: 'Deleted.' }, 400: badRequestResponse, 404: notFoundResponse },
      handler: async (c, { owner, params }) => {
        const entry = await registry.open(owner, params.id);
        await entry.session.files.remove(normalizeDataPath(params.path));
        return c.body(null, 204);
      },
    }),
  ];
  return routes as unknown as RouteSpec<never, never, never>[];
}
