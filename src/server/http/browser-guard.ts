/**
 * What a page in the user's browser may make this server do. Browsers let any
 * page send some requests to any address without asking the server first
 * (forms, images, `fetch` without custom headers), and a page whose name
 * resolves to 127.0.0.1 (DNS rebinding) is even same-origin with it. Without a
 * key to tell the owner apart, this middleware, run before every route
 * (including /mcp and the web UI), refuses both:
 *
 * - `Host` must be a loopback name or address, or a name the operator allowed
 *   (`--allowed-host`); anything else is 421. With API keys `Host` is checked
 *   only when names are allowed: every route that matters needs the key, which
 *   a rebinding page cannot read (the web UI keeps it in its own origin's storage).
 * - A request from another site — its `Origin` is not this server (nor an
 *   allowed name), or `Sec-Fetch-Site` says `cross-site`/`same-site` — is 403
 *   unless a valid key came with it. Top-level navigations (GET, HEAD) pass, so
 *   a link to the web UI still opens it; no GET creates anything. Signed links
 *   pass from any site, since what they carry is their credential, not the
 *   browser's, and pages elsewhere (a chat, another app) use them: a published
 *   output's (GET /v1/outputs/{token}), which only reads one file, an upload
 *   link's (PUT /v1/uploads/{token}), which writes only the file it names, and
 *   E2B's signed file URLs (GET or POST /files?…&signature=v1_…), which read or
 *   write the file their signature names (e2b/envd-signed-urls.ts).
 */
import type { Context, MiddlewareHandler } from 'hono';
import type { ApiKeys } from '../core/auth.js';
import { isLoopback } from '../core/options.js';
import { SIGNATURE_FORMAT, SIGNED_FILES_PATH } from '../e2b/envd-signed-urls.js';
import { HttpError } from './errors.js';

export interface BrowserGuardOptions {
  apiKeys: ApiKeys;
  /** Lower-case names (no port) that `Host` and `Origin` may carry besides loopback ones. */
  allowedHosts: string[];
  /** Called when a request proved a key, with the Hono context (to trust its connection). */
  onKeyAccepted?(context: Context): void;
  /** Called with the reason of each refusal, for metrics. */
  onRefused?(reason: 'host-not-allowed' | 'cross-site-request'): void;
}

const SAFE_NAVIGATION_METHODS = new Set(['GET', 'HEAD']);
const SIGNED_LINKS = '/v1/outputs/';
const SIGNED_UPLOADS = '/v1/uploads/';
const FOREIGN_FETCH_SITES = new Set(['cross-site', 'same-site']);

/** A signed link (see above), judged by its shape: the route checks the signature itself. */
function isSignedLink(context: Context): boolean {
  const { method, path } = context.req;
  if (path.startsWith(SIGNED_LINKS)) return SAFE_NAVIGATION_METHODS.has(method);
  if (path.startsWith(SIGNED_UPLOADS)) return method === 'PUT';
  if (path !== SIGNED_FILES_PATH || !(SAFE_NAVIGATION_METHODS.has(method) || method === 'POST')) return false;
  return SIGNATURE_FORMAT.test(context.req.query('signature') ?? '');
}

/** `host[:port]` parsed as a browser would: lower-case hostname (IPv6 in brackets) and `host` with the port. */
function parseAuthority(authority: string, scheme = 'http'): { hostname: string; host: string } | undefined {
  try {
    const url = new URL(`${scheme}://${authority}`);
    if (url.username || url.password || url.pathname !== '/' || url.search || url.hash) return undefined;
    return { hostname: url.hostname, host: url.host };
  } catch {
    return undefined;
  }
}

function parseOrigin(origin: string): { scheme: string; hostname: string; host: string } | undefined {
  try {
    const url = new URL(origin);
    if (url.protocol !== 'http:' && url.protocol !== 'https:') return undefined;
    return { scheme: url.protocol.slice(0, -1), hostname: url.hostname, host: url.host };
  } catch {
    return undefined; // "null" (sandboxed frames, file: pages, redirects) and anything else
  }
}

export function browserGuard(options: BrowserGuardOptions): MiddlewareHandler {
  const allowed = new Set(options.allowedHosts);
  const checkHost = !options.apiKeys.enabled || allowed.size > 0;
  const hostAllowed = (hostname: string) => isLoopback(hostname) || allowed.has(hostname);

  const keyProven = (context: Context): boolean => {
    if (!options.apiKeys.enabled) return false;
    const authorization = context.req.header('authorization');
    // E2B's SDKs send the key as X-API-KEY (the /e2b front door).
    const apiKeyHeader = context.req.header('api-key') ?? context.req.header('x-api-key');
    if (!authorization && !apiKeyHeader) return false;
    try {
      options.apiKeys.authenticate(authorization, apiKeyHeader);
      return true;
    } catch {
      return false;
    }
  };

  return async (context, next) => {
    const hostHeader = context.req.header('host');
    // Every browser sends Host; a request without one (HTTP/1.0 tools) cannot come from a rebinding page.
    const authority = hostHeader === undefined ? undefined : parseAuthority(hostHeader);
    if (checkHost && hostHeader !== undefined && (!authority || !hostAllowed(authority.hostname))) {
      options.onRefused?.('host-not-allowed');
      throw new HttpError(
        421,
        'host-not-allowed',
        `This server does not answer to the name ${JSON.stringify(hostHeader)}: without API keys it answers only ` +
          'localhost, 127.0.0.1 and [::1] (a page on another name could be DNS rebinding). If a reverse proxy ' +
          'forwards this name, allow it with --allowed-host (SANDCELL_ALLOWED_HOSTS).',
      );
    }
    if (keyProven(context)) {
      options.onKeyAccepted?.(context);
      return next();
    }
    const origin = context.req.header('origin');
    const fetchSite = context.req.header('sec-fetch-site')?.toLowerCase();
    const navigation =
      (SAFE_NAVIGATION_METHODS.has(context.req.method) && context.req.header('sec-fetch-mode') === 'navigate') ||
      isSignedLink(context);
    let foreign = fetchSite !== undefined && FOREIGN_FETCH_SITES.has(fetchSite);
    if (origin !== undefined) {
      const from = parseOrigin(origin);
      // The web UI's own requests carry its origin, which is the Host it was loaded from (default ports
      // compare under the origin's scheme: a TLS proxy's page is https://name, its Host plain `name`).
      const target = from && hostHeader !== undefined ? parseAuthority(hostHeader, from.scheme) : undefined;
      const sameOrigin = from !== undefined && target !== undefined && from.host === target.host;
      foreign ||= !sameOrigin && !(from !== undefined && allowed.has(from.hostname));
    }
    if (foreign && !navigation) {
      options.onRefused?.('cross-site-request');
      throw new HttpError(
        403,
        'cross-site-request',
        `Refused a request from another site (Origin ${origin === undefined ? 'not sent' : JSON.stringify(origin)}` +
          `${fetchSite ? `, Sec-Fetch-Site ${fetchSite}` : ''}): a page elsewhere must not drive this server. ` +
          'Use the web UI served here, a client outside the browser, or send an API key (Authorization: Bearer).',
      );
    }
    return next();
  };
}
