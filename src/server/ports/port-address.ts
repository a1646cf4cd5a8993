/**
 * Which port of which sandbox a request is for, if any: by its host name, `PORT-ID.DOMAIN` (what
 * E2B's `getHost(port)` gives from the `domain` the E2B door answers), or by the headers E2B's SDKs
 * send to a stable host, `E2b-Sandbox-Id` and `E2b-Sandbox-Port` (a port other than envd's and the
 * code interpreter's, which are the E2B door's own). DOMAIN is `--sandbox-domain`, else
 * `localhost:PORT` of the port the request came to: browsers resolve `*.localhost` to loopback, so
 * a server on this machine needs no DNS.
 */
import type { IncomingMessage } from 'node:http';

/** The E2B door's own ports (envd, the code interpreter): never proxied. */
const E2B_DOOR_PORTS = new Set([49_983, 49_999]);
/** `PORT-ID`: a port of up to five digits, an id as a DNS label allows (lower case: names are case-blind). */
const LABEL = /^([1-9][0-9]{0,4})-([a-z0-9][a-z0-9-]{0,62})$/;
const PORT_HEADER = /^[1-9][0-9]{0,4}$/;
const SANDBOX_ID = /^[a-z0-9][a-z0-9-]{0,62}$/;

/**
 * The requests the port door claimed, with their address: what the cluster's forwarder reads to
 * send one to the node that holds its sandbox (http/forwarding.ts), like any request for a session.
 */
export const claimedPorts = new WeakMap<IncomingMessage, PortAddress>();

export interface PortAddress {
  sandboxId: string;
  port: number;
  /** By host name (a browser's, usually), or by E2B's headers on the server's own host. */
  via: 'host' | 'headers';
}

/** The parent domain of the sandboxes' port names for a request that came to `localPort`. */
export function sandboxDomain(configured: string | undefined, localPort: number | undefined): string {
  return configured ?? `localhost${localPort ? `:${localPort}` : ''}`;
}

/** The host (with a port when the domain has one) that reaches `port` of sandbox `sandboxId`. */
export function portHost(port: number, sandboxId: string, domain: string): string {
  return `${port}-${sandboxId}.${domain}`;
}

/**
 * The URL of `port` in session `sessionId`, or null when its id cannot be part of a host name
 * (upper case or `_`, which a /v1 client may choose: such a session's ports have no URL).
 */
export function portUrl(scheme: 'http' | 'https', domain: string, port: number, sessionId: string): string | null {
  return SANDBOX_ID.test(sessionId) ? `${scheme}://${portHost(port, sessionId, domain)}/` : null;
}

/** The port and sandbox a `Host` names under `domain`; a domain without a port matches any port. */
export function parsePortHost(
  host: string | undefined,
  domain: string,
): { port: number; sandboxId: string } | undefined {
  if (host === undefined || host.length > 300) return undefined;
  const lower = host.toLowerCase();
  const name = domain.includes(':') ? lower : lower.replace(/:[0-9]{1,5}$/, '');
  if (!name.endsWith(`.${domain}`)) return undefined;
  const match = LABEL.exec(name.slice(0, -domain.length - 1));
  if (!match?.[1] || !match[2]) return undefined;
  const port = Number(match[1]);
  return port <= 65_535 ? { port, sandboxId: match[2] } : undefined;
}

/** The port a request is for, or undefined when it is the server's own (the API, the web UI, the E2B door). */
export function portAddressOf(request: IncomingMessage, configuredDomain: string | undefined): PortAddress | undefined {
  const domain = sandboxDomain(configuredDomain, request.socket.localPort);
  const byHost = parsePortHost(request.headers.host, domain);
  if (byHost) return { ...byHost, via: 'host' };
  const id = request.headers['e2b-sandbox-id'];
  const port = request.headers['e2b-sandbox-port'];
  if (typeof id !== 'string' || typeof port !== 'string' || !PORT_HEADER.test(port)) return undefined;
  const number = Number(port);
  if (number > 65_535 || E2B_DOOR_PORTS.has(number)) return undefined;
  // A malformed id is still port traffic (answered 404), not a request for the E2B door.
  return { sandboxId: SANDBOX_ID.test(id) ? id : '', port: number, via: 'headers' };
}
