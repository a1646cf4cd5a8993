/**
 * What every connection handler of one gate shares: the session's policy, budget, resolver and
 * secrets, and the log. One of these per gate, so one per session.
 */
import type { Socket } from 'node:net';
import type { GateBudget } from './gate-budget.js';
import type { DestinationSecret, GateLimits, GateLog, GateResolver } from './gate-types.js';
import type { NetworkPolicy } from './policy.js';

export interface GateContext {
  sessionId: string;
  policy: NetworkPolicy;
  budget: GateBudget;
  limits: Required<GateLimits>;
  resolve: GateResolver;
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
