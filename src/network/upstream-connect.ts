/**
 * Opens the connection to a destination the gate has checked: to its address, never its name,
 * so nothing is looked up again between the check and the connect.
 */
import { connect, isIP, type Socket } from 'node:net';
import { GateRefusal } from './refusal.js';

export function connectUpstream(address: string, port: number, timeoutMs: number): Promise<Socket> {
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
