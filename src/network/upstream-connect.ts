/**
 * Opens the connection to a destination the gate has checked: to its addresses, never its name,
 * so nothing is looked up again between the check and the connect. Every address was checked, so
 * when one does not answer (an IPv6 address on a host without IPv6) the next is tried.
 */
import { connect, isIP, type Socket } from 'node:net';
import { checkDestination } from './destination-check.js';
import type { GateContext } from './gate-connection.js';
import { HOST_LOOPBACK_NAME } from './host-loopback.js';
import { GateRefusal } from './refusal.js';
import type { Destination } from './request-target.js';

/** The shortest attempt at one address when several share the connect timeout. */
const MINIMUM_ATTEMPT_MS = 250;

/** The session's policy decides on the destination (destination-check.ts); then the connection to what it checked. */
export async function connectChecked(
  context: GateContext,
  destination: Destination,
): Promise<{ socket: Socket; address: string }> {
  const timeoutMs = context.limits.connectTimeoutMs;
  const addresses = await checkDestination(context.policy, destination, context.resolve, timeoutMs);
  if (destination.host !== HOST_LOOPBACK_NAME) return connectUpstream(addresses, destination.port, timeoutMs);
  return connectUpstream(addresses, destination.port, timeoutMs).catch((error: unknown) => {
    if (!(error instanceof GateRefusal) || error.rule !== 'upstream-unreachable') throw error;
    // The service's owner reads this: say where nothing listened, not just the last address tried.
    throw new GateRefusal(
      502,
      'upstream-unreachable',
      `nothing on this machine's loopback (${addresses.join(', ')}) accepted a connection on port ${destination.port}: is the service running, and listening there?`,
    );
  });
}

export async function connectUpstream(
  addresses: readonly string[],
  port: number,
  timeoutMs: number,
): Promise<{ socket: Socket; address: string }> {
  const deadline = Date.now() + timeoutMs;
  let lastRefusal: GateRefusal | undefined;
  for (const [index, address] of addresses.entries()) {
    const remaining = addresses.length - index;
    const attemptMs = Math.max(MINIMUM_ATTEMPT_MS, Math.floor((deadline - Date.now()) / remaining));
    try {
      return { socket: await connectOnce(address, port, attemptMs), address };
    } catch (error) {
      if (!(error instanceof GateRefusal)) throw error;
      lastRefusal = error;
      if (Date.now() >= deadline) break;
    }
  }
  throw lastRefusal ?? new GateRefusal(502, 'upstream-unreachable', 'no address to connect to');
}

function connectOnce(address: string, port: number, timeoutMs: number): Promise<Socket> {
  if (isIP(address) === 0) throw new Error(`connectUpstream needs a checked address, not ${address}`);
  return new Promise((resolve, reject) => {
    const socket = connect({ host: address, port, allowHalfOpen: true, noDelay: true });
    const timer = setTimeout(() => {
      socket.destroy();
      reject(
        new GateRefusal(504, 'connect-timeout', `no connection to ${address} port ${port} within ${timeoutMs} ms`),
      );
    }, timeoutMs);
    const onError = (error: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      reject(
        new GateRefusal(
          502,
          'upstream-unreachable',
          `could not connect to ${address} port ${port}: ${error.code ?? error.message}`,
        ),
      );
    };
    socket.once('error', onError);
    socket.once('connect', () => {
      clearTimeout(timer);
      socket.off('error', onError);
      // Kept until the relay listens, so an error in between does not go unhandled.
      socket.on('error', () => {});
      resolve(socket);
    });
  });
}
