/**
 * The gate a session gets when its options name none: one gate host per process, each session's gate
 * on a unix socket of its own (createGateHost). A server passes its own, which logs.
 */
import type { NetworkGate } from './gate-channel.js';
import { createGateHost } from './gate-host.js';

let shared: NetworkGate | undefined;

export function defaultNetworkGate(): NetworkGate {
  shared ??= createGateHost();
  return shared;
}
