/**
 * The server's options as a caller gives them (`ServerOptions`, every field
 * optional) and as they are in force (`ResolvedServerOptions`): types only, a
 * leaf both the resolution (options.ts) and the numeric table
 * (numeric-options.ts) read.
 */
import type { ChatModel } from '../../agents/model.js';
import type { SandboxBackend } from '../../backends/spec.js';
import type { NetworkSecret } from '../../network/network-secret.js';
import type { SessionOptions } from '../../session/options.js';
import type { NetworkPermission } from './network-permission.js';

/** Limits that apply to each API key on its own (to the single local user when no key is set). */
export interface KeyLimits {
  /** Live sessions one key may hold. @default 32 (env SANDCELL_SESSIONS_PER_KEY) */
  maxSessions?: number;
  /** Executions one key may start per minute; conversation uploads count too (0 = no limit). @default 600 (env SANDCELL_EXECUTIONS_PER_MINUTE) */
  executionsPerMinute?: number;
  /** Largest request body carrying code (JSON), in bytes. @default 2 MiB + 64 KiB of envelope (env SANDCELL_MAX_REQUEST_BYTES, a size: `4M`) */
  maxRequestBytes?: number;
  /** Largest uploaded file, in bytes. @default 64 MiB (env SANDCELL_MAX_UPLOAD_BYTES, a size: `256M`) */
  maxUploadBytes?: number;
  /** Longest an execution may run; a longer requested timeout is lowered to this. @default 300_000 (env SANDCELL_MAX_EXECUTION_TIME, a duration: `5m`) */
  maxExecutionMs?: number;
  /** Executions that may wait in one session behind the running one; past it 429 `queue-full`. @default 16 (env SANDCELL_MAX_QUEUED_EXECUTIONS) */
  maxQueuedExecutions?: number;
  /** MCP sessions (Streamable HTTP at /mcp) one key may hold open. @default 16 (env SANDCELL_MCP_SESSIONS_PER_KEY) */
  maxMcpSessions?: number;
  /**
   * What all of one key's conversations keep together (turns as JSON, images); past it, the least
   * recently updated ones lose their oldest outputs, then their oldest turns.
   * @default 256 MiB (env SANDCELL_CONVERSATION_BYTES_PER_KEY, a size)
   */
  conversationBytes?: number;
  /**
   * What all of one key's snapshots (paused sessions' included) may take in the store; a snapshot
   * or pause past it is refused (507 `snapshot-quota-exceeded`), an idle pause past it ends the
   * session and says so when it is next asked for (410 `session-lost`).
   * @default 10 GiB (env SANDCELL_SNAPSHOT_BYTES_PER_KEY, a size: `20G`)
   */
  snapshotBytes?: number;
  /**
   * What all of one key's volumes may hold together. As root it is a filesystem of that size (a
   * sandbox writing past it meets a full disk); without root it is measured, and the content API
   * is held to it. @default 10 GiB (env SANDCELL_VOLUME_BYTES_PER_KEY, a size)
   */
  volumeBytes?: number;
}

