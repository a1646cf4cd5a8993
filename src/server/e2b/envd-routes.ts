/**
 * envd, the agent inside every E2B sandbox (`E2b-Sandbox-Port: 49983`): its
 * plain HTTP routes (`/health`, `/files`) and its Connect-RPC services
 * (`/filesystem.Filesystem/*`, `/process.Process/*`, JSON codec), served from
 * the sandbox's sandcell session. The dispatcher (routes.ts) has checked the
 * sandbox's `X-Access-Token`; `path` is below /e2b.
 */
import type { Context } from 'hono';
import type { ServerContext } from '../core/context.js';
import { encodeEndStream, parseMessage } from './connect-envelope.js';
import { downloadFile, uploadFiles } from './envd-files.js';
import { filesystemMethods, type UnaryMethod } from './envd-filesystem.js';
import { processMethods, processStreams } from './envd-process.js';
import { watchDir } from './envd-watch.js';
import { watcherMethods } from './envd-watchers.js';
import { ConnectError, connectErrorResponse, E2bError, toConnectError } from './errors.js';
import type { E2bSandbox } from './sandbox-row.js';

/** The account E2B's SDKs name by default, which is the sandbox's own user here. */
const E2B_USER = 'user';

const SERVICES: Record<string, Record<string, UnaryMethod>> = {
  '/filesystem.Filesystem/': { ...filesystemMethods, ...watcherMethods },
  '/process.Process/': processMethods,
};

/** Whether `path` is a Connect-RPC method (its errors then answer in Connect's shape). */
export const isConnectPath = (path: string): boolean =>
  Object.keys(SERVICES).some((service) => path.startsWith(service));

async function unary(context: Context, sandbox: E2bSandbox, server: ServerContext, method: UnaryMethod) {
  const type = context.req.header('content-type') ?? '';
  if (!/^application\/json\b/i.test(type)) {
    throw new ConnectError('unimplemented', `Only the JSON codec is served (application/json), not ${type}.`);
  }
  const answer = await method(sandbox, server, parseMessage(await context.req.text()));
  return context.json(answer, 200);
}

/** A stream that failed before it began: 200 and an end-stream envelope with the error, so its message reaches the client. */
function streamError(context: Context, error: unknown): Response {
  return context.body(new Uint8Array(encodeEndStream(toConnectError(error))), 200, {
    'content-type': 'application/connect+json',
  });
}

/** The account a request asks to act as (envd's `Authorization: Basic base64("USER:")`), if it names one. */
function askedUser(context: Context): string | undefined {
  const match = /^Basic\s+([A-Za-z0-9+/=]{1,512})$/i.exec(context.req.header('authorization') ?? '');
  if (!match?.[1]) return undefined;
  const decoded = Buffer.from(match[1], 'base64').toString('utf8');
  const user = decoded.includes(':') ? decoded.slice(0, decoded.indexOf(':')) : decoded;
  return user === '' ? undefined : user;
}

/**
 * Everything in a sandcell sandbox runs as its one unprivileged user, which E2B's SDKs call `user`
 * (their default). A request for another account (`user: 'root'`) is refused rather than run as
 * someone it did not ask for.
 */
function otherUserRefusal(user: string): string {
  return `This sandbox runs everything as its one user (\`user\`), never as ${JSON.stringify(user.slice(0, 64))}: there is no root or other account here. Leave \`user\` unset; for what needs root at build time, build an environment (sandcell env build).`;
}

export async function handleEnvd(
  context: Context,
  sandbox: E2bSandbox,
  server: ServerContext,
  path: string,
): Promise<Response> {
  const method = context.req.method;
  if (path === '/health' && method === 'GET') return context.body(null, 204);
  const user = askedUser(context);
  const otherUser = user !== undefined && user !== E2B_USER ? otherUserRefusal(user) : undefined;
  if (otherUser && path === '/files') throw new E2bError(403, otherUser);
  if (path === '/files' && method === 'GET') return downloadFile(context, sandbox);
  if (path === '/files' && method === 'POST') return uploadFiles(context, sandbox, server);
  const service = Object.keys(SERVICES).find((prefix) => path.startsWith(prefix));
  if (!service) throw new E2bError(404, `No envd route ${method} ${path} on this server.`);
  const name = path.slice(service.length);
  const stream = service === '/process.Process/' ? processStreams[name] : name === 'WatchDir' ? watchDir : undefined;
  if (stream) {
    try {
      if (otherUser) throw new ConnectError('permission_denied', otherUser);
      return await stream(context, sandbox, server);
    } catch (error) {
      return streamError(context, error);
    }
  }
  const handler = SERVICES[service]?.[name];
  try {
    if (method !== 'POST') throw new ConnectError('unimplemented', 'Connect methods are called with POST.');
    if (otherUser) throw new ConnectError('permission_denied', otherUser);
    if (!handler) throw new ConnectError('unimplemented', `${path} is not served by this server.`);
    return await unary(context, sandbox, server, handler);
  } catch (error) {
    return connectErrorResponse(context, error);
  }
}
