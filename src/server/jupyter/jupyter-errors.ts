/**
 * Errors in the shape Jupyter Server answers them (`{"message", "reason"}`),
 * which its clients show to users: sandcell's own errors keep their status
 * (a key's session limit is 429, the server's capacity 503) and message, and
 * a limit's hint is in a Jupyter user's terms (kernels and cells), here for
 * both the REST routes and a cell the kernel refuses.
 */
import type { Context } from 'hono';
import { type DoorWords, messageFor } from '../core/error-words.js';
import { LimitExceededError } from '../core/errors.js';
import { HTTP_WORDS, toHttpError } from '../http/errors.js';

export class JupyterHttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly reason: string | null = null,
  ) {
    super(message);
  }
}

/** A kernel whose session is gone for good (deleted, or lost when it was paused): a 404, as a culled kernel is. */
export class KernelGoneError extends JupyterHttpError {
  constructor(id: string, cause?: Error) {
    super(404, cause ? `Kernel ${id} is gone: ${cause.message}` : `Kernel does not exist: ${id}`);
  }
}

/** The HTTP API's words, but what lifts each of the server's limits said to a Jupyter user (a kernel is a session). */
const JUPYTER_WORDS: DoorWords = {
  ...HTTP_WORDS,
  limitHints: {
    'sessions-per-key': 'Shut a kernel down (DELETE /api/kernels/{id}) or raise --sessions-per-key.',
    'server-sessions': 'Try again later, or raise --max-sessions.',
    'queued-executions':
      'Run the cell again once those queued on this kernel have run, or raise --max-queued-executions.',
    'executions-per-minute': 'Run the cell again then; the server option --executions-per-minute sets the limit.',
    'code-bytes': 'Split the cell, or write large data into a file in /mnt/data and read it from there.',
    'snapshot-bytes':
      'Shut down kernels you no longer need (DELETE /api/kernels/{id}): an idle one is paused to a snapshot. Or raise --snapshot-bytes-per-key.',
    'terminals-per-key': 'Close terminals you no longer need (DELETE /api/terminals/{name}).',
  },
};

/** A limit's message with Jupyter's hint; undefined for any other error. */
export function jupyterLimitText(error: unknown): string | undefined {
  return error instanceof LimitExceededError ? messageFor(error, JUPYTER_WORDS) : undefined;
}

/** The status and body Jupyter's shape gives an error (the channels socket refuses an upgrade with them too). */
export function jupyterErrorAnswer(error: unknown): {
  status: number;
  message: string;
  reason: string | null;
  headers: Record<string, string>;
} {
  if (error instanceof JupyterHttpError) {
    return { status: error.status, message: error.message, reason: error.reason, headers: {} };
  }
  const mapped = toHttpError(error, JUPYTER_WORDS);
  return { status: mapped.status, message: mapped.message, reason: mapped.code, headers: mapped.headers };
}

export function jupyterErrorResponse(context: Context, error: unknown): Response {
  const { status, message, reason, headers } = jupyterErrorAnswer(error);
  return context.json({ message, reason }, status as 400, headers);
}
