/**
 * The gate's decision on a destination, made on addresses it resolved itself: the name must be
 * allowed on that port, and every address it resolves to must be public or inside a CIDR rule.
 * `host.sandcell.internal` is this machine's loopback (host-loopback.ts), without a lookup.
 * The caller connects to the returned addresses, never to the name, so a second lookup (DNS
 * rebinding) cannot send the connection somewhere that was not checked.
 */
import { lookup } from 'node:dns/promises';
import { type AddressClass, classifyAddress, currentHostAddresses } from './address-class.js';
import type { GateResolver } from './gate-types.js';
import {
  cidrWithinHostLocal,
  HOST_LOOPBACK_ADDRESSES,
  HOST_LOOPBACK_NAME,
  hostLoopbackAdvice,
  isHostLocalClass,
  isLoopbackName,
} from './host-loopback.js';
import { cidrRuleFor, DEFAULT_ALLOWED_PORTS, type NetworkPolicy, nameRuleFor, portsForName } from './policy.js';
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
  const hostAddresses = currentHostAddresses();
  if (destination.literal) {
    // A literal needs a CIDR rule even when public: only names are allowed by name rules.
    const addressClass = classifyAddress(host, hostAddresses) ?? 'public';
    if (addressAllowed(policy, host, port, addressClass)) return [host];
    throw new GateRefusal(
      403,
      'address-literal',
      isHostLocalClass(addressClass)
        ? `${destination.authority} is this machine's loopback; the sandbox reaches it only by name: ${hostLoopbackAdvice(port)}`
        : `${destination.authority} is an address; only names on the allow-list are reached, or addresses inside a CIDR rule (add ${bracketed(host)}:${port} to allow this one)`,
    );
  }
  if (!nameRuleFor(policy, host, port)) throw notOnTheList(policy, host, port);
  // The reserved name is never looked up: nothing outside the gate can say where it leads.
  if (host === HOST_LOOPBACK_NAME) return [...HOST_LOOPBACK_ADDRESSES];
  const addresses = (await resolveWithin(resolve, host, timeoutMs)).slice(0, MAX_ADDRESSES);
  if (addresses.length === 0) throw new GateRefusal(502, 'name-not-resolved', `${host} did not resolve to any address`);
  for (const address of addresses) {
    const addressClass = classifyAddress(address, hostAddresses);
    if (addressAllowed(policy, address, port, addressClass)) continue;
    throw new GateRefusal(
      403,
      'address-refused',
      isHostLocalClass(addressClass)
        ? `${host} resolves to ${address} (${addressClass}), this machine's own; a sandbox reaches this machine's loopback only as ${HOST_LOOPBACK_NAME}: ${hostLoopbackAdvice(port)}`
        : `${host} resolves to ${address} (${addressClass}), which a sandbox may not reach; a CIDR rule such as ${bracketed(address)}:${port} would allow it`,
    );
  }
  return addresses;
}

/**
 * A public address is allowed (its name was), any other only inside a CIDR rule for the port; this
 * host's loopback only inside a rule on nothing else (a build's pinned local mirror), so that a wide
 * CIDR (`0.0.0.0/0`) never opens the host's own services.
 */
function addressAllowed(
  policy: NetworkPolicy,
  address: string,
  port: number,
  addressClass: AddressClass | 'public' | undefined,
): boolean {
  if (addressClass === undefined) return true;
  const hostLocal = isHostLocalClass(addressClass);
  return cidrRuleFor(policy, address, port, (cidr) => !hostLocal || cidrWithinHostLocal(cidr)) !== undefined;
}

/** The refusal for a name no rule names on this port, with the rule that would allow it. */
function notOnTheList(policy: NetworkPolicy, host: string, port: number): GateRefusal {
  if (isLoopbackName(host)) {
    return new GateRefusal(
      403,
      'host-not-allowed',
      `${host} is the sandbox itself; to reach a service on this machine's loopback, ${hostLoopbackAdvice(port)}`,
    );
  }
  const ports = portsForName(policy, host);
  if (ports.length > 0) {
    return new GateRefusal(
      403,
      'port-not-allowed',
      `port ${port} is not allowed for ${host} (allowed: ${[...new Set(ports)].join(', ')}); add ${host}:${port} to the allow-list to allow it`,
    );
  }
  // Not looked up: a name off the list is never sent to DNS, so the suggestion is the name alone.
  const rule = host === HOST_LOOPBACK_NAME || !DEFAULT_ALLOWED_PORTS.includes(port) ? `${host}:${port}` : host;
  return new GateRefusal(
    403,
    'host-not-allowed',
    `${host} is not on this session's network allow-list (add ${rule} to allow it)`,
  );
}

function bracketed(address: string): string {
  return address.includes(':') ? `[${address}]` : address;
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
