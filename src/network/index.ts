/** Controlled internet access: the allow-list and the gate that enforces it. */
export { type AddressClass, classifyAddress } from './address-class.js';
export {
  type DestinationSecret,
  type Gate,
  type GateConnectionLog,
  type GateLimits,
  type GateListen,
  type GateLog,
  type GateRefusalLog,
  type GateResolver,
  type GateUsage,
  type StartGateOptions,
  startGate,
} from './gate.js';
export { DEFAULT_GATE_LIMITS } from './gate-budget.js';
export { createGateHost, type GateChannel, type GateChannelRequest, type GateHostOptions } from './gate-host.js';
export {
  DEFAULT_ALLOWED_PORTS,
  type NetworkPolicy,
  NetworkPolicyError,
  type NetworkRule,
  parseNetworkPolicy,
} from './policy.js';
export type { RefusalRule } from './refusal.js';
