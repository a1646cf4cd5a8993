/**
 * Where a proxy request wants to go: the authority of `CONNECT host:port` or of an absolute-form
 * `GET http://host[:port]/path`. Only plain names, dotted IPv4 and bracketed IPv6 are hosts; user
 * information (`http://user@host/`), percent-encoding and other forms two parsers could read
 * differently are refused.
 */
import { parseAddress } from './ip-address.js';
import { isHostName } from './policy.js';
import { GateRefusal } from './refusal.js';

export interface Destination {
  /** Lower case; an IPv6 literal without its brackets. */
  host: string;
  port: number;
  /** Whether `host` is an address literal rather than a name. */
  literal: boolean;
  /** As it goes in a Host header: brackets kept, default port left out. */
  authority: string;
}

export function parseAuthority(text: string, defaultPort?: number): Destination {
  const lower = text.toLowerCase();
  let host: string;
  let portText: string | undefined;
  if (lower.startsWith('[')) {
    const close = lower.indexOf(']');
    host = lower.slice(1, close);
    const after = lower.slice(close + 1);
    if (close < 0 || (after !== '' && !after.startsWith(':'))) throw bad(`the authority ${text} is malformed`);
    portText = after === '' ? undefined : after.slice(1);
    if (!parseAddress(host) || !host.includes(':')) throw bad(`[${host}] is not an IPv6 address`);
  } else {
    const parts = lower.split(':');
    if (parts.length > 2) throw bad(`the authority ${text} is malformed (an IPv6 address goes in brackets)`);
    host = parts[0] as string;
    portText = parts[1];
    if (!isHostName(host)) throw bad(`${JSON.stringify(host)} is not a host name`);
  }
  if (portText === undefined) {
    if (defaultPort === undefined) throw bad(`CONNECT needs a port, as in ${host}:443`);
  } else if (!/^[1-9][0-9]{0,4}$/.test(portText) || Number(portText) > 65_535) {
    throw bad(`the port ${JSON.stringify(portText)} is not 1-65535`);
  }
  const port = portText === undefined ? (defaultPort as number) : Number(portText);
  const literal = parseAddress(host) !== undefined;
  const bracketed = host.includes(':') ? `[${host}]` : host;
  return { host, port, literal, authority: port === defaultPort ? bracketed : `${bracketed}:${port}` };
}

/** `http://host[:port]/path?query` → the destination and the origin-form target to send upstream. */
export function parseAbsoluteTarget(target: string): { destination: Destination; originForm: string } {
  const lower = target.slice(0, 8).toLowerCase();
  if (lower.startsWith('https://')) {
    throw new GateRefusal(
      400,
      'not-a-proxy-request',
      'HTTPS goes through CONNECT host:443, not an absolute https:// URL',
    );
  }
  if (!lower.startsWith('http://')) {
    throw new GateRefusal(
      400,
      'not-a-proxy-request',
      'this is a forward proxy: send an absolute http:// URL, or CONNECT host:port for HTTPS',
    );
  }
  const afterScheme = target.slice('http://'.length);
  const pathStart = afterScheme.search(/[/?]/);
  const authorityText = pathStart < 0 ? afterScheme : afterScheme.slice(0, pathStart);
  if (authorityText.includes('@')) throw bad('user information in the URL (user@host) is not accepted');
  if (target.includes('#')) throw bad('a fragment (#) does not belong in a request');
  const path = pathStart < 0 ? '/' : afterScheme.slice(pathStart);
  return {
    destination: parseAuthority(authorityText, 80),
    originForm: path.startsWith('?') ? `/${path}` : path,
  };
}

function bad(message: string): GateRefusal {
  return new GateRefusal(400, 'bad-request', message);
}
