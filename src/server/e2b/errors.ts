/**
 * E2B's error shapes, so the unmodified SDK raises its own typed errors. The
 * control plane and envd's plain HTTP routes answer `{"code": <status>,
 * "message"}`; Connect-RPC answers `{"code": "not_found", "message"}` with the
 * status that Connect pairs with the code (a 404 that is not Connect JSON reads
 * as Unimplemented in the SDK). Sandcell's own errors are mapped once, here:
 * their statuses through the server's mapping (`toHttpError`), so limits and
 * files answer the same statuses as under /v1, and the limits' hints in E2B's
 * terms (an E2B user has the SDK's calls, not /v1's routes).
 */
import type { Context } from 'hono';
import type { z } from 'zod';
import type { DoorWords } from '../core/error-words.js';
import { HTTP_WORDS, toHttpError } from '../http/errors.js';

/** An error raised by the E2B front door with a definite status. */
export class E2bError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly headers: Record<string, string> = {},
    /** Fields the answer carries beside `code` and `message`. */
    readonly fields: Record<string, unknown> = {},
  ) {
    super(message);
    this.name = 'E2bError';
  }
}

/**
 * Sandbox traffic to a paused sandbox that its traffic may not resume: E2B's proxy answers 409 with
 * `{"sandboxId","message","code":409,"canAutoResume":false}`; Connect-RPC calls get
 * `failed_precondition` (the SDK raises a SandboxError naming it).
 */
export class SandboxPausedError extends E2bError {
  constructor(readonly sandboxId: string) {
    super(
      409,
      `The sandbox ${sandboxId} is paused: Sandbox.connect() resumes it (so does its own traffic when it was created with lifecycle.autoResume).`,
      {},
      { sandboxId, canAutoResume: false },
    );
    this.name = 'SandboxPausedError';
  }
}

/** Sandbox traffic for ids this server does not hold live caused more reads of the store this second than it allows. */
export class TrafficLookupsExhaustedError extends E2bError {
  constructor() {
    super(503, 'This server is looking up too many sandboxes it does not hold; try again in a second.', {
      'retry-after': '1',
    });
    this.name = 'TrafficLookupsExhaustedError';
  }
}

export type ConnectCode =
  | 'canceled'
  | 'unknown'
  | 'invalid_argument'
  | 'deadline_exceeded'
  | 'not_found'
  | 'already_exists'
  | 'permission_denied'
  | 'resource_exhausted'
  | 'failed_precondition'
  | 'aborted'
  | 'unimplemented'
  | 'internal'
  | 'unavailable'
  | 'data_loss'
  | 'unauthenticated';

/** The HTTP status Connect pairs with each code (connectrpc.com/docs/protocol#error-codes). */
const STATUS_OF_CONNECT_CODE: Record<ConnectCode, number> = {
  canceled: 499,
  unknown: 500,
  invalid_argument: 400,
  deadline_exceeded: 504,
  not_found: 404,
  already_exists: 409,
  permission_denied: 403,
  resource_exhausted: 429,
  failed_precondition: 400,
  aborted: 409,
  unimplemented: 501,
  internal: 500,
  unavailable: 503,
  data_loss: 500,
  unauthenticated: 401,
};

/** A Connect-RPC error: the code names the SDK's error class (not_found → NotFoundError, …). */
export class ConnectError extends Error {
  constructor(
    readonly code: ConnectCode,
    message: string,
  ) {
    super(message);
    this.name = 'ConnectError';
  }

  get status(): number {
    return STATUS_OF_CONNECT_CODE[this.code];
  }
}

/**
 * The HTTP API's words, but what lifts each of the server's limits said to an E2B SDK user: the
 * SDK's own calls (the same names in JavaScript and Python), and what the operator of
 * `sandcell serve` can raise.
 */
const E2B_WORDS: DoorWords = {
  ...HTTP_WORDS,
  limitHints: {
    'sessions-per-key':
      "Kill a sandbox you no longer need (sandbox.kill()); the server's operator can raise `sandcell serve --sessions-per-key`.",
    'server-sessions': "Try again later; the server's operator can raise `sandcell serve --max-sessions`.",
    'queued-executions':
      "Wait for the code already running in this sandbox to finish; the server's operator can raise `sandcell serve --max-queued-executions`.",
    'executions-per-minute': "Wait; the server's operator can raise `sandcell serve --executions-per-minute`.",
    'code-bytes': 'Write large data into the sandbox as a file (sandbox.files.write()) and have the code read it.',
    'snapshot-bytes':
      "Delete snapshots (Sandbox.deleteSnapshot()) or kill paused sandboxes (Sandbox.kill()) you no longer need; the server's operator can raise `sandcell serve --snapshot-bytes-per-key`.",
    'terminals-per-key': 'Kill PTYs this key no longer needs (sandbox.pty.kill(pid)).',
  },
};

/** Any error as a status, message and headers: ours as raised, sandcell's through the server's mapping. */
export function toE2bError(error: unknown): E2bError {
  if (error instanceof E2bError) return error;
  if (error instanceof ConnectError) return new E2bError(error.status, error.message);
  const mapped = toHttpError(error, E2B_WORDS);
  return new E2bError(mapped.status, mapped.message, mapped.headers);
}

/** An execution that could not run, as the interpreter's error line: sandcell's code names it, in E2B's words. */
export function toE2bExecutionError(error: unknown): { name: string; value: string } {
  return { name: toHttpError(error).code, value: toE2bError(error).message };
}

/** The control plane's and envd's plain HTTP error: `{"code": 404, "message": "…"}`. */
export function e2bErrorResponse(context: Context, error: unknown): Response {
  const mapped = toE2bError(error);
  return context.json(
    { ...mapped.fields, code: mapped.status, message: mapped.message },
    mapped.status as 400,
    mapped.headers,
  );
}

const CONNECT_CODE_OF_STATUS: Record<number, ConnectCode> = {
  400: 'invalid_argument',
  401: 'unauthenticated',
  403: 'permission_denied',
  404: 'not_found',
  409: 'already_exists',
  // A sandbox whose state is gone (its server stopped without pausing it).
  410: 'data_loss',
  413: 'resource_exhausted',
  429: 'resource_exhausted',
  499: 'canceled',
  501: 'unimplemented',
  // The sandbox is gone (E2B's proxy answers 502): the SDK reads Unavailable as the sandbox's timeout.
  502: 'unavailable',
  503: 'unavailable',
  504: 'deadline_exceeded',
  507: 'resource_exhausted',
};

/** Any error as a Connect error: raised ones keep their code, others take the code of their status. */
export function toConnectError(error: unknown): ConnectError {
  if (error instanceof ConnectError) return error;
  if (error instanceof SandboxPausedError) return new ConnectError('failed_precondition', error.message);
  const mapped = toE2bError(error);
  return new ConnectError(CONNECT_CODE_OF_STATUS[mapped.status] ?? 'internal', mapped.message);
}

/** A unary Connect-RPC error: `{"code": "not_found", "message": "…"}` with Connect's status. */
export function connectErrorResponse(context: Context, error: unknown): Response {
  const mapped = toConnectError(error);
  return context.json({ code: mapped.code, message: mapped.message }, mapped.status as 400);
}

/** A Connect request's message checked against its schema; a mismatch is Connect's `invalid_argument`. */
export function parseConnectMessage<Schema extends z.ZodType>(schema: Schema, message: unknown): z.output<Schema> {
  const parsed = schema.safeParse(message);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new ConnectError(
      'invalid_argument',
      `Invalid request: ${issue?.path.join('.') || 'message'}: ${issue?.message}`,
    );
  }
  return parsed.data;
}
