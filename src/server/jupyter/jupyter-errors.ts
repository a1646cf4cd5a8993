/**
 * Errors in the shape Jupyter Server answers them (`{"message", "reason"}`),
 * which its clients show to users: sandcell's own errors keep their status
 * (a key's session limit is 429, the server's capacity 503) and message.
 */
import type { Context } from 'hono';
import { LimitExceededError } from '../core-errors.js';
import { toHttpError } from '../errors.js';

export class JupyterHttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly reason: string | null = null,
  ) {
    super(message);
  }
}

export function jupyterErrorResponse(context: Context, error: unknown): Response {
  if (error instanceof JupyterHttpError) {
    return context.json({ message: error.message, reason: error.reason }, error.status as 400);
  }
  const mapped = toHttpError(error);
  // The generic hint names /v1 routes; a Jupyter user frees a session by shutting a kernel down.
  const message =
    error instanceof LimitExceededError && error.limit === 'sessions-per-key'
      ? `${error.message} Shut a kernel down (DELETE /api/kernels/{id}) or raise --sessions-per-key.`
      : mapped.message;
  return context.json({ message, reason: mapped.code }, mapped.status as 400, mapped.headers);
}
