/**
 * Gates for many sessions on one host: `openChannel` starts a session's own gate on a unix socket
 * of its own, which the backend binds into that session's sandboxes. Its shape is net-wire's
 * `NetworkGate` (src/network/gate-channel.ts on that branch), so a session can be given one.
 */
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startGate } from './gate.js';
import type { DestinationSecret, GateLimits, GateLog, GateResolver } from './gate-types.js';
import { parseNetworkPolicy } from './policy.js';

export interface GateHostOptions {
  /** Where each session's socket directory is made. @default the system's temporary directory */
  directory?: string;
  limits?: GateLimits;
  logger?: (entry: GateLog) => void;
  /** For tests; see `GateResolver`. */
  resolve?: GateResolver;
}

export interface GateChannelRequest {
  sessionId: string;
  /** Allow-list entries, as `parseNetworkPolicy` reads them; a bad one throws `NetworkPolicyError`. */
  allow: readonly string[];
  secrets?: readonly DestinationSecret[];
}

export interface GateChannel {
  /** The host path of the session's gate socket. */
  readonly socketPath: string;
  /** Stops the session's gate (its open connections end) and removes the socket. Idempotent. */
  close(): Promise<void>;
}

export function createGateHost(options: GateHostOptions = {}): {
  openChannel(request: GateChannelRequest): Promise<GateChannel>;
} {
  return {
    async openChannel(request) {
      const policy = parseNetworkPolicy(request.allow);
      const directory = await mkdtemp(path.join(options.directory ?? tmpdir(), 'sandcell-gate-'));
      // The sandbox runs as a uid of its own: it may reach the socket, not list the directory.
      await chmod(directory, 0o711);
      const socketPath = path.join(directory, 'gate.sock');
      try {
        const gate = await startGate({
          sessionId: request.sessionId,
          policy,
          listen: { path: socketPath },
          ...(options.limits ? { limits: options.limits } : {}),
          ...(options.logger ? { logger: options.logger } : {}),
          ...(options.resolve ? { resolve: options.resolve } : {}),
          ...(request.secrets ? { secrets: request.secrets } : {}),
        });
        await chmod(socketPath, 0o666);
        let closing: Promise<void> | undefined;
        return {
          socketPath,
          close: () => {
            closing ??= gate.close().then(() => rm(directory, { recursive: true, force: true }));
            return closing;
          },
        };
      } catch (error) {
        await rm(directory, { recursive: true, force: true });
        throw error;
      }
    },
  };
}
