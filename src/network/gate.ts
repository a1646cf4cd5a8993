/**
 * The gate: an HTTP forward proxy on the host that is a session's only way to the internet.
 * `startGate(options: StartGateOptions): Promise<Gate>` (being built on this branch) listens on a
 * unix socket or a port, serves one session with one policy, and is closed with the session.
 */
export type {
  DestinationSecret,
  Gate,
  GateConnectionLog,
  GateLimits,
  GateListen,
  GateLog,
  GateRefusalLog,
  GateResolver,
  GateUsage,
  StartGateOptions,
} from './gate-types.js';
