/**
 * A secret bound to a destination: a header the gate adds to every request for one host, so the
 * key never exists inside the sandbox (over HTTPS the gate ends TLS for that host; intercept.ts).
 * Checked here for every door (library, CLI, server, /v1): the host must be one the allow-list
 * covers, the header one that cannot frame or route a request, and the value one line. Messages
 * name the host and header, never the value.
 */
import { InvalidInputError } from '../errors.js';
import { HOST_LOOPBACK_NAME, isLoopbackName } from './host-loopback.js';
import { isHostName, type NetworkPolicy, portsForName } from './policy.js';

export interface NetworkSecret {
  /** The exact host name the header is added for, e.g. `api.example.com` (no wildcard, no port). */
  host: string;
  /** The header, e.g. `Authorization`; a header of that name from the sandbox is replaced. */
  header: string;
  /** The header's value, e.g. `Bearer sk-…`. It is never logged, never in an error, never answered. */
  value: string;
}

export const MAX_NETWORK_SECRETS = 16;
export const MAX_SECRET_VALUE_BYTES = 8 * 1024;
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,100}$/;
/** Headers that frame or route a request, or belong to the hop to the gate: never set by a secret. */
const RESERVED_HEADER = /^(host|content-length|transfer-encoding|connection|keep-alive|upgrade|te|trailer|proxy-.*)$/i;

/** Checks one secret's shape; returns it with the host lower-cased. */
export function checkNetworkSecret(secret: unknown): NetworkSecret {
  if (typeof secret !== 'object' || secret === null)
    throw new InvalidInputError('A network secret is { host, header, value }.');
  const { host, header, value } = secret as Record<string, unknown>;
  if (typeof host !== 'string' || !isHostName(host.toLowerCase()) || /^[0-9.]+$/.test(host)) {
    throw new InvalidInputError(
      `A network secret's host ${JSON.stringify(host)} is not a host name (no wildcard, no port).`,
    );
  }
  if (typeof header !== 'string' || !HEADER_NAME.test(header) || RESERVED_HEADER.test(header)) {
    throw new InvalidInputError(`A network secret's header ${JSON.stringify(header)} cannot be set by the gate.`);
  }
  if (
    typeof value !== 'string' ||
    value.length === 0 ||
    Buffer.byteLength(value) > MAX_SECRET_VALUE_BYTES ||
    /[\0\r\n]/.test(value)
  ) {
    throw new InvalidInputError(
      `The network secret for ${host} (${header}) must be one line of 1 to ${MAX_SECRET_VALUE_BYTES} bytes.`,
    );
  }
  return { host: host.toLowerCase(), header, value };
}

/** Every secret checked, each host covered by a name rule of `policy`, no host and header twice. */
export function checkNetworkSecrets(secrets: unknown, policy: NetworkPolicy): NetworkSecret[] {
  if (!Array.isArray(secrets)) throw new InvalidInputError('`network.secrets` is a list of { host, header, value }.');
  if (secrets.length > MAX_NETWORK_SECRETS) {
    throw new InvalidInputError(`\`network.secrets\` holds ${secrets.length} secrets; at most ${MAX_NETWORK_SECRETS}.`);
  }
  const seen = new Set<string>();
  return secrets.map((entry) => {
    const secret = checkNetworkSecret(entry);
    if (portsForName(policy, secret.host).length === 0) {
      throw new InvalidInputError(
        `The network secret for ${secret.host} names a host the allow-list does not cover; ${coverWith(secret.host)}.`,
      );
    }
    const key = `${secret.host} ${secret.header.toLowerCase()}`;
    if (seen.has(key)) throw new InvalidInputError(`Two network secrets set ${secret.header} for ${secret.host}.`);
    seen.add(key);
    return secret;
  });
}

/**
 * The secrets a session's gate uses: the session's own, then the operator's for hosts the session's
 * allow-list covers. Where both set one header for one host, the operator's wins.
 */
export function mergeSecrets(
  own: readonly NetworkSecret[],
  operator: readonly NetworkSecret[],
  policy: NetworkPolicy,
): NetworkSecret[] {
  const byKey = new Map<string, NetworkSecret>();
  for (const secret of own) byKey.set(`${secret.host} ${secret.header.toLowerCase()}`, secret);
  for (const secret of operator) {
    if (portsForName(policy, secret.host).length > 0)
      byKey.set(`${secret.host} ${secret.header.toLowerCase()}`, secret);
  }
  return [...byKey.values()];
}

/** The rule that covers a secret's host: this machine's loopback only as host.sandcell.internal with its port. */
function coverWith(host: string): string {
  if (host === HOST_LOOPBACK_NAME) return `add ${HOST_LOOPBACK_NAME}:PORT (the service's port) to \`allow\``;
  if (isLoopbackName(host)) {
    return `${host} is the sandbox itself: for a service on this machine, name ${HOST_LOOPBACK_NAME} in the secret and add ${HOST_LOOPBACK_NAME}:PORT to \`allow\``;
  }
  return `add ${host} to \`allow\``;
}
