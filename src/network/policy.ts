/**
 * A session's network policy: the allow-list its owner wrote, parsed and checked up front so a
 * typo fails when the session is created, not when pip runs. Entries are exact names
 * (`pypi.org`), `*.suffix` wildcards (`*.example.com`: any name below it, not the name itself),
 * or CIDRs (`10.0.0.0/8`, `2001:db8::/32`, a bare address), each with an optional `:port`
 * (`api.example.com:8443`, `[2001:db8::1]:443`, `10.0.0.0/8:5432`). Without a port only 80 and 443
 * are allowed.
 */
import { InvalidInputError } from '../errors.js';
import { type Cidr, cidrContains, parseAddress, parseCidr } from './ip-address.js';

export const DEFAULT_ALLOWED_PORTS: readonly number[] = [80, 443];
/** More entries than this is a mistake (a pasted block list), not a policy. */
export const MAX_POLICY_ENTRIES = 256;

export type NetworkRule =
  | { kind: 'name'; name: string; ports: readonly number[]; text: string }
  | { kind: 'suffix'; suffix: string; ports: readonly number[]; text: string }
  | { kind: 'cidr'; cidr: Cidr; ports: readonly number[]; text: string };

export interface NetworkPolicy {
  readonly rules: readonly NetworkRule[];
}

/** An allow-list entry that cannot be a rule; the message names the entry and the accepted forms. */
export class NetworkPolicyError extends InvalidInputError {
  constructor(entry: string, reason: string) {
    super(
      `Network allow-list entry ${JSON.stringify(entry)}: ${reason}. ` +
        'Write a name (pypi.org), a wildcard (*.example.com), or a CIDR (10.0.0.0/8), each with an optional :port.',
    );
  }
}

export function parseNetworkPolicy(entries: readonly string[]): NetworkPolicy {
  if (entries.length > MAX_POLICY_ENTRIES) {
    throw new InvalidInputError(
      `A network allow-list has at most ${MAX_POLICY_ENTRIES} entries; got ${entries.length}.`,
    );
  }
  return { rules: entries.map(parseRule) };
}

function parseRule(entry: unknown): NetworkRule {
  if (typeof entry !== 'string') throw new NetworkPolicyError(String(entry), 'not a string');
  const text = entry.trim().toLowerCase();
  if (text.length === 0 || text.length > 300) throw new NetworkPolicyError(entry, 'empty or too long');
  if (text.includes('://') || text.includes('/', text.indexOf('/') + 1)) {
    throw new NetworkPolicyError(entry, 'write the host alone, without a scheme or a path');
  }
  const { body, ports } = splitPort(entry, text);
  const cidr = parseCidr(body);
  if (cidr) {
    if (!hostBitsClear(cidr)) throw new NetworkPolicyError(entry, 'the address has bits set beyond the prefix length');
    return { kind: 'cidr', cidr, ports, text };
  }
  if (body.includes('/') || body.includes(':')) throw new NetworkPolicyError(entry, 'not a valid CIDR or address');
  if (body.startsWith('*.')) {
    const suffix = body.slice(2);
    if (!isHostName(suffix) || !suffix.includes('.')) {
      throw new NetworkPolicyError(entry, 'a wildcard needs a domain with at least two labels after "*."');
    }
    return { kind: 'suffix', suffix, ports, text };
  }
  if (!isHostName(body)) throw new NetworkPolicyError(entry, 'not a valid host name');
  if (/^[0-9.]+$/.test(body) || /^0x/.test(body)) {
    throw new NetworkPolicyError(entry, 'looks like an address in a form the gate does not accept; write it dotted');
  }
  return { kind: 'name', name: body, ports, text };
}

function splitPort(entry: string, text: string): { body: string; ports: readonly number[] } {
  // `[v6]:port`, `[v6]`, `name:port`, `cidr:port`; a bare IPv6 address or CIDR has more than one colon.
  let body = text;
  let portText: string | undefined;
  if (text.startsWith('[')) {
    const close = text.indexOf(']');
    if (close < 0) throw new NetworkPolicyError(entry, 'an unclosed "["');
    body = text.slice(1, close);
    const rest = text.slice(close + 1);
    if (rest !== '') {
      if (!rest.startsWith(':')) throw new NetworkPolicyError(entry, 'unexpected text after "]"');
      portText = rest.slice(1);
    }
  } else if (text.split(':').length === 2) {
    [body, portText] = text.split(':') as [string, string];
  }
  if (portText === undefined) return { body, ports: DEFAULT_ALLOWED_PORTS };
  if (!/^[1-9][0-9]{0,4}$/.test(portText) || Number(portText) > 65_535) {
    throw new NetworkPolicyError(entry, `the port ${JSON.stringify(portText)} is not 1-65535`);
  }
  return { body, ports: [Number(portText)] };
}

/** LDH labels, 1-63 characters each, 253 in all; a trailing dot is not accepted (write the name plainly). */
export function isHostName(name: string): boolean {
  if (name.length === 0 || name.length > 253) return false;
  return name.split('.').every((label) => /^[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?$/.test(label));
}

function hostBitsClear(cidr: Cidr): boolean {
  const { network, prefixLength } = cidr;
  for (let bit = prefixLength; bit < network.length * 8; bit++) {
    if (((network[bit >> 3] ?? 0) >> (7 - (bit & 7))) & 1) return false;
  }
  return true;
}

/** The name rule that allows `host` on `port`, if any (names only; addresses go through `cidrRuleFor`). */
export function nameRuleFor(policy: NetworkPolicy, host: string, port: number): NetworkRule | undefined {
  return policy.rules.find(
    (rule) =>
      rule.ports.includes(port) &&
      ((rule.kind === 'name' && rule.name === host) || (rule.kind === 'suffix' && host.endsWith(`.${rule.suffix}`))),
  );
}

/** Whether any name rule names `host`, whatever its port (to say "port not allowed" rather than "host not allowed"). */
export function portsForName(policy: NetworkPolicy, host: string): number[] {
  return policy.rules.flatMap((rule) =>
    (rule.kind === 'name' && rule.name === host) || (rule.kind === 'suffix' && host.endsWith(`.${rule.suffix}`))
      ? rule.ports
      : [],
  );
}

/** The CIDR rule that contains `address` and allows `port`, if any. */
export function cidrRuleFor(policy: NetworkPolicy, address: string, port: number): NetworkRule | undefined {
  const bytes = parseAddress(address);
  if (!bytes) return undefined;
  return policy.rules.find(
    (rule) => rule.kind === 'cidr' && rule.ports.includes(port) && cidrContains(rule.cidr, bytes),
  );
}
