/**
 * Who may reach a port, and which session serves it: what the port door asks before it proxies.
 *
 * - An E2B sandbox is found as its own traffic finds it (a paused one is 409 unless its lifecycle
 *   lets traffic resume it; one the server paused while idle is resumed). Anyone may reach it when
 *   it allows public traffic (E2B's default), else a request that carries its traffic token as
 *   `e2b-traffic-access-token`.
 * - Any other session (/v1, a conversation's) is private: a request with its owner's key, or with a
 *   preview token for that session and port (`POST /v1/sessions/{id}/ports/{port}/preview`): in the
 *   query as `_sandcell_preview`, which a navigation trades for a cookie of that host alone (so an
 *   iframe's later requests carry it), or in that cookie. On a server without keys, which answers
 *   this machine alone, a client that is not a browser (no `Origin`, no `Sec-Fetch-Site`) or a
 *   navigation the user made (`Sec-Fetch-Site: none`) needs neither: as the API, a page of another
 *   site must not reach it. Neither the key nor the token reaches the app. A session of another
 *   key is not found, as one that does not exist.
 */
import type { IncomingMessage } from 'node:http';
import type { Owner } from '../core/auth.js';
import type { ServerContext } from '../core/context.js';
import type { ManagedSession } from '../core/managed-session.js';
import { E2B_PREFIX } from '../e2b/routes.js';
import { type SandboxRow, tokenMatches } from '../e2b/sandbox-row.js';
import type { SandboxTable } from '../e2b/sandbox-table.js';
import type { PortAddress } from './port-address.js';
import type { PortTarget } from './port-proxy.js';

export const PREVIEW_PARAMETER = '_sandcell_preview';
export const PREVIEW_COOKIE = 'sandcell_preview';
const PREVIEW_TOKEN = /^[A-Za-z0-9_-]{1,2048}\.[A-Za-z0-9_-]{43}$/;

/** An answer of the door's own, in E2B's proxy's shape: `sandboxId`, `message`, `code`. */
export class PortAnswer extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly fields: Record<string, unknown> = {},
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
  }
}

const notFound = (sandboxId: string) =>
  new PortAnswer(404, 'The sandbox was not found (a session of this server answers with its key or a preview link)', {
    sandboxId,
  });

export interface ResolvedPort {
  target: PortTarget;
  /** The key that owns the session: its requests to ports are bounded together. */
  ownerId: string;
  /** The path the app is asked for (the preview parameter and E2B's prefix taken out). */
  path: string;
  /** A preview token that came in the query: a navigation is sent on without it, holding it as a cookie. */
  previewFromQuery?: string;
}

export class PortAccess {
  constructor(
    private readonly server: ServerContext,
    private readonly sandboxes: SandboxTable,
  ) {}

  async resolve(request: IncomingMessage, address: PortAddress): Promise<ResolvedPort> {
    const { sandboxId } = address;
    if (sandboxId === '') throw notFound(sandboxId);
    const held = this.server.registry.heldSession(sandboxId);
    if (held && held.source !== 'e2b') return this.sessionPort(request, address, held);
    const row = await this.sandboxes.forTraffic(sandboxId);
    if (row) return this.sandboxPort(request, address, row);
    // A paused session of the key's is resumed by its owner's request (never by a token alone).
    const owner = this.keyOwner(request);
    const entry = owner && (await this.server.registry.open(owner, sandboxId).catch(() => undefined));
    if (entry && entry.source !== 'e2b') return this.sessionPort(request, address, entry);
    throw notFound(sandboxId);
  }

  private async sandboxPort(request: IncomingMessage, address: PortAddress, row: SandboxRow): Promise<ResolvedPort> {
    const { sandboxId, port } = address;
    if (!row.traffic.public) {
      const token = request.headers['e2b-traffic-access-token'];
      if (typeof token !== 'string' || !tokenMatches(token, row.trafficAccessToken)) {
        throw new PortAnswer(403, 'This sandbox accepts traffic only with its traffic access token', { sandboxId });
      }
    }
    let sandbox: Awaited<ReturnType<SandboxTable['serve']>>;
    try {
      sandbox = await this.sandboxes.serve(row);
    } catch (error) {
      const status = (error as { status?: unknown }).status;
      if (status === 409) throw new PortAnswer(409, 'The sandbox is paused', { sandboxId, canAutoResume: false });
      if (status === 502) throw notFound(sandboxId);
      throw error;
    }
    const mask = row.traffic.maskRequestHost;
    // biome-ignore lint/suspicious/noTemplateCurlyInString: E2B's placeholder, replaced here
    const placeholder = '${PORT}';
    return {
      ownerId: row.owner.id,
      target: {
        session: sandbox.entry.session,
        port,
        tls: row.traffic.httpsPorts.includes(port),
        ...(mask !== undefined ? { host: mask.replaceAll(placeholder, String(port)) } : {}),
      },
      path: pathOf(request, address),
    };
  }

