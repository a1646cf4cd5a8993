/**
 * Azure Container Apps dynamic-sessions compatible routes (mounted under
 * /azure), so LangChain's SessionsPythonREPLTool and LlamaIndex's
 * AzureCodeInterpreterToolSpec work with their pool endpoint set to
 * `http://host:port/azure`. Every request names its session with
 * `?identifier=`; a session is created on first use, as Azure does — but only
 * by a POST: a GET on an identifier without a session answers as an empty
 * session would (no files), so a page's `<img>` cannot create sessions.
 *
 * Two generations of the API: 2024-02-02-preview (`code/execute`,
 * `files/upload`, `files/content/{name}`) and 2024-10-02-preview onwards
 * (`executions`, `files`, `files/{name}/content`). `DELETE session` works with
 * any version. Both run a shell command for `codeInputType: "shellCommand"`
 * (the command in `shellCommand`, or in `code`), answering in the shape of an
 * execution plus `exitCode`; a non-zero exit is a failure.
 */
import { randomUUID } from 'node:crypto';
import type { Context } from 'hono';
import type { z } from 'zod';
import { normalizeDataPath } from '../../internal/data-path.js';
import type { FileEntry } from '../../session/files.js';
import type { Owner } from '../core/auth.js';
import type { ServerContext } from '../core/context.js';
import type { ManagedSession } from '../core/managed-session.js';
import { ErrorSchema } from '../http/common-schemas.js';
import { contentTypeFor, fileHeaders } from '../http/content-type.js';
import { HttpError, notFound } from '../http/errors.js';
import { readUploadForm } from '../http/multipart.js';
import { defineRoute, type RouteSpec } from '../http/route.js';
import { withAzureErrors } from './azure-errors.js';
import { azureCommandStatus, azureCommandStderr, azureResult, azureStatus, azureStderr } from './present.js';
import {
  AzureCodeExecuteBody,
  AzureCodeExecuteResponse,
  AzureExecutionBody,
  AzureExecutionResponse,
  AzureFileListResponse,
  AzureFileSchema,
  AzureFilesResponse,
  AzureNameParams,
  AzurePathQuery,
  AzureQuery,
  AzureUploadForm,
  requestedShellCommand,
} from './schemas.js';

const TAGS = ['azure dynamic sessions'];
/** The registry's scope of Azure's identifiers (names the client chose). */
export const AZURE_SCOPE = 'azure';
const SCOPE = AZURE_SCOPE;
/** The first api-version of the newer executions API. */
const EXECUTIONS_API = '2024-10-02';

type AzureQueryValue = z.output<typeof AzurePathQuery>;

const isNewApi = (query: AzureQueryValue): boolean => query['api-version'].slice(0, 10) >= EXECUTIONS_API;
const errors = {
  400: { description: 'Invalid input (identifier, api-version, body, file name).', json: ErrorSchema },
  401: { description: 'Missing or wrong API key.', json: ErrorSchema },
};

/** `/mnt/data/x`, `x`, `dir/x` → a path relative to /mnt/data, resolved against `?path=` when given. */
function dataPath(name: string, directory?: string): string {
  const relative = normalizeDataPath(name);
  const base = directory === undefined ? '' : normalizeDataPath(directory, { allowRoot: true });
  return base && !name.startsWith('/mnt/data/') ? `${base}/${relative}` : relative;
}

function presentNewFile(file: FileEntry) {
  return {
    name: file.path,
    type: file.type === 'directory' ? ('directory' as const) : ('file' as const),
    sizeInBytes: file.size,
    lastModifiedAt: new Date(file.modifiedMs).toISOString(),
    ...(file.type === 'file' ? { contentType: contentTypeFor(file.path) } : {}),
  };
}

function oldFileList(files: FileEntry[]) {
  let id = 1;
  return {
    $id: String(id++),
    value: files.map((file) => ({
      $id: String(id++),
      properties: {
        $id: String(id++),
        filename: file.path,
        size: file.size,
        lastModifiedTime: new Date(file.modifiedMs).toISOString(),
      },
    })),
  };
}

