/**
 * The code interpreter of E2B sandboxes (`E2b-Sandbox-Port: 49999`): `/execute`
 * and `/contexts*`. The sandbox and its tokens are checked by the dispatcher
 * (routes.ts) before this is called; `c.req.path` still starts with `/e2b`.
 * Not served yet: every request answers 501 in E2B's error shape.
 */
import type { Context } from 'hono';
import type { ServerContext } from '../context.js';
import { E2bError, e2bErrorResponse } from './errors.js';
import type { E2bSandbox } from './sandbox-table.js';

export async function handleInterpreter(c: Context, _sandbox: E2bSandbox, _server: ServerContext): Promise<Response> {
  return e2bErrorResponse(c, new E2bError(501, 'The code interpreter is not served yet by this server.'));
}
