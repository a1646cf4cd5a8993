/**
 * The gate's decision on a destination, made on addresses it resolved itself: the name must be
 * allowed on that port, and every address it resolves to must be public or inside a CIDR rule.
 * The caller connects to the returned addresses, never to the name, so a second lookup (DNS
 * rebinding) cannot send the connection somewhere that was not checked.
 */
import { lookup } from 'node:dns/promises';
import { classifyAddress, currentHostAddresses } from './address-class.js';
import type { GateResolver } from './gate-types.js';
import { cidrRuleFor, type NetworkPolicy, nameRuleFor, portsForName } from './policy.js';
import { GateRefusal } from './refusal.js';
import type { Destination } from './request-target.js';

export const resolveWithSystem: GateResolver = async (hostname) =>
  (await lookup(hostname, { all: true, verbatim: true })).map((entry) => entry.address);

/** Resolved names with more addresses than this are cut (every one kept is still checked). */
const MAX_ADDRESSES = 32;

export async function checkDestination(
  policy: NetworkPolicy,
  destination: Destination,
  resolve: GateResolver,
  timeoutMs: number,
): Promise<string[]> {
  const { host, port } = destination;
  if (destination.literal) {
    if (cidrRuleFor(policy, host, port)) return [host];
    throw new GateRefusal(
      403,
      'address-literal',
      `${destination.authority} is an address; only names on the allow-list are reached, or addresses inside a CIDR rule (add ${host.includes(':') ? `[${host}]` : host}:${port} to allow this one)`,
    );
  }
  if (!nameRuleFor(policy, host, port)) {
    const ports = portsForName(policy, host);
    if (ports.length > 0) {
      throw new GateRefusal(
        403,
        'port-not-allowed',
        `port ${port} is not allowed for ${host} (allowed: ${[...new Set(ports)].join(', ')}); add ${host}:${port} to the allow-list to allow it`,
      );
    }
    throw new GateRefusal(403, 'host-not-allowed', `${host} is not on this session's network allow-list`);
  }
  const addresses = (await resolveWithin(resolve, host, timeoutMs)).slice(0, MAX_ADDRESSES);
  if (addresses.length === 0) throw new GateRefusal(502, 'name-not-resolved', `${host} did not resolve to any address`);
  const hostAddresses = currentHostAddresses();
  for (const address of addresses) {
    const addressClass = classifyAddress(address, hostAddresses);
    if (addressClass && !cidrRuleFor(policy, address, port)) {
      throw new GateRefusal(
        403,
        'address-refused',
        `${host} resolves to ${address} (${addressClass}), which a sandbox may not reach; a CIDR rule such as ${address.includes(':') ? `[${address}]` : address}:${port} would allow it`,
      );
    }
  }
  return addresses;
}

async function resolveWithin(resolve: GateResolver, host: string, timeoutMs: number): Promise<string[]> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
  });
  try {
    return await Promise.race([resolve(host), timeout]);
  } catch (error) {
    throw new GateRefusal(502, 'name-not-resolved', `${host} did not resolve: ${(error as Error).message}`);
  } finally {
    clearTimeout(timer);
  }
}
