/**
 * What a session needs from a network gate: a channel of its own, a unix socket on the host that the
 * gate serves under that session's allow-list alone (so no session can use another's allowances).
 */
export interface NetworkGate {
  openChannel(options: { sessionId: string; allow: readonly string[] }): Promise<NetworkChannel>;
}

export interface NetworkChannel {
  /** The host path of the socket; the backend binds it into every sandbox of the session. */
  readonly socketPath: string;
  /** Stops serving the session (its open connections end). Idempotent. */
  close(): Promise<void>;
}

/** What a backend is told when a sandbox has internet access. */
export interface SandboxNetwork {
  /** The host path of the session's gate socket. */
  socketPath: string;
  /** PEM certificates the sandbox trusts beside the system's. */
  trustedCertificates?: string;
}
