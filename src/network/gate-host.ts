/**
 * Gates for many sessions on one host: `openChannel` starts a session's own gate on a unix socket
 * of its own, which the backend binds into that session's sandboxes. The socket belongs to the uid
 * the session's sandboxes run as, mode 0600, in a directory others may cross but not list: no other
 * local user (another session's sandbox included) can connect to it. A sandcell that is not root
 * cannot give it away: it stays ours, 0660, of our own gid, which the sandboxes are given.
 */
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startGate } from './gate.js';
import type { NetworkChannel, NetworkGate } from './gate-channel.js';
import type { GateLimits, GateLog, GateResolver } from './gate-types.js';
import { mergeSecrets, type NetworkSecret } from './network-secret.js';
import { parseNetworkPolicy } from './policy.js';
import { restrictToOwner } from './socket-owner.js';

export interface GateHostOptions {
  /** Where each session's socket directory is made. @default the system's temporary directory */
  directory?: string;
  limits?: GateLimits;
  logger?: (entry: GateLog) => void;
  /** For tests; see `GateResolver`. */
  resolve?: GateResolver;
  /**
   * The operator's secrets: every session whose allow-list covers a secret's host gets it (and its
   * own secret for the same host and header gives way).
   */
  secrets?: readonly NetworkSecret[];
}

export type GateChannelRequest = Parameters<NetworkGate['openChannel']>[0];
export type GateChannel = NetworkChannel;

export function createGateHost(options: GateHostOptions = {}): NetworkGate {
  return {
    async openChannel(request) {
      const policy = parseNetworkPolicy(request.allow);
      const secrets = mergeSecrets(request.secrets ?? [], options.secrets ?? [], policy);
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
          ...(secrets.length > 0 ? { secrets } : {}),
          ...(request.trustedCertificates !== undefined ? { trustedCertificates: request.trustedCertificates } : {}),
        });
        let socketGroup: number | undefined;
        try {
          socketGroup = await restrictToOwner(socketPath, request.owner);
        } catch (error) {
          await gate.close();
          throw error;
        }
        let closing: Promise<void> | undefined;
        return {
          socketPath,
          ...(gate.certificateAuthority !== undefined ? { certificateAuthority: gate.certificateAuthority } : {}),
          ...(socketGroup !== undefined ? { socketGroup } : {}),
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
