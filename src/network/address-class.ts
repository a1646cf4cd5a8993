/**
 * Which addresses a sandbox may never reach unless its owner names them by CIDR: everything that
 * is not the public internet (this host, the LAN, the cloud metadata service, shared carrier
 * space, multicast) and the host's own addresses on any interface.
 */
import { networkInterfaces } from 'node:os';
import { type Cidr, cidrContains, mappedIPv4, parseAddress, parseCidr } from './ip-address.js';

/** Why an address is refused by default; `undefined` from `classifyAddress` means public. */
export type AddressClass =
  | 'unspecified'
  | 'loopback'
  | 'private'
  | 'link-local'
  | 'shared-carrier'
  | 'multicast'
  | 'reserved'
  | 'ipv4-mapped'
  | 'ipv6-translated'
  | 'this-host'
  | 'not-an-address';

const RANGES: ReadonlyArray<readonly [string, AddressClass]> = [
  ['0.0.0.0/8', 'unspecified'],
  ['127.0.0.0/8', 'loopback'],
  ['10.0.0.0/8', 'private'],
  ['172.16.0.0/12', 'private'],
  ['192.168.0.0/16', 'private'],
  // 169.254.169.254 is the cloud metadata service: credentials for the whole machine.
  ['169.254.0.0/16', 'link-local'],
  ['100.64.0.0/10', 'shared-carrier'],
  ['192.0.0.0/24', 'reserved'],
  ['192.0.2.0/24', 'reserved'],
  ['198.18.0.0/15', 'reserved'],
  ['198.51.100.0/24', 'reserved'],
  ['203.0.113.0/24', 'reserved'],
  ['224.0.0.0/4', 'multicast'],
  ['240.0.0.0/4', 'reserved'],
  ['::/128', 'unspecified'],
  ['::1/128', 'loopback'],
  // IPv4-compatible (deprecated) and other forms under ::/96 reach IPv4 hosts on some stacks.
  ['::/96', 'ipv4-mapped'],
  ['::ffff:0:0/96', 'ipv4-mapped'],
  // NAT64 and 6to4 embed an IPv4 address a translator would reach on our behalf.
  ['64:ff9b::/96', 'ipv6-translated'],
  ['64:ff9b:1::/48', 'ipv6-translated'],
  ['2002::/16', 'ipv6-translated'],
  ['2001::/32', 'ipv6-translated'],
  ['fc00::/7', 'private'],
  ['fe80::/10', 'link-local'],
  ['fec0::/10', 'private'],
  ['ff00::/8', 'multicast'],
  ['2001:db8::/32', 'reserved'],
  ['100::/64', 'reserved'],
];

const PARSED_RANGES: ReadonlyArray<readonly [Cidr, AddressClass]> = RANGES.map(([text, addressClass]) => [
  parseCidr(text) as Cidr,
  addressClass,
]);

/** The class that makes `address` refused by default, or `undefined` for a public address. */
export function classifyAddress(
  address: string,
  hostAddresses: ReadonlySet<string> = currentHostAddresses(),
): AddressClass | undefined {
  const bytes = parseAddress(address);
  if (!bytes) return 'not-an-address';
  // Name the mapped IPv4 address's own class when it has one (::ffff:127.0.0.1 reads as loopback).
  const inner = mappedIPv4(bytes);
  if (inner) return classOfBytes(inner) ?? 'ipv4-mapped';
  const addressClass = classOfBytes(bytes);
  if (addressClass) return addressClass;
  if (hostAddresses.has(canonical(bytes))) return 'this-host';
  return undefined;
}

function classOfBytes(bytes: Uint8Array): AddressClass | undefined {
  return PARSED_RANGES.find(([cidr]) => cidrContains(cidr, bytes))?.[1];
}

/** One spelling per address, so a host address matches however the resolver wrote it. */
function canonical(bytes: Uint8Array): string {
  return Buffer.from(bytes).toString('hex');
}

/**
 * Interfaces come and go, so the list is read again after this long; reading it on every request
 * costs a third of a millisecond (getifaddrs), a sixth of the gate's latency budget.
 */
const HOST_ADDRESSES_TTL_MS = 5_000;
let cachedHostAddresses: { addresses: ReadonlySet<string>; readAt: number } | undefined;

/** Every address on this host's interfaces, at most `HOST_ADDRESSES_TTL_MS` old. */
export function currentHostAddresses(): ReadonlySet<string> {
  const now = Date.now();
  if (cachedHostAddresses && now - cachedHostAddresses.readAt < HOST_ADDRESSES_TTL_MS)
    return cachedHostAddresses.addresses;
  cachedHostAddresses = { addresses: readHostAddresses(), readAt: now };
  return cachedHostAddresses.addresses;
}

function readHostAddresses(): ReadonlySet<string> {
  const addresses = new Set<string>();
  for (const entries of Object.values(networkInterfaces())) {
    for (const entry of entries ?? []) {
      const bytes = parseAddress(entry.address);
      if (bytes) addresses.add(canonical(bytes));
    }
  }
  return addresses;
}

/** Host addresses as `classifyAddress` wants them, from text (for tests that pretend to be a host). */
export function hostAddressSet(addresses: readonly string[]): ReadonlySet<string> {
  return new Set(
    addresses.flatMap((address) => {
      const bytes = parseAddress(address);
      return bytes ? [canonical(bytes)] : [];
    }),
  );
}
