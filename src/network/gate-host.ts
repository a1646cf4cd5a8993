/**
 * Gates for many sessions on one host: `openChannel` starts a session's own gate on a unix socket
 * of its own, which the backend binds into that session's sandboxes. The socket belongs to the uid
 * the session's sandboxes run as, mode 0600, in a directory others may cross but not list: no other
 * local user (another session's sandbox included) can connect to it. A sandcell that is not root
 * cannot give it away: it stays ours, 0660, of our own gid, which the sandboxes are given.
 */
import { chmod, chown, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startGate } from './gate.js';
import type { NetworkChannel, NetworkGate } from './gate-channel.js';
import type { GateLimits, GateLog, GateResolver } from './gate-types.js';
import { mergeSecrets, type NetworkSecret } from './network-secret.js';
import { parseNetworkPolicy } from './policy.js';

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

/**
 * Connecting to a unix socket needs write permission on it: 0600 and owned by the sandbox's uid
 * lets that uid in and no other (root aside). Without an owner the sandbox runs as this process's
 * uid, which already owns the socket. Handing a socket to another uid needs root; a sandcell that
 * is not root (Docker without root) keeps it, 0660, of its own effective gid (a process may always
 * give its files its own group), and returns that gid: the backend adds it to the sandbox's
 * groups. Other local users are not in that group (Debian gives each user a group of their own).
 */
async function restrictToOwner(
  socketPath: string,
  owner: { uid: number; gid: number } | undefined,
): Promise<number | undefined> {
  if (owner && owner.uid !== process.getuid?.()) {
    const given = await chown(socketPath, owner.uid, owner.gid).then(
      () => true,
      (error: NodeJS.ErrnoException) => {
        if (error.code === 'EPERM' && process.getuid?.() !== 0) return false;
        throw error;
      },
    );
    if (!given) {
      const group = process.getegid?.() ?? owner.gid;
      await chown(socketPath, -1, group);
      await chmod(socketPath, 0o660);
      return group;
    }
  }
  await chmod(socketPath, 0o600);
  return undefined;
}
