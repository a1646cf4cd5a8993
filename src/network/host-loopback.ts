/**
 * `host.sandcell.internal`: how a sandbox reaches a service on the machine sandcell runs on (a model
 * server such as Ollama, a database on its loopback), as `host.docker.internal` does for Docker.
 *
 * Inside a sandbox, 127.0.0.1 and localhost are the sandbox's own loopback (where its forwarder
 * listens; `NO_PROXY` keeps clients there), so no rule on them could ever work from a sandbox. The
 * reserved name goes through the proxy like any other, and the gate, never DNS, maps it to this
 * machine's loopback, only on the ports a rule names exactly. Every other way to the host's loopback
 * is closed: a name that resolves there, a literal, a CIDR that covers it; the refusals say which rule
 * works instead.
 */
import type { AddressClass } from './address-class.js';
import { type Cidr, cidrContains, parseCidr } from './ip-address.js';

/** The reserved name. `.internal` is ICANN's name space for private use: no public name can take it. */
export const HOST_LOOPBACK_NAME = 'host.sandcell.internal';

/** Where the name leads, tried in turn: IPv4 first (what most servers bind), then IPv6. */
export const HOST_LOOPBACK_ADDRESSES: readonly string[] = ['127.0.0.1', '::1'];

/** Classes that are this machine itself: a connection there reaches the host's own loopback services. */
const HOST_LOCAL_CLASSES: ReadonlySet<AddressClass> = new Set(['loopback', 'unspecified']);

/** The ranges of those classes (IPv4-mapped forms too), for rules that lie wholly inside them. */
const HOST_LOCAL_RANGES: readonly Cidr[] = [
  '127.0.0.0/8',
  '0.0.0.0/8',
  '::1/128',
  '::/128',
  '::ffff:127.0.0.0/104',
  '::ffff:0.0.0.0/104',
].map((text) => parseCidr(text) as Cidr);

/** Names that mean the machine a client runs on: inside a sandbox, the sandbox itself. */
const LOOPBACK_NAMES = new Set(['localhost', 'localhost.localdomain', 'ip6-localhost', 'ip6-loopback']);

export function isHostLocalClass(addressClass: AddressClass | 'public' | undefined): boolean {
  return addressClass !== undefined && addressClass !== 'public' && HOST_LOCAL_CLASSES.has(addressClass);
}

/** Whether every address of `cidr` is this host's own (so it cannot be meant as a network). */
export function cidrWithinHostLocal(cidr: Cidr): boolean {
  return HOST_LOCAL_RANGES.some(
    (range) =>
      range.network.length === cidr.network.length &&
      range.prefixLength <= cidr.prefixLength &&
      cidrContains(range, cidr.network),
  );
}

/** `localhost` and the names below it (RFC 6761: `*.localhost` is loopback, curl resolves it itself). */
export function isLoopbackName(name: string): boolean {
  return LOOPBACK_NAMES.has(name) || name.endsWith('.localhost');
}

/** The rule that reaches this host's loopback on `port`. */
export function hostLoopbackRule(port: number): string {
  return `${HOST_LOOPBACK_NAME}:${port}`;
}

/** What to write instead, for a message: the rule and the URL that go with it. */
export function hostLoopbackAdvice(port: number | undefined): string {
  if (port === undefined) {
    return `allow ${HOST_LOOPBACK_NAME}:PORT with the service's port (e.g. ${hostLoopbackRule(11434)}) and use http://${HOST_LOOPBACK_NAME}:PORT/`;
  }
  return `allow ${hostLoopbackRule(port)} and use http://${HOST_LOOPBACK_NAME}:${port}/`;
}
