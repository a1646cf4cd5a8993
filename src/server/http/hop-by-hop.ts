/**
 * Hop-by-hop headers (RFC 9110 §7.6.1): they belong to one connection, so neither a node passing a
 * request to another (forwarding.ts, relay.ts) nor the port door's proxy passes them on.
 */
export const HOP_BY_HOP: ReadonlySet<string> = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'proxy-authenticate',
  'proxy-authorization',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
]);
