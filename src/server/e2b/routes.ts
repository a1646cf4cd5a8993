/**
 * The E2B front door, mounted under /e2b, so the unmodified E2B SDKs work with
 * `E2B_API_URL` and `E2B_SANDBOX_URL` set to `http://host:port/e2b`. One port
 * serves everything; the SDK says which service it means with headers:
 *
 * - no `E2b-Sandbox-Port`: the control plane (the API key in `X-API-KEY`);
 * - `E2b-Sandbox-Port: 49983`: envd (files, filesystem, processes), which
 *   must carry the sandbox's `X-Access-Token`;
 * - `E2b-Sandbox-Port: 49999`: the code interpreter, whose requests carry
 *   `E2B-Traffic-Access-Token` (and `/execute` also `X-Access-Token`; the
 *   `/contexts*` calls do not).
 *
 * Sandbox traffic names its sandbox in `E2b-Sandbox-Id` and carries no API key:
 * the tokens, returned only to whoever created or connected to the sandbox with
 * its key, are what admit it. A sandbox that does not exist (killed, expired)
 * answers 502, as E2B's proxy does, which the SDK reads as "the sandbox timed out";
 * a paused one answers 409 (E2B's "The sandbox is paused") unless it was created
 * with `autoResume`, whose traffic resumes it; one the server paused while idle
 * is resumed by its traffic, its clients never told.
 *
 * One exception to the prefix: the SDK's signed file URLs (`downloadUrl`, `uploadUrl`) are at the
 * server's root, `/files?…&signature=…`, where it makes them (envd-signed-urls.ts).
 */
import type { Context, Hono } from 'hono';
import type { Owner } from '../core/auth.js';
import type { ServerContext } from '../core/context.js';
import { limitBody } from '../http/body-limit.js';
import { HttpError } from '../http/errors.js';
import { relayed } from '../http/relay.js';
import { connectStreamErrorResponse, isStreamingCall } from './connect-envelope.js';
import { controlPlane } from './control-plane.js';
import { handleVolumeContent, VOLUME_CONTENT_PATH } from './control-volumes.js';
import { downloadFile, uploadFiles } from './envd-files.js';
import { handleEnvd, isConnectPath } from './envd-routes.js';
import { SIGNED_FILES_PATH, sandboxOfSignedLink } from './envd-signed-urls.js';
import { connectErrorResponse, E2bError, e2bErrorResponse } from './errors.js';
import { handleInterpreter } from './interpreter-routes.js';
import { type E2bSandbox, type SandboxRow, tokenMatches } from './sandbox-row.js';
import { SandboxTable } from './sandbox-table.js';

export const E2B_PREFIX = '/e2b';
export const ENVD_PORT = '49983';
export const INTERPRETER_PORT = '49999';

/** Sandbox traffic to an id that has no sandbox: E2B's proxy answers 502. */
const SANDBOX_GONE = 502;
const SANDBOX_ID = /^[a-z0-9]{1,64}$/;

/** The code interpreter accepts either of the sandbox's tokens, and refuses any wrong one presented. */
function interpreterTokensMatch(context: Context, sandbox: SandboxRow): boolean {
  const traffic = context.req.header('e2b-traffic-access-token');
  const access = context.req.header('x-access-token');
  if (traffic === undefined && access === undefined) return false;
  return (
    (traffic === undefined || tokenMatches(traffic, sandbox.trafficAccessToken)) &&
    (access === undefined || tokenMatches(access, sandbox.envdAccessToken))
  );
}

/**
 * The owners of the server's keys (the one local owner without keys): whose paused sandboxes a
 * restarted server looks up, since sandbox traffic names no key. Each key's owner is what
 * authenticating with it gives.
 */
function keyOwners(server: ServerContext): Owner[] {
  if (!server.apiKeys.enabled) return [server.apiKeys.authenticate(undefined)];
  return server.options.apiKeys.map((key) => {
    const separator = key.indexOf(':');
    return server.apiKeys.authenticate(undefined, separator >= 0 ? key.slice(separator + 1) : key);
  });
}