async function describe(entry: ManagedSession, path: string): Promise<FileEntry> {
  const directory = path.includes('/') ? path.slice(0, path.lastIndexOf('/')) : '';
  const file = (await entry.session.files.list(directory)).find((candidate) => candidate.path === path);
  if (!file) throw new HttpError(404, 'file-not-found', `No file /mnt/data/${path}.`);
  return file;
}

/** Writes the form's files into the session, each up to the server's upload limit (not bound by the transfer limit). */
async function upload(
  context: Context,
  server: ServerContext,
  entry: ManagedSession,
  directory?: string,
): Promise<FileEntry[]> {
  const { files } = await readUploadForm(context, 'Upload files as multipart/form-data in the field `file`.');
  const targets = files.map((file) => ({ file, path: dataPath(file.name, directory) }));
  const written: FileEntry[] = [];
  for (const { file, path } of targets) {
    await server.registry.files.writeUpload(entry, path, file.stream(), server.options.limits.maxUploadBytes);
    written.push(await describe(entry, path));
  }
  return written;
}

async function allFiles(entry: ManagedSession, directory = ''): Promise<FileEntry[]> {
  const entries = await entry.session.files.list(directory, { recursive: true });
  return entries.filter((file) => file.type === 'file');
}

export function azureRoutes(server: ServerContext): RouteSpec<never, never, never>[] {
  const { registry } = server;
  const session = (owner: Owner, query: AzureQueryValue) =>
    registry.names.open(owner, 'azure', SCOPE, query.identifier);
  const existing = async (owner: Owner, query: AzureQueryValue) => {
    const entry = await registry.names.find(owner, SCOPE, query.identifier);
    if (!entry) throw new HttpError(404, 'session-not-found', `No session with identifier ${query.identifier}.`);
    return entry;
  };
  /** A shell command, under the same limits as code; a client that disconnects kills it. */
  const runCommand = (entry: ManagedSession, command: string, timeoutMs: number | undefined, signal: AbortSignal) =>
    registry.commands.run(entry, command, { ...(timeoutMs === undefined ? {} : { timeoutMs }), signal });
  const download = async (c: Context, entry: ManagedSession, path: string) => {
    const data = await entry.session.files.read(path);
    return c.body(new Uint8Array(data), 200, fileHeaders(path, data.length));
  };

  /** For GETs: the session if it exists; a session that does not exist yet has no files. */
  const existingOrNoFile = async (owner: Owner, query: AzureQueryValue, path: string) => {
    const entry = await registry.names.find(owner, SCOPE, query.identifier);
    if (!entry) throw new HttpError(404, 'file-not-found', `No file /mnt/data/${path}.`);
    return entry;
  };

  /** GET files/… serves both generations: `content/{name}` (old) and `{name}`, `{name}/content` (new). */
  const getFile = async (c: Context, owner: Owner, query: AzureQueryValue, rest: string) => {
    if (!isNewApi(query)) {
      if (!rest.startsWith('content/')) throw notFound(`Unknown route for api-version ${query['api-version']}.`);
      const path = dataPath(rest.slice('content/'.length), query.path);
      return download(c, await existingOrNoFile(owner, query, path), path);
    }
    if (rest.endsWith('/content')) {
      const path = dataPath(rest.slice(0, -'/content'.length), query.path);
      return download(c, await existingOrNoFile(owner, query, path), path);
    }
    const path = dataPath(rest, query.path);
    return c.json(presentNewFile(await describe(await existingOrNoFile(owner, query, path), path)));
  };

  const routes = [
    defineRoute({
      method: 'post',
      path: '/azure/code/execute',
      operationId: 'azureCodeExecute',
      summary: 'Run code (api-version 2024-02-02-preview).',
      tags: TAGS,
      query: AzureQuery,
      body: { json: AzureCodeExecuteBody, required: true },
      responses: { 200: { description: 'The execution.', json: AzureCodeExecuteResponse }, ...errors },
      handler: async (c, { owner, query, body }) => {
        const { properties } = body as z.output<typeof AzureCodeExecuteBody>;
        const entry = await session(owner, query);
        const timeoutMs = properties.timeoutInSeconds ? properties.timeoutInSeconds * 1000 : undefined;
        const shellCommand = requestedShellCommand(properties);
        if (shellCommand !== undefined) {
          const result = await runCommand(entry, shellCommand, timeoutMs, c.req.raw.signal);
          return c.json({
            $id: '1',
            properties: {
              $id: '2',
              status: azureCommandStatus(result),
              stdout: result.stdout,
              stderr: azureCommandStderr(result),
              result: '',
              exitCode: result.exitCode,
              executionTimeInMilliseconds: Math.round(result.durationMs),
            },
          });
        }
        const execution = await registry.execute(entry, properties.code ?? '', {
          timeoutMs,
          signal: c.req.raw.signal,
        });
        return c.json({
          $id: '1',
          properties: {
            $id: '2',
            status: azureStatus(execution),
            stdout: execution.stdout,
            stderr: azureStderr(execution),
            result: azureResult(execution),
            executionTimeInMilliseconds: Math.round(execution.durationMs),
          },
        });
      },
    }),
    defineRoute({
      method: 'post',
      path: '/azure/executions',
      operationId: 'azureExecutions',
      summary: 'Run code (api-version 2024-10-02-preview and later).',
      tags: TAGS,
      query: AzureQuery,
      body: { json: AzureExecutionBody, required: true },
      responses: { 200: { description: 'The execution.', json: AzureExecutionResponse }, ...errors },
      handler: async (c, { owner, query, body }) => {
        const request = body as z.output<typeof AzureExecutionBody>;
        const entry = await session(owner, query);
        const timeoutMs = request.timeoutInSeconds ? request.timeoutInSeconds * 1000 : undefined;
        const shellCommand = requestedShellCommand(request);
        if (shellCommand !== undefined) {
          const result = await runCommand(entry, shellCommand, timeoutMs, c.req.raw.signal);
          return c.json({
            id: randomUUID(),
            identifier: query.identifier,
            executionType: 'Synchronous',
            status: result.exitCode === 0 && !result.timedOut ? 'Succeeded' : 'Failed',
            result: {
              stdout: result.stdout,
              stderr: azureCommandStderr(result),
              executionResult: '',
              exitCode: result.exitCode,
              executionTimeInMilliseconds: Math.round(result.durationMs),
            },
          });
        }
        const execution = await registry.execute(entry, request.code ?? '', {
          timeoutMs,
          signal: c.req.raw.signal,
        });
        return c.json({
          id: randomUUID(),
          identifier: query.identifier,
          executionType: 'Synchronous',
          status: execution.status === 'ok' ? 'Succeeded' : 'Failed',
          result: {
            stdout: execution.stdout,
            stderr: azureStderr(execution),
            executionResult: azureResult(execution),
            executionTimeInMilliseconds: Math.round(execution.durationMs),
          },
        });
      },
    }),
    defineRoute({
      method: 'post',
      path: '/azure/files/upload',
      operationId: 'azureUploadFile',
      summary: 'Upload a file (api-version 2024-02-02-preview; multipart field `file`).',
      tags: TAGS,
      query: AzurePathQuery,
      body: { multipart: AzureUploadForm, required: true },
      bodyKind: 'upload',
      responses: { 200: { description: 'The file written.', json: AzureFileListResponse }, ...errors },
      handler: async (c, { owner, query }) => {
        const entry = await session(owner, query);
        return c.json(oldFileList(await upload(c, server, entry, query.path)));
      },
    }),
    defineRoute({
      method: 'post',
      path: '/azure/files',
      operationId: 'azureUploadFileNew',
      summary: 'Upload a file (api-version 2024-10-02-preview and later; `?path=` a directory).',
      tags: TAGS,
      query: AzurePathQuery,
      body: { multipart: AzureUploadForm, required: true },
      bodyKind: 'upload',
      responses: { 200: { description: 'The file written.', json: AzureFileSchema }, ...errors },
      handler: async (c, { owner, query }) => {
        const entry = await session(owner, query);
        const written = (await upload(c, server, entry, query.path)).map(presentNewFile);
        return c.json(written.length === 1 ? written[0] : { value: written });
      },
    }),
    defineRoute({
      method: 'get',
      path: '/azure/files',
      operationId: 'azureListFiles',
      summary: "List the session's files (shape by api-version).",
      tags: TAGS,
      query: AzurePathQuery,
      responses: {
        200: {
          description: 'Files: `{$id, value:[{properties}]}` before 2024-10-02-preview, `{value:[…]}` from it.',
          json: AzureFileListResponse.or(AzureFilesResponse),
        },
        ...errors,
      },
      handler: async (c, { owner, query }) => {
        const directory = query.path === undefined ? '' : normalizeDataPath(query.path, { allowRoot: true });
        const entry = await registry.names.find(owner, SCOPE, query.identifier);
        if (!entry) return c.json(isNewApi(query) ? { value: [] } : oldFileList([]));
        if (!isNewApi(query)) return c.json(oldFileList(await allFiles(entry, directory)));
        const entries = await entry.session.files.list(directory);
        return c.json({
          value: entries.filter((file) => file.type !== 'symlink' && file.type !== 'other').map(presentNewFile),
        });
      },
    }),
    defineRoute({
      method: 'get',
      path: '/azure/files/{name}',
      wildcard: 'name',
      operationId: 'azureGetFile',
      summary: "A file's metadata (2024-10-02-preview and later); also serves the content routes below.",
      tags: TAGS,
      params: AzureNameParams,
      query: AzurePathQuery,
      responses: {
        200: { description: 'The file.', json: AzureFileSchema },
        ...errors,
        404: { description: 'No such file.', json: ErrorSchema },
      },
      handler: (c, { owner, params, query }) => getFile(c, owner, query, params.name),
    }),
    defineRoute({
      method: 'get',
      path: '/azure/files/content/{name}',
      register: false,
      operationId: 'azureDownloadFile',
      summary: 'Download a file (api-version 2024-02-02-preview); the name may carry /mnt/data/.',
      tags: TAGS,
      params: AzureNameParams,
      query: AzurePathQuery,
      responses: { 200: { description: 'The bytes.', contentTypes: ['application/octet-stream'] }, ...errors },
      handler: () => {
        throw notFound('served by azureGetFile');
      },
    }),
    defineRoute({
      method: 'get',
      path: '/azure/files/{name}/content',
      register: false,
      operationId: 'azureDownloadFileNew',
      summary: 'Download a file (2024-10-02-preview and later).',
      tags: TAGS,
      params: AzureNameParams,
      query: AzurePathQuery,
      responses: { 200: { description: 'The bytes.', contentTypes: ['application/octet-stream'] }, ...errors },
      handler: () => {
        throw notFound('served by azureGetFile');
      },
    }),
    defineRoute({
      method: 'delete',
      path: '/azure/files/{name}',
      wildcard: 'name',
      operationId: 'azureDeleteFile',
      summary: 'Delete a file (2024-10-02-preview and later).',
      tags: TAGS,
      params: AzureNameParams,
      query: AzurePathQuery,
      responses: {
        204: { description: 'Deleted.' },
        ...errors,
        404: { description: 'No such file.', json: ErrorSchema },
      },
      handler: async (c, { owner, params, query }) => {
        const entry = await existing(owner, query);
        await entry.session.files.remove(dataPath(params.name, query.path));
        return c.body(null, 204);
      },
    }),
    defineRoute({
      method: 'delete',
      path: '/azure/session',
      operationId: 'azureDeleteSession',
      summary: 'End the session (api-version 2025-10-02-preview); the identifier starts afresh on next use.',
      description: 'Idempotent: deleting an identifier that has no session also answers 204.',
      tags: TAGS,
      query: AzureQuery,
      responses: { 204: { description: 'Deleted.' }, ...errors },
      handler: async (c, { owner, query }) => {
        const entry = await registry.names.find(owner, SCOPE, query.identifier);
        if (entry) await registry.remove(entry);
        return c.body(null, 204);
      },
    }),
  ];
  return routes.map((route) => withAzureErrors(route as unknown as RouteSpec<never, never, never>));
}