export interface ServerOptions {
  /** Address to listen on. Without API keys only loopback addresses are allowed. @default '127.0.0.1' (env SANDCELL_HOST) */
  host?: string;
  /** Port; 0 picks a free one. @default 8080 (env SANDCELL_PORT) */
  port?: number;
  /**
   * Names (besides loopback: `localhost`, `127.0.0.1`, `[::1]`) that requests may carry in `Host`,
   * e.g. the name a reverse proxy forwards. Without API keys every other name is refused (421),
   * which stops DNS rebinding; with keys, `Host` is checked only when names are given here.
   * @default none (env SANDCELL_ALLOWED_HOSTS, comma-separated)
   */
  allowedHosts?: string[];
  /**
   * The parent domain of the URLs of the ports served in sandboxes: `PORT-ID.DOMAIN` reaches port
   * PORT in sandbox ID, and E2B's SDKs build those names from it (`getHost`). A name, with a port
   * when clients reach the server on one (`sandboxes.example.com`, `localhost:8080`); it needs a
   * wildcard DNS name (and certificate) pointing at this server, on a registrable domain of its own;
   * `https://` before it when clients reach it over TLS (a proxy in front), so URLs say https.
   * @default `localhost:PORT`, PORT the one a request came to (browsers resolve `*.localhost` to loopback) (env SANDCELL_SANDBOX_DOMAIN)
   */
  sandboxDomain?: string;
  /** Open TCP connections on the whole server; past it idle unauthenticated ones are closed first. @default 1024 (env SANDCELL_MAX_CONNECTIONS) */
  maxConnections?: number;
  /** Open TCP connections from one client address. @default 256 (env SANDCELL_MAX_CONNECTIONS_PER_ADDRESS) */
  maxConnectionsPerAddress?: number;
  /** A connection that has not sent a complete request header this long after it opened (or began a request) is closed. @default 10_000 (env SANDCELL_HEADERS_TIMEOUT, a duration: `10s`) */
  headersTimeoutMs?: number;
  /**
   * API keys (Bearer tokens). Each key is its own tenant: it sees only its own sessions.
   * A key may carry a name for logs and metrics, as `name:key`.
   * @default none (env SANDCELL_API_KEYS, comma-separated)
   */
  apiKeys?: string[];
  /**
   * The names of API keys (`name:key`) whose sessions run on the gVisor backend, whatever the server's:
   * a team's own keys on bubblewrap, untrusted ones behind gVisor's own kernel.
   * @default none (env SANDCELL_GVISOR_KEYS, comma-separated)
   */
  gvisorKeys?: string[];
  /** Per-key limits. */
  limits?: KeyLimits;
  /** Live sessions on the whole server. @default 64 (env SANDCELL_MAX_SESSIONS) */
  maxSessions?: number;
  /** Sessions kept warm, ready for the next new session, whatever the demand. @default 2 (env SANDCELL_POOL_SIZE) */
  poolSize?: number;
  /**
   * Most sessions kept warm (or starting) when new sessions arrive faster: above `poolSize`, the pool
   * sizes itself by the recent arrival rate, per environment, and shrinks back as it falls. Equal to
   * `poolSize`, the pool keeps exactly `poolSize`. @default the larger of 8 and `poolSize`; 0 when `poolSize` is 0 (env SANDCELL_POOL_MAX)
   */
  poolMax?: number;
  /**
   * RAM that all sessions' files (/mnt/data, a tmpfs each) may hold together, in bytes. Past it, writes
   * fail as on a full disk and new sessions get 503. Applies to the whole process (every session it
   * starts), where sandcell can resize the mounts: as root, with bubblewrap or a local Docker Engine.
   * @default half of the host's memory (env SANDCELL_DATA_BUDGET_BYTES, a size: `8G`)
   */
  dataBudgetBytes?: number;
  /** A session unused this long is closed. @default 1_200_000 (20 min) (env SANDCELL_IDLE_TIMEOUT, a duration: `20m`) */
  idleTimeoutMs?: number;
  /** Default time limit of an execution that asks for none. @default 60_000 (env SANDCELL_EXECUTION_TIMEOUT, a duration: `1m`) */
  executionTimeoutMs?: number;
  /** Modules imported in warm sessions. @default numpy, pandas, matplotlib (env SANDCELL_PRELOAD, comma-separated; "none" for none) */
  preloadModules?: string[];
  /**
   * Preload every session: those started for callers who find nothing warm, and warm ones while new
   * sessions come faster than the host can start them preloaded. By default those skip the preload (a
   * cheaper start; SessionPoolOptions.lightStartsWhenBehind and warmLightCpuShare).
   * @default false (env SANDCELL_PRELOAD_WHEN_BEHIND=1 for true)
   */
  preloadWhenBehind?: boolean;
  /** On shutdown, how long running executions get to finish before their sandboxes are closed. @default 30_000 */
  shutdownGraceMs?: number;
  /**
   * On shutdown, how long the server goes on serving as before while /readyz says it is draining,
   * so a load balancer's health check takes it out of rotation before it stops accepting
   * connections. @default 0 (env SANDCELL_DRAIN_DELAY)
   */
  drainDelayMs?: number;
  /** Where sandboxes run. @default `resolveBackend()`: the backend SANDCELL_BACKEND names, else bubblewrap */
  backend?: SandboxBackend;
  /** Further options of every session (limits, output caps, environment, `network`: the default of sessions that ask for none). */
  sessionOptions?: Omit<SessionOptions, 'id' | 'signal' | 'backend' | 'timeoutMs' | 'preloadModules'>;
  /**
   * The network any key may ask for when it creates a session: `'none'`, `'any'`, or the allow-list
   * rules it may pick from (a request beyond them gets 403).
   * @default the rules of `sessionOptions.network`, else 'none' (env SANDCELL_PERMITTED_HOSTS, comma-separated, or `any`)
   */
  networkPermission?: NetworkPermission;
  /**
   * The operator's secrets: a header the gate adds to requests for a host, for every session whose
   * allow-list covers that host (a key's own secret for the same host and header gives way). The
   * values stay in this process: never logged, never answered.
   */
  networkSecrets?: NetworkSecret[];
  /** Log level of the pino logger. @default 'info' (env SANDCELL_LOG_LEVEL) */
  logLevel?: string;
  /** Where logs go. @default process.stdout */
  logDestination?: NodeJS.WritableStream;
  /** The model conversations ask (POST /v1/conversations/{id}/messages). Without one, only notebook cells work. */
  model?: ChatModel;
  /** Whether code in conversations waits for approval unless the client says otherwise. @default 'auto' (env SANDCELL_APPROVAL: auto or ask) */
  approvalDefault?: 'auto' | 'ask';
  /** The built web UI served at `/`; false serves none. @default the package's dist/web (built by `npm run build`) */
  webRoot?: string | false;
  /**
   * What a conversation keeps of each piece of code's output (stdout, stderr and results together;
   * the error apart): the rest is cut, with a note. @default 1 MiB (env SANDCELL_CONVERSATION_OUTPUT_BYTES, a size)
   */
  conversationOutputBytes?: number;
  /**
   * What one conversation keeps in all (turns as JSON, images); past it, its oldest outputs are
   * dropped (a note stays), then its oldest turns. At most 64 MiB. @default 32 MiB (env SANDCELL_CONVERSATION_HISTORY_BYTES, a size)
   */
  conversationHistoryBytes?: number;
  /**
   * Where conversation histories are kept, so they survive a restart (read-only then: their
   * sessions are gone); false keeps them in memory only. `sandcell serve` defaults to
   * `$XDG_DATA_HOME/sandcell` (or `~/.local/share/sandcell`). @default env SANDCELL_STATE_DIR (`none`: false), else false
   */
  stateDirectory?: string | false;
  /**
   * Where paused sessions and their snapshots are kept, when not in the state directory:
   * `fs:///DIR`, `s3://BUCKET/PREFIX` or `azure://ACCOUNT/CONTAINER/PREFIX`, with the
   * credentials each cloud's SDK finds itself. Servers that share a store resume each other's
   * paused sessions; they must share SANDCELL_SNAPSHOT_SECRET too. Checked at start (written,
   * read back, deleted). @default env SANDCELL_STORE, else `<state directory>/store`
   */
  store?: string;
  /**
   * Where the other nodes of a cluster reach this one, e.g. `http://sandcell-0.sandcell-peers:8080`:
   * with it, this server is a node among those sharing its store (`store` must be named). Ids it
   * hands out name it, and it forwards each request for a session another node holds to that node.
   * Its name is SANDCELL_NODE_NAME (a DNS label), else the host's name. @default env SANDCELL_ADVERTISE_URL
   */
  advertiseUrl?: string;
  /** This server's name among the nodes sharing its store. @default env SANDCELL_NODE_NAME, else the host's name */
  nodeName?: string;
  /** How often a node says it is alive, in the store; one silent for four of these is dead. @default 2_000 */
  heartbeatMs?: number;
  /**
   * Publish what executions write: the files an execution creates or changes are uploaded to the
   * store as it ends, and each comes back with a signed read-only link (`files` in /v1's execution,
   * conversations' links). A session on /v1 may ask for it itself. @default false (env SANDCELL_PUBLISH_OUTPUTS=1 for true)
   */
  publishOutputs?: boolean;
  /** How long a published output's link works, at most 7 days. @default 3_600_000 (1 h) (env SANDCELL_LINK_TTL, a duration) */
  linkTtlMs?: number;
  /**
   * What a session idle for `idleTimeoutMs` becomes: `pause` writes its state to a snapshot (in
   * the state directory) and ends its sandbox, and its next request resumes it; `close` ends it
   * and its state. @default 'pause' (env SANDCELL_ON_IDLE)
   */
  onIdle?: 'pause' | 'close';
}

