/**
 * The gate's contract: what a caller (the session layer, net-wire's channel) gives `startGate`
 * and gets back. One gate serves exactly one session: it has one listener and one policy, so a
 * sandbox that can reach its own gate can never borrow another session's allowances.
 */
import type { AddressInfo } from 'node:net';
import type { NetworkPolicy } from './policy.js';

/** Where the gate listens. A unix socket is what a sandbox gets bound into it; a port is for tests and Docker. */
export type GateListen = { path: string } | { host: string; port: number };

/**
 * Looks a name up for the gate. The gate checks every answer and then connects to the address it
 * checked, so a resolver that answers differently the second time (DNS rebinding) changes nothing.
 * @default every address from `dns.promises.lookup(name, { all: true })`
 */
export type GateResolver = (hostname: string) => Promise<string[]>;

export interface GateLimits {
  /** Connections open at once through this gate; one more is refused with 429. @default 32 */
  maxConnections?: number;
  /** Bytes from the sandbox to the internet, summed over the session's life. @default 1 GiB */
  maxBytesOut?: number;
  /** Bytes from the internet to the sandbox, summed over the session's life. @default 8 GiB */
  maxBytesIn?: number;
  /** A connection with no bytes either way for this long is closed. @default 60_000 */
  idleTimeoutMs?: number;
  /** Connecting to the destination may take this long before the client gets 504. @default 10_000 */
  connectTimeoutMs?: number;
  /** The request line and headers together, in bytes; more is refused with 431. @default 16 KiB */
  maxHeadBytes?: number;
}

/**
 * A header the gate adds to every request for one host, so the key never exists inside the
 * sandbox. Over HTTPS the gate ends TLS for that host with a certificate from the session's own
 * authority (intercept.ts); hosts without a secret stay blind CONNECT tunnels.
 */
export interface DestinationSecret {
  /** The exact host name (lower case) the header is added for. */
  host: string;
  /** The header name, e.g. `Authorization`; a header of that name from the sandbox is replaced. */
  header: string;
  value: string;
}

/** One line per connection the gate allowed, written when it ends. No bodies, no headers. */
export interface GateConnectionLog {
  event: 'connection-end';
  sessionId: string;
  /**
   * `connect` for an HTTPS tunnel, `forward` for a plain-HTTP request, `intercept` for an HTTPS
   * request to a host with a secret (the gate ended TLS, added the secret, and opened its own).
   */
  kind: 'connect' | 'forward' | 'intercept';
  host: string;
  port: number;
  /** The address the gate checked and connected to. */
  address: string;
  bytesOut: number;
  bytesIn: number;
  durationMs: number;
  /** Why it ended: `closed` normally, or the limit or failure that ended it. */
  outcome: 'closed' | 'idle-timeout' | 'byte-limit' | 'upstream-error' | 'client-error' | 'gate-closed';
}

/** One line per request the gate refused, with the rule that refused it. */
export interface GateRefusalLog {
  event: 'request-refused';
  sessionId: string;
  status: number;
  /** A short stable name: `host-not-allowed`, `port-not-allowed`, `address-refused`, `smuggling`, … */
  rule: string;
  /** What the client was told. */
  message: string;
  /** The destination asked for, when the request got far enough to name one. */
  target?: string;
}

export type GateLog = GateConnectionLog | GateRefusalLog;

export interface StartGateOptions {
  /** The session this gate serves; it names the session in every log line. */
  sessionId: string;
  /** From `parseNetworkPolicy`: what this session may reach. */
  policy: NetworkPolicy;
  listen: GateListen;
  limits?: GateLimits;
  /** Receives one entry per allowed connection and per refusal. @default no logging */
  logger?: (entry: GateLog) => void;
  /** For tests (a rebinding stub); see `GateResolver`. */
  resolve?: GateResolver;
  /** Secrets added to requests for their host, over HTTP and HTTPS. */
  secrets?: readonly DestinationSecret[];
  /**
   * PEM authorities the gate trusts beside the system's when it verifies a secret host's
   * certificate (the session's `trustedCertificates`): a secret goes only to a verified host.
   */
  trustedCertificates?: string;
}

export interface GateUsage {
  openConnections: number;
  bytesOut: number;
  bytesIn: number;
}

export interface Gate {
  readonly sessionId: string;
  /** The unix socket path, or the address and port actually bound (port 0 picks one). */
  readonly address: string | AddressInfo;
  /** PEM of the session's own authority, when it has secrets: the sandbox must trust it. */
  readonly certificateAuthority?: string;
  usage(): GateUsage;
  /** Stops listening and ends every open connection. Idempotent. */
  close(): Promise<void>;
}