export function mountE2bRoutes(app: Hono, server: ServerContext): SandboxTable {
  const owners = keyOwners(server);
  const table = new SandboxTable({ registry: server.registry, logger: server.logger, owners: () => owners });
  const control = controlPlane(server, table);
  const { limits } = server.options;
  const tooLarge = (kind: 'request' | 'upload') => (): never => {
    server.metrics.rejected.inc({ reason: `${kind}-too-large` });
    const limit = kind === 'upload' ? limits.maxUploadBytes : limits.maxRequestBytes;
    throw new E2bError(413, `The request body is larger than this server accepts (${limit} bytes).`);
  };
  const limitRequest = limitBody(limits.maxRequestBytes, tooLarge('request'));
  const limitUpload = limitBody(limits.maxUploadBytes, tooLarge('upload'));
  const limitStreamedUpload = limitBody(limits.maxUploadBytes, tooLarge('upload'), { count: false });

  /** Runs `handler` behind a body limit (Hono's counting limit throws while the handler reads). */
  const limited = async (context: Context, upload: boolean, handler: () => Promise<Response>): Promise<Response> => {
    let response: Response | undefined;
    await (upload ? limitUpload : limitRequest)(context, async () => {
      response = await handler();
    });
    return response ?? e2bErrorResponse(context, new E2bError(500, 'No answer.'));
  };

  /**
   * The sandbox that traffic names, once its token checks: a paused one answers 409 unless its
   * lifecycle lets its traffic resume it; one the server paused while idle is resumed.
   */
  const sandboxFor = async (context: Context, check: (sandbox: SandboxRow) => boolean): Promise<E2bSandbox> => {
    const id = context.req.header('e2b-sandbox-id');
    const row = id === undefined || !SANDBOX_ID.test(id) ? undefined : await table.forTraffic(id);
    if (!row)
      throw new E2bError(SANDBOX_GONE, `The sandbox ${id?.slice(0, 64) ?? '(no E2b-Sandbox-Id)'} was not found.`);
    if (!check(row)) throw new E2bError(401, 'Missing or invalid sandbox access token.');
    return table.serve(row);
  };

  const authenticate = (context: Context) => {
    try {
      return server.apiKeys.authenticate(context.req.header('authorization'), context.req.header('x-api-key'));
    } catch (error) {
      if (error instanceof HttpError && error.status === 401) {
        throw new E2bError(401, 'Invalid API key: set E2B_API_KEY to a key this server accepts (--api-key).');
      }
      throw error;
    }
  };

  /**
   * E2B's signed file URLs (envd-signed-urls.ts), at the server's root where the SDK makes them, and
   * only with a `signature`: anything else at /files is answered as before (the web UI, or a 404).
   * They are served as envd's /files is, under the same limits; a sandbox its client paused is not
   * resumed by its links (409, unless created with autoResume, as for all its traffic): E2B's links
   * too need a running sandbox. One the server paused while idle is resumed: to its client it runs.
   */
  app.on(['GET', 'POST'], SIGNED_FILES_PATH, async (context, next) => {
    if (context.req.query('signature') === undefined) return next();
    const upload = context.req.method === 'POST';
    try {
      const row = await sandboxOfSignedLink(context, table, upload ? 'write' : 'read');
      const sandbox = await table.serve(row);
      return await limited(context, upload, () =>
        upload ? uploadFiles(context, sandbox, server, { pathOnly: true }) : downloadFile(context, sandbox),
      );
    } catch (error) {
      return e2bErrorResponse(context, error);
    }
  });

  app.all(`${E2B_PREFIX}/*`, async (context) => {
    const port = context.req.header('e2b-sandbox-port');
    // A base URL set with a trailing slash makes the SDKs send `/e2b//path`.
    const path = context.req.path.slice(E2B_PREFIX.length).replace(/^\/+/, '/');
    const connect = port === ENVD_PORT && isConnectPath(path);
    try {
      const volumeContent = port === undefined ? VOLUME_CONTENT_PATH.exec(path) : null;
      if (volumeContent) {
        // The volume's own token opens its content, without a key (the SDK sends it as a Bearer token).
        const keyOwner = () => {
          const bearer = context.req.header('authorization');
          return bearer?.startsWith('Bearer svt_') && context.req.header('x-api-key') === undefined
            ? undefined
            : authenticate(context);
        };
        if (context.req.method !== 'PUT') {
          return await limited(context, false, () => handleVolumeContent(context, server, volumeContent, keyOwner));
        }
        // A file streams to the volume, counted there against the upload limit (and held to the quota).
        let response: Response | undefined;
        await limitStreamedUpload(context, async () => {
          response = await handleVolumeContent(context, server, volumeContent, keyOwner, limits.maxUploadBytes);
        });
        return response ?? e2bErrorResponse(context, new E2bError(500, 'No answer.'));
      }
      if (port === undefined) {
        const owner = authenticate(context);
        return await limited(context, false, () => control(context, owner, path));
      }
      if (port === ENVD_PORT) {
        const sandbox = await sandboxFor(context, (candidate) =>
          tokenMatches(context.req.header('x-access-token'), candidate.envdAccessToken),
        );
        const upload = path === '/files' && context.req.method === 'POST';
        return await limited(context, upload, () => handleEnvd(context, sandbox, server, path));
      }
      if (port === INTERPRETER_PORT) {
        const sandbox = await sandboxFor(context, (candidate) => interpreterTokensMatch(context, candidate));
        return await limited(context, false, () => handleInterpreter(context, sandbox, server));
      }
      // Another port number is the port door's (ports/port-door.ts), before this route: this one is none.
      throw new E2bError(SANDBOX_GONE, `E2b-Sandbox-Port ${JSON.stringify(port.slice(0, 16))} is not a port.`);
    } catch (error) {
      // A sandbox that mounts volumes another node keeps starts (or resumes) there: its answer is this one.
      const there = await relayed(context, error, server.cluster?.node);
      if (there) return there;
      if (!connect) return e2bErrorResponse(context, error);
      // A streaming call's refusal is its end of stream (Connect's framing): a status alone loses its message.
      return isStreamingCall(context) ? connectStreamErrorResponse(error) : connectErrorResponse(context, error);
    }
  });
  return table;
}
