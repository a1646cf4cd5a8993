/**
 * What a session needs from a network gate: a channel of its own, a unix socket on the host that the
 * gate serves under that session's allow-list alone (so no session can use another's allowances).
 */
import type { NetworkSecret } from './network-secret.js';

export interface NetworkGate {
  openChannel(options: {
    sessionId: string;
    allow: readonly string[];
    /** Headers the gate adds for hosts the allow-list covers (network-secret.ts). */
    secrets?: readonly NetworkSecret[];
    /** PEM authorities trusted beside the system's when the gate itself connects to a secret host. */
    trustedCertificates?: string;
    /**
     * The host uid and gid the session's sandboxes run as: the socket is theirs alone (mode 0600).
     * Absent: they run as this process's uid, which then owns the socket. A process that may not
     * give a file away (not root) opens it to its own group instead: see `socketGroup`.
     */
    owner?: { uid: number; gid: number };
  }): Promise<NetworkChannel>;
}

export interface NetworkChannel {
  /** The host path of the socket; the backend binds it into every sandbox of the session. */
  readonly socketPath: string;
  /** PEM of the session's own authority when it has secrets; the sandbox must trust it. */
  readonly certificateAuthority?: string;
  /**
   * Set when the socket could not be given to the owner: it is this process's, mode 0660, of this
   * gid, and the sandboxes must hold the gid as a supplementary group to connect.
   */
  readonly socketGroup?: number;
  /** Stops serving the session (its open connections end). Idempotent. */
  close(): Promise<void>;
}

/** What a backend is told when a sandbox has internet access. */
export interface SandboxNetwork {
  /** The host path of the session's gate socket. */
  socketPath: string;
  /** A supplementary gid the sandbox's processes need to connect to the socket (NetworkChannel). */
  socketGroup?: number;
  /** PEM certificates the sandbox trusts beside the system's. */
  trustedCertificates?: string;
  /** Variables the sandbox's tools need for this network beyond the proxy's (pip's index: package-index.ts). */
  environment?: Record<string, string>;
}