  private async sessionPort(
    request: IncomingMessage,
    address: PortAddress,
    entry: ManagedSession,
  ): Promise<ResolvedPort> {
    const { port } = address;
    // The query alone, read as a browser sends it: the path is the app's, whatever it holds (a backslash).
    const asked = request.url ?? '/';
    const query = asked.includes('?') ? asked.slice(asked.indexOf('?') + 1) : '';
    const fromQuery = new URLSearchParams(query).get(PREVIEW_PARAMETER) ?? undefined;
    const fromCookie = previewCookie(request.headers.cookie);
    const target: PortTarget = { session: entry.session, port, tls: false, hidden: { cookie: PREVIEW_COOKIE } };
    const owner = this.keyOwner(request);
    let allowed = owner !== undefined && owner.id === entry.owner.id;
    if (allowed) target.hidden = { ...target.hidden, authorization: true };
    // Only a token that proves itself is taken, and only such a one is made a cookie.
    const proven = async (token: string | undefined) => {
      if (token === undefined || !PREVIEW_TOKEN.test(token)) return false;
      const claims = await this.server.registry.files.previewTarget(token);
      return claims?.sessionId === entry.id && claims.port === port && claims.ownerId === entry.owner.id;
    };
    const queryProven = await proven(fromQuery);
    allowed ||= queryProven || (await proven(fromCookie));
    if (!allowed && !this.server.apiKeys.enabled && !fromAnotherSite(request)) allowed = true;
    if (!allowed) throw notFound(address.sandboxId);
    return {
      target,
      ownerId: entry.owner.id,
      path: pathOf(request, address),
      ...(queryProven && fromQuery !== undefined ? { previewFromQuery: fromQuery } : {}),
    };
  }

  /** The owner of the server's key the request carries, if it carries one. */
  private keyOwner(request: IncomingMessage): Owner | undefined {
    if (!this.server.apiKeys.enabled) return undefined;
    const { authorization } = request.headers;
    const header = request.headers['x-api-key'];
    if (authorization === undefined && header === undefined) return undefined;
    try {
      return this.server.apiKeys.authenticate(authorization, typeof header === 'string' ? header : undefined);
    } catch {
      return undefined;
    }
  }
}

/** Whether a browser sent this for a page (a frame, a script) rather than for the user's own navigation. */
function fromAnotherSite(request: IncomingMessage): boolean {
  const site = request.headers['sec-fetch-site'];
  if (site !== undefined) return site !== 'none' && site !== 'same-origin';
  return request.headers.origin !== undefined;
}

function previewCookie(header: string | undefined): string | undefined {
  for (const part of (header ?? '').split(';')) {
    const [name, ...value] = part.trim().split('=');
    if (name === PREVIEW_COOKIE) return value.join('=');
  }
  return undefined;
}

/**
 * The app's path: as asked, without the preview parameter; by E2B's headers, under the E2B door's
 * prefix when sent there (its SDKs' base URL is `…/e2b`).
 */
function pathOf(request: IncomingMessage, address: PortAddress): string {
  let target = request.url ?? '/';
  if (!target.startsWith('/')) target = `/${target}`;
  if (address.via === 'headers' && /^\/e2b(?=[/?]|$)/.test(target)) {
    target = target.slice(E2B_PREFIX.length);
    if (!target.startsWith('/')) target = `/${target}`;
  }
  const query = target.indexOf('?');
  if (query < 0 || !target.includes(PREVIEW_PARAMETER)) return target;
  const kept = target
    .slice(query + 1)
    .split('&')
    .filter((pair) => pair.split('=', 1)[0] !== PREVIEW_PARAMETER);
  return `${target.slice(0, query)}${kept.length > 0 ? `?${kept.join('&')}` : ''}`;
}
