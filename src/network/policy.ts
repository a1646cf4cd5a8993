/**
 * A session's network policy: the allow-list its owner wrote, parsed and checked up front so a
 * typo fails when the session is created, not when pip runs. Entries are exact names
 * (`pypi.org`), `*.suffix` wildcards (`*.example.com`: any name below it, not the name itself),
 * or CIDRs (`10.0.0.0/8`, `2001:db8::/32`, a bare address), each with an optional `:port`
 * (`api.example.com:8443`, `[2001:db8::1]:443`, `10.0.0.0/8:5432`). Without a port only 80 and 443
 * are allowed.
 */
import { InvalidInputError } from '../errors.js';
import {
  cidrWithinHostLocal,
  HOST_LOOPBACK_NAME,
  hostLoopbackAdvice,
  hostLoopbackRule,
  isLoopbackName,
} from './host-loopback.js';
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

const ACCEPTED_FORMS =
  'Write a name (pypi.org), a wildcard (*.example.com), or a CIDR (10.0.0.0/8), each with an optional :port.';

/** An allow-list entry that cannot be a rule; the message names the entry and what to write instead. */
export class NetworkPolicyError extends InvalidInputError {
  constructor(entry: string, reason: string, instead = ACCEPTED_FORMS) {
    super(`Network allow-list entry ${JSON.stringify(entry)}: ${reason}. ${instead}`);
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
  // This host's loopback is reached on the ports named, never on 80 and 443 by default.
  if (body === HOST_LOOPBACK_NAME && ports === DEFAULT_ALLOWED_PORTS) {
    throw new NetworkPolicyError(
      entry,
      `${HOST_LOOPBACK_NAME} reaches services on this machine's loopback, one port per rule`,
      `Name the service's port, e.g. ${hostLoopbackRule(11434)}.`,
    );
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

/** What a rule names, without its port: `127.0.0.1`, `::1`, `localhost`, `*.app.localhost`. */
function hostOf(rule: NetworkRule, ported: boolean): string {
  if (rule.kind === 'name') return rule.name;
  if (rule.kind === 'suffix') return `*.${rule.suffix}`;
  const text = ported ? rule.text.slice(0, rule.text.lastIndexOf(':')) : rule.text;
  return text.replace(/^\[(.*)\]$/, '$1');
}

function hostBitsClear(cidr: Cidr): boolean {
  const { network, prefixLength } = cidr;
  for (let bit = prefixLength; bit < network.length * 8; bit++) {
    if (((network[bit >> 3] ?? 0) >> (7 - (bit & 7))) & 1) return false;
  }
  return true;
}

/** Whether `rule` names `host`. The host's loopback only by its exact name: no wildcard reaches it. */
function namesHost(rule: NetworkRule, host: string): boolean {
  if (rule.kind === 'name') return rule.name === host;
  return rule.kind === 'suffix' && host !== HOST_LOOPBACK_NAME && host.endsWith(`.${rule.suffix}`);
}

/** The name rule that allows `host` on `port`, if any (names only; addresses go through `cidrRuleFor`). */
export function nameRuleFor(policy: NetworkPolicy, host: string, port: number): NetworkRule | undefined {
  return policy.rules.find((rule) => rule.ports.includes(port) && namesHost(rule, host));
}

/** Whether any name rule names `host`, whatever its port (to say "port not allowed" rather than "host not allowed"). */
export function portsForName(policy: NetworkPolicy, host: string): number[] {
  return policy.rules.flatMap((rule) => (namesHost(rule, host) ? rule.ports : []));
}

/**
 * What a session's own allow-list may not hold: a rule on this host's loopback written as the
 * sandbox would read it (`127.0.0.1:8080`, `localhost:8080`, `[::1]:8080`, `0.0.0.0`). Inside a
 * sandbox those are the sandbox itself, so the rule could never work; the error names the one that
 * does. (The gate's own policy may hold such CIDRs: a build pins a local apt mirror's address so.)
 */
export function refuseHostLocalRules(policy: NetworkPolicy): void {
  for (const rule of policy.rules) {
    const loopback =
      (rule.kind === 'cidr' && cidrWithinHostLocal(rule.cidr)) ||
      (rule.kind === 'name' && isLoopbackName(rule.name)) ||
      (rule.kind === 'suffix' && isLoopbackName(rule.suffix));
    if (!loopback) continue;
    // A rule without a port meant 80 and 443; which port the service has, only its owner knows.
    const port = rule.ports === DEFAULT_ALLOWED_PORTS ? undefined : rule.ports[0];
    throw new NetworkPolicyError(
      rule.text,
      `inside a sandbox, ${hostOf(rule, port !== undefined)} is the sandbox itself, which clients reach directly, never through the gate`,
      `To reach a service on this machine's loopback, ${hostLoopbackAdvice(port)}.`,
    );
  }
}

/** The CIDR rule that contains `address`, allows `port` and passes `accept`, if any. */
export function cidrRuleFor(
  policy: NetworkPolicy,
  address: string,
  port: number,
  accept: (cidr: Cidr) => boolean = () => true,
): NetworkRule | undefined {
  const bytes = parseAddress(address);
  if (!bytes) return undefined;
  return policy.rules.find(
    (rule) => rule.kind === 'cidr' && rule.ports.includes(port) && cidrContains(rule.cidr, bytes) && accept(rule.cidr),
  );
}
