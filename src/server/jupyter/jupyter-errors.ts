/**
 * Errors in the shape Jupyter Server answers them (`{"message", "reason"}`),
 * which its clients show to users: sandcell's own errors keep their status
 * (a key's session limit is 429, the server's capacity 503) and message.
 */
import type { Context } from 'hono';
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
  return context.json({ message: mapped.message, reason: mapped.code }, mapped.status as 400, mapped.headers);
}
