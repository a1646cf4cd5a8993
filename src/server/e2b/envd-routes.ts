/**
 * envd, the agent inside every E2B sandbox (`E2b-Sandbox-Port: 49983`): its
 * plain HTTP routes (`/health`, `/files`) and its Connect-RPC services
 * (`/filesystem.Filesystem/*`, `/process.Process/*`), served from the
 * sandbox's sandcell session. The dispatcher (routes.ts) has checked the
 * sandbox's `X-Access-Token`; `path` is below /e2b.
 */
import type { Context } from 'hono';
import type { ServerContext } from '../context.js';
import { ConnectError, E2bError } from './errors.js';
import type { E2bSandbox } from './sandbox-table.js';

const CONNECT_SERVICES = ['/filesystem.Filesystem/', '/process.Process/'];

/** Whether `path` is a Connect-RPC method (its errors then answer in Connect's shape). */
export const isConnectPath = (path: string): boolean => CONNECT_SERVICES.some((service) => path.startsWith(service));

export async function handleEnvd(
  context: Context,
  _sandbox: E2bSandbox,
  _server: ServerContext,
  path: string,
): Promise<Response> {
  if (path === '/health' && context.req.method === 'GET') return context.body(null, 204);
  if (isConnectPath(path)) throw new ConnectError('unimplemented', `${path} is not served by this server.`);
  throw new E2bError(404, `No envd route ${context.req.method} ${path}.`);
}
