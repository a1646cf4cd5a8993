/**
 * The limits' hints in Azure dynamic sessions' terms: an Azure client names
 * its sessions by `identifier` and ends one with `DELETE session`, so /v1's
 * routes are no help to it. Status, code and headers stay the HTTP API's (the
 * Azure routes answer sandcell's JSON errors); only the words are Azure's own.
 */
import { LimitExceededError, type LimitName } from '../core/errors.js';
import { HttpError, toHttpError } from '../http/errors.js';
import type { RouteSpec } from '../http/route.js';

/** What lifts each of the server's limits, said to an Azure dynamic-sessions client. */
const LIMIT_HINTS: Record<LimitName, string> = {
  'sessions-per-key':
    'End a session you no longer need (DELETE /azure/session?identifier=…, what LangChain’s delete_session() sends) or raise --sessions-per-key.',
  'server-sessions': 'Try again later, or raise --max-sessions.',
  'queued-executions':
    'Retry once the code already running in this session has finished, or raise --max-queued-executions.',
  'executions-per-minute': 'The server option --executions-per-minute sets the limit.',
  'code-bytes': 'Upload large data as a file (files/upload, or files from 2024-10-02-preview) and read it from there.',
};

/** A limit as the HTTP API answers it, with Azure's hint; any other error unchanged (app.ts maps it). */
export function toAzureError(error: unknown): unknown {
  if (!(error instanceof LimitExceededError)) return error;
  const mapped = toHttpError(error);
  return new HttpError(mapped.status, mapped.code, `${error.message} ${LIMIT_HINTS[error.limit]}`, mapped.headers);
}

/** The route with its errors in Azure's words. */
export function withAzureErrors<P, Q, B>(spec: RouteSpec<P, Q, B>): RouteSpec<P, Q, B> {
  const { handler } = spec;
  return {
    ...spec,
    handler: async (context, input) => {
      try {
        return await handler(context, input);
      } catch (error) {
        throw toAzureError(error);
      }
    },
  };
}
