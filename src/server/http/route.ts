/**
 * One table of routes drives both the server and its OpenAPI document: each
 * route names its zod schemas (path parameters, query, JSON body, responses),
 * which validate every request here and describe it in /openapi.json.
 */

import type { Context, Hono, MiddlewareHandler } from 'hono';
import type { ZodType, z } from 'zod';
import { formatBytes } from '../../protocol/format-bytes.js';
import type { Owner } from '../core/auth.js';
import { limitBody } from './body-limit.js';
import { HttpError } from './errors.js';

export type Method = 'get' | 'post' | 'put' | 'patch' | 'delete';

export interface ResponseSpec {
  description: string;
  /** A JSON body described by this schema. */
  json?: ZodType;
  /** Other content types (bytes, streams), described by name only. */
  contentTypes?: string[];
}

export interface RequestBodySpec {
  /** A JSON body, validated by this schema. */
  json?: ZodType;
  /** Also accepted: multipart/form-data uploads (parsed by the handler). */
  multipart?: ZodType;
  /** Also accepted: a raw body of any type (parsed by the handler). */
  raw?: boolean;
  /**
   * The raw body is streamed by the handler, which bounds it itself: only a declared
   * Content-Length is judged up front, and nothing is buffered on the way.
   */
  streamed?: boolean;
  required?: boolean;
}

export interface RouteInput<P, Q, B> {
  params: P;
  query: Q;
  /** The validated JSON body, or undefined when the request carried another accepted type. */
  body: B | undefined;
  owner: Owner;
}

export interface RouteSpec<P = Record<string, string>, Q = Record<string, unknown>, B = unknown> {
  method: Method;
  /** OpenAPI path, e.g. `/v1/sessions/{id}/files/{path}`. */
  path: string;
  /** A path parameter that may span slashes (a file path). */
  wildcard?: string;
  operationId: string;
  summary: string;
  description?: string;
  tags: string[];
  params?: ZodType<P>;
  query?: ZodType<Q>;
  body?: RequestBodySpec;
  /** Which byte limit applies to the body. @default 'request' */
  bodyKind?: 'request' | 'upload';
  responses: Record<number, ResponseSpec>;
  /** False for a route that only documents a path another route's handler serves. @default true */
  register?: boolean;
  /** False for routes anyone may call (health, the document). @default true */
  authenticated?: boolean;
  handler: (context: Context, input: RouteInput<P, Q, B>) => Response | Promise<Response>;
}

/** Infers handler argument types from the schemas. */
export function defineRoute<P, Q, B>(spec: RouteSpec<P, Q, B>): RouteSpec<P, Q, B> {
  return spec;
}

export interface RouteContext {
  authenticate(context: Context): Owner;
  limits: { maxRequestBytes: number; maxUploadBytes: number };
  onTooLarge(kind: 'request' | 'upload'): void;
}

function describeIssues(error: z.ZodError, where: string): string {
  const issues = error.issues.map((issue) => {
    const at = issue.path.map(String).join('.');
    return at ? `${at}: ${issue.message}` : issue.message;
  });
  return `Invalid ${where}: ${issues.join('; ')}.`;
}

function validate<T>(schema: ZodType<T> | undefined, value: unknown, where: string): T {
  if (!schema) return value as T;
  const parsed = schema.safeParse(value);
  if (!parsed.success) throw new HttpError(400, 'invalid-request', describeIssues(parsed.error, where));
  return parsed.data;
}

function honoPath(spec: RouteSpec<never, never, never> | RouteSpec): string {
  return spec.path.replace(/\{([^}]+)\}/g, (_, name: string) => (name === spec.wildcard ? `:${name}{.+}` : `:${name}`));
}

async function readJsonBody(context: Context, spec: RequestBodySpec): Promise<unknown> {
  const type = context.req.header('content-type') ?? '';
  const length = context.req.header('content-length');
  const empty = length === '0' || (length === undefined && !context.req.header('transfer-encoding'));
  if (empty && !spec.required) return undefined;
  if (!/^application\/(.+\+)?json\b/i.test(type)) {
    if ((spec.multipart && /^multipart\/form-data\b/i.test(type)) || spec.raw) return undefined;
    throw new HttpError(
      415,
      'unsupported-media-type',
      `Send the body as application/json${spec.multipart ? ' or multipart/form-data' : ''}; got ${type ? JSON.stringify(type) : 'no Content-Type'}.`,
    );
  }
  const text = await context.req.text();
  if (text.trim() === '' && !spec.required) return undefined;
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new HttpError(400, 'invalid-json', `The body is not valid JSON: ${(error as Error).message}`);
  }
}

/** A body over its route's limit: counted, and answered 413 on a connection that then closes. */
export function tooLargeBody(
  kind: 'request' | 'upload',
  maxSize: number,
  onTooLarge: (kind: 'request' | 'upload') => void,
): never {
  onTooLarge(kind);
  throw new HttpError(
    413,
    'body-too-large',
    `The request body is over the server's limit of ${formatBytes(maxSize)} (its operator's setting ${kind === 'upload' ? '--max-upload-bytes' : '--max-request-bytes'}).`,
    // The rest of the body is not read: the connection cannot carry another request.
    { connection: 'close' },
  );
}

export function registerRoutes(app: Hono, routes: RouteSpec<never, never, never>[], context: RouteContext): void {
  for (const spec of routes as unknown as RouteSpec[]) {
    if (spec.register === false) continue;
    const middlewares: MiddlewareHandler[] = [];
    if (spec.body) {
      const kind = spec.bodyKind ?? 'request';
      const maxSize = kind === 'upload' ? context.limits.maxUploadBytes : context.limits.maxRequestBytes;
      middlewares.push(
        limitBody(maxSize, () => tooLargeBody(kind, maxSize, context.onTooLarge), {
          count: spec.body.streamed !== true,
        }),
      );
    }
    app.on([spec.method.toUpperCase()], [honoPath(spec)], ...middlewares, async (c: Context) => {
      const owner = spec.authenticated === false ? { id: 'anonymous', label: 'anonymous' } : context.authenticate(c);
      const params = validate(spec.params, c.req.param(), 'path parameters');
      const query = validate(spec.query, c.req.query(), 'query parameters');
      let body: unknown;
      if (spec.body?.json) {
        const raw = await readJsonBody(c, spec.body);
        body = raw === undefined && !spec.body.required ? undefined : validate(spec.body.json, raw, 'body');
      }
      return spec.handler(c, { params, query, body, owner });
    });
  }
}
