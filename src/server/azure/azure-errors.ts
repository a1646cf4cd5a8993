/**
 * The limits' hints in Azure dynamic sessions' terms: an Azure client names
 * its sessions by `identifier` and ends one with `DELETE session`, so /v1's
 * routes are no help to it. Status, code and headers stay the HTTP API's (the
 * Azure routes answer sandcell's JSON errors); only the limits' words are
 * Azure's own, the rest the HTTP API's.
 */
import { SandcellError } from '../../errors.js';
import type { DoorWords } from '../core/error-words.js';
import { HTTP_WORDS, toHttpError } from '../http/errors.js';
import type { RouteSpec } from '../http/route.js';

/** The HTTP API's words, but what lifts each of the server's limits said to an Azure dynamic-sessions client. */
const AZURE_WORDS: DoorWords = {
  ...HTTP_WORDS,
  hints: { ...HTTP_WORDS.hints, 'session-lost': 'The next request with this identifier starts a new session.' },
  limitHints: {
    'sessions-per-key':
      'End a session you no longer need (DELETE /azure/session?identifier=…, what LangChain’s delete_session() sends) or raise --sessions-per-key.',
    'server-sessions': 'Try again later, or raise --max-sessions.',
    'queued-executions':
      'Retry once the code already running in this session has finished, or raise --max-queued-executions.',
    'executions-per-minute': 'The server option --executions-per-minute sets the limit.',
    'code-bytes':
      'Upload large data as a file (files/upload, or files from 2024-10-02-preview) and read it from there.',
    'snapshot-bytes':
      'End sessions you no longer need (DELETE /azure/session?identifier=…): an idle one is paused to a snapshot. Or raise --snapshot-bytes-per-key.',
    'terminals-per-key': 'Close terminals this key no longer needs.',
  },
};

/** sandcell's errors as the HTTP API answers them, in Azure's words; any other error unchanged (app.ts maps it). */
export function toAzureError(error: unknown): unknown {
  return error instanceof SandcellError ? toHttpError(error, AZURE_WORDS) : error;
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