export interface ResolvedKeyLimits {
  maxSessions: number;
  executionsPerMinute: number;
  maxRequestBytes: number;
  maxUploadBytes: number;
  maxExecutionMs: number;
  maxQueuedExecutions: number;
  maxMcpSessions: number;
  conversationBytes: number;
  snapshotBytes: number;
  volumeBytes: number;
}

export interface ResolvedServerOptions {
  host: string;
  port: number;
  apiKeys: string[];
  gvisorKeys: string[];
  allowedHosts: string[];
  /** Lower case, `name` or `name:port`; undefined: `localhost:PORT` of each request's own port. */
  sandboxDomain: string | undefined;
  /** The scheme of the ports' URLs: https when the domain was given as `https://…`. */
  sandboxScheme: 'http' | 'https';
  maxConnections: number;
  maxConnectionsPerAddress: number;
  headersTimeoutMs: number;
  limits: ResolvedKeyLimits;
  maxSessions: number;
  poolSize: number;
  poolMax: number;
  dataBudgetBytes: number;
  idleTimeoutMs: number;
  executionTimeoutMs: number;
  preloadModules: string[];
  preloadWhenBehind: boolean;
  shutdownGraceMs: number;
  drainDelayMs: number;
  backend?: SandboxBackend;
  sessionOptions: NonNullable<ServerOptions['sessionOptions']>;
  networkPermission: NetworkPermission;
  networkSecrets: NetworkSecret[];
  logLevel: string;
  logDestination?: NodeJS.WritableStream;
  model?: ChatModel;
  approvalDefault: 'auto' | 'ask';
  webRoot: string | false;
  conversationOutputBytes: number;
  conversationHistoryBytes: number;
  stateDirectory: string | false;
  store?: string;
  advertiseUrl?: string;
  nodeName?: string;
  heartbeatMs: number;
  publishOutputs: boolean;
  linkTtlMs: number;
  onIdle: 'pause' | 'close';
  snapshotRetentionMs: number;
}
