/**
 * What every connection handler of one gate shares: the session's policy, budget, resolver and
 * secrets, and the log. One of these per gate, so one per session.
 */
import type { Socket } from 'node:net';
import type { SecureContext } from 'node:tls';
import type { GateBudget } from './gate-budget.js';
import type { DestinationSecret, GateLimits, GateLog, GateResolver } from './gate-types.js';
import type { NetworkPolicy } from './policy.js';
import type { SessionAuthority } from './session-authority.js';

export interface GateContext {
  sessionId: string;
  policy: NetworkPolicy;
  budget: GateBudget;
  limits: Required<GateLimits>;
  resolve: GateResolver;
  /** Present when the session has secrets: signs the certificates the gate ends TLS with. */
  authority?: SessionAuthority;
  /** What a secret host's certificate is verified against: the system's authorities and the session's. */
  upstreamContext?: SecureContext;
  /** By lower-case host name. */
  secrets: ReadonlyMap<string, readonly DestinationSecret[]>;
  log: (entry: GateLog) => void;
  /** Every socket open through the gate, so `close()` can end them. */
  sockets: Set<Socket>;
  /** Set by `close()`: connections it ends are logged as `gate-closed`. */
  closing: boolean;
}

/** Keeps `socket` in the gate's set while it is open, so `close()` ends it and nothing is kept after. */
export function trackSocket(context: GateContext, socket: Socket): void {
  context.sockets.add(socket);
  socket.once('close', () => context.sockets.delete(socket));
}
