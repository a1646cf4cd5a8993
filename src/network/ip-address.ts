/**
 * IP addresses as bytes, and CIDR containment. Written out rather than borrowed from a parser that
 * accepts shorthand (`127.1`, octal `0177.0.0.1`): only the canonical dotted-quad and RFC 4291 text
 * forms are addresses here; anything else is a name, and names go through the policy's name rules.
 */
import { isIPv4, isIPv6 } from 'node:net';

/** 4 bytes for IPv4, 16 for IPv6. */
export type AddressBytes = Uint8Array;

export function parseAddress(text: string): AddressBytes | undefined {
  if (isIPv4(text)) return parseIPv4(text);
  if (isIPv6(text)) return parseIPv6(text);
  return undefined;
}

function parseIPv4(text: string): AddressBytes | undefined {
  const parts = text.split('.');
  if (parts.length !== 4) return undefined;
  const bytes = new Uint8Array(4);
  for (const [index, part] of parts.entries()) {
    if (!/^(0|[1-9][0-9]{0,2})$/.test(part)) return undefined;
    const value = Number(part);
    if (value > 255) return undefined;
    bytes[index] = value;
  }
  return bytes;
}

function parseIPv6(text: string): AddressBytes | undefined {
  // A zone (`fe80::1%eth0`) names an interface on this host: never a destination for a sandbox.
  if (text.includes('%')) return undefined;
  let head = text;
  let embedded: AddressBytes | undefined;
  const lastColon = text.lastIndexOf(':');
  if (text.slice(lastColon + 1).includes('.')) {
    embedded = parseIPv4(text.slice(lastColon + 1));
    if (!embedded) return undefined;
    head = `${text.slice(0, lastColon + 1)}0:0`;
  }
  const halves = head.split('::');
  if (halves.length > 2) return undefined;
  const groupsOf = (half: string | undefined) => (half ? half.split(':') : []);
  const left = groupsOf(halves[0]);
  const right = groupsOf(halves[1]);
  const missing = 8 - left.length - right.length;
  if (halves.length === 1 ? missing !== 0 : missing < 1) return undefined;
  const groups = [...left, ...Array<string>(halves.length === 1 ? 0 : missing).fill('0'), ...right];
  const bytes = new Uint8Array(16);
  for (const [index, group] of groups.entries()) {
    if (!/^[0-9a-fA-F]{1,4}$/.test(group)) return undefined;
    const value = Number.parseInt(group, 16);
    bytes[index * 2] = value >> 8;
    bytes[index * 2 + 1] = value & 0xff;
  }
  if (embedded) bytes.set(embedded, 12);
  return bytes;
}

/** The IPv4 address inside `::ffff:a.b.c.d` (IPv4-mapped), else undefined. */
export function mappedIPv4(bytes: AddressBytes): AddressBytes | undefined {
  if (bytes.length !== 16) return undefined;
  for (let index = 0; index < 10; index++) if (bytes[index] !== 0) return undefined;
  if (bytes[10] !== 0xff || bytes[11] !== 0xff) return undefined;
  return bytes.slice(12);
}

export interface Cidr {
  network: AddressBytes;
  prefixLength: number;
}

/** `10.0.0.0/8`, `2001:db8::/32`, or a bare address (a /32 or /128). */
export function parseCidr(text: string): Cidr | undefined {
  const [addressText, prefixText, ...rest] = text.split('/');
  if (rest.length > 0 || addressText === undefined) return undefined;
  const network = parseAddress(addressText);
  if (!network) return undefined;
  const maximum = network.length * 8;
  if (prefixText === undefined) return { network, prefixLength: maximum };
  if (!/^(0|[1-9][0-9]{0,2})$/.test(prefixText)) return undefined;
  const prefixLength = Number(prefixText);
  if (prefixLength > maximum) return undefined;
  return { network, prefixLength };
}

export function cidrContains(cidr: Cidr, address: AddressBytes): boolean {
  if (cidr.network.length !== address.length) return false;
  const fullBytes = Math.floor(cidr.prefixLength / 8);
  for (let index = 0; index < fullBytes; index++) if (cidr.network[index] !== address[index]) return false;
  const remainingBits = cidr.prefixLength % 8;
  if (remainingBits === 0) return true;
  const mask = (0xff << (8 - remainingBits)) & 0xff;
  return ((cidr.network[fullBytes] ?? 0) & mask) === ((address[fullBytes] ?? 0) & mask);
}
