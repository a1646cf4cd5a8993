/** Options of `sandcell serve` and `createServer()`, their defaults, environment fallbacks and validation. */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { ChatModel } from '../../agents/model.js';
import { defaultDataBudgetBytes } from '../../backends/data-budget.js';
import type { SandboxBackend } from '../../backends/spec.js';
import { InvalidInputError } from '../../errors.js';
import { type DurationUnit, parseDuration, parseSize } from '../../internal/units.js';
import { resolveNetworkOption } from '../../network/network-option.js';
import { checkNetworkSecret, type NetworkSecret } from '../../network/network-secret.js';
import { DEFAULT_FILE_TRANSFER_BYTES, DEFAULT_MAX_CODE_BYTES, type SessionOptions } from '../../session/options.js';
import { DEFAULT_IDLE_TIMEOUT_MS, DEFAULT_PRELOAD_MODULES } from '../../session/pool.js';
import {
  DEFAULT_CONVERSATION_BYTES_PER_KEY,
  DEFAULT_CONVERSATION_HISTORY_BYTES,
  DEFAULT_CONVERSATION_OUTPUT_BYTES,
  MAX_CONVERSATION_HISTORY_BYTES,
} from '../conversations/history-limits.js';
import { NO_STATE_DIRECTORY } from '../conversations/state-directory.js';
import { defaultPermission, type NetworkPermission } from './network-permission.js';

export const DEFAULT_HOST = '127.0.0.1';
export const DEFAULT_PORT = 8080;
export const DEFAULT_POOL_SIZE = 2;
/** Most warm sessions when demand calls for them: what 2 new sessions a second need with ~1 s cold starts. */
export const DEFAULT_POOL_MAX = 8;
export const DEFAULT_SERVER_MAX_SESSIONS = 64;
export const DEFAULT_SESSIONS_PER_KEY = 32;
export const DEFAULT_EXECUTIONS_PER_MINUTE = 600;
export const DEFAULT_MAX_EXECUTION_MS = 300_000;
export const DEFAULT_EXECUTION_TIMEOUT_MS = 60_000;
// The pool closes idle sessions, so its default is the server's.
export { DEFAULT_IDLE_TIMEOUT_MS };
export const DEFAULT_SHUTDOWN_GRACE_MS = 30_000;
export const DEFAULT_MAX_QUEUED_EXECUTIONS = 16;
export const DEFAULT_MCP_SESSIONS_PER_KEY = 16;
export const DEFAULT_MAX_CONNECTIONS = 1024;
export const DEFAULT_MAX_CONNECTIONS_PER_ADDRESS = 256;
export const DEFAULT_HEADERS_TIMEOUT_MS = 10_000;
const MINIMUM_DATA_BUDGET_BYTES = 1024 * 1024;

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
}

export interface ResolvedServerOptions {
  host: string;
  port: number;
  apiKeys: string[];
  allowedHosts: string[];
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
}

type Environment = Record<string, string | undefined>;

function list(value: string | undefined): string[] | undefined {
  if (value === undefined) return undefined;
  return value
    .split(',')
    .map((item) => item.trim())
    .filter((item) => item !== '');
}

function numberFrom(environment: Environment, name: string): number | undefined {
  const raw = environment[name];
  if (raw === undefined || raw.trim() === '') return undefined;
  const value = Number(raw);
  if (!Number.isFinite(value)) throw new InvalidInputError(`${name} must be a number; got ${JSON.stringify(raw)}.`);
  return value;
}

/** A size variable (`64M`, `2G`, or bytes), or undefined when unset. */
function sizeFrom(environment: Environment, name: string): number | undefined {
  const raw = environment[name];
  if (raw === undefined || raw.trim() === '') return undefined;
  const bytes = parseSize(raw);
  if (bytes === undefined) {
    throw new InvalidInputError(
      `${name} takes a size such as 64M or 2G (a bare number is bytes); got ${JSON.stringify(raw)}.`,
    );
  }
  return bytes;
}

/**
 * A duration variable in milliseconds (`30s`, `5m`, `1h`; a bare number is seconds), or undefined when
 * unset. Its old name ending in `_MS` (`legacy`) is still read when the new one is not set, a bare number
 * there in milliseconds as that name says, so a configuration written for it keeps its meaning.
 */
function durationFrom(environment: Environment, name: string, legacy: string): number | undefined {
  const variables: [string, DurationUnit][] = [
    [name, 's'],
    [legacy, 'ms'],
  ];
  for (const [variable, bareUnit] of variables) {
    const raw = environment[variable];
    if (raw === undefined || raw.trim() === '') continue;
    const milliseconds = parseDuration(raw, bareUnit);
    if (milliseconds === undefined) {
      throw new InvalidInputError(
        variable === name
          ? `${name} takes a duration such as 30s, 5m or 1h (a bare number is seconds); got ${JSON.stringify(raw)}.`
          : `${legacy} takes milliseconds or a duration such as 30s; got ${JSON.stringify(raw)}. It is the old name of ${name}, which takes durations (a bare number is seconds).`,
      );
    }
    return milliseconds;
  }
  return undefined;
}

function count(name: string, value: number | undefined, fallback: number, minimum: number): number {
  const resolved = value ?? fallback;
  if (!Number.isInteger(resolved) || resolved < minimum) {
    throw new InvalidInputError(`\`${name}\` must be a whole number of at least ${minimum}; got ${String(resolved)}.`);
  }
  return resolved;
}

function approvalMode(value: string | undefined): 'auto' | 'ask' {
  if (value === undefined || value === '' || value === 'auto') return 'auto';
  if (value === 'ask') return 'ask';
  throw new InvalidInputError(`The approval default is auto or ask; got ${JSON.stringify(value)} (SANDCELL_APPROVAL).`);
}

/**
 * An allowed `Host` name as compared: lower case, without a port, IPv6 in brackets.
 * Refuses what cannot be a host name, so a typo fails at start rather than refusing every request.
 */
function allowedHostName(name: string): string {
  const bare = name.trim().toLowerCase();
  const bracketed = bare.includes(':') && !bare.startsWith('[') ? `[${bare}]` : bare;
  let parsed: URL | undefined;
  try {
    parsed = new URL(`http://${bracketed}`);
  } catch {
    parsed = undefined;
  }
  if (!parsed || parsed.hostname !== bracketed || parsed.pathname !== '/') {
    throw new InvalidInputError(
      `An allowed host is a name or address without port or path, e.g. sandcell.example.com; got ${JSON.stringify(name)} (--allowed-host, SANDCELL_ALLOWED_HOSTS).`,
    );
  }
  return parsed.hostname;
}

/** True for addresses only this machine can reach. */
export function isLoopback(host: string): boolean {
  const bare = host.replace(/^\[|\]$/g, '').toLowerCase();
  return bare === 'localhost' || bare === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(bare);
}

/** The three history bounds nest: a step's output within a conversation, a conversation within a key. */
function checkConversationBounds(resolved: ResolvedServerOptions): void {
  const output = resolved.conversationOutputBytes;
  const history = resolved.conversationHistoryBytes;
  const key = resolved.limits.conversationBytes;
  if (history > MAX_CONVERSATION_HISTORY_BYTES) {
    throw new InvalidInputError(
      `\`conversationHistoryBytes\` is at most ${MAX_CONVERSATION_HISTORY_BYTES} (a history is answered as one JSON document); got ${history} (SANDCELL_CONVERSATION_HISTORY_BYTES).`,
    );
  }
  if (output > history || history > key) {
    throw new InvalidInputError(
      `Conversation bounds must nest: conversationOutputBytes (${output}) ≤ conversationHistoryBytes (${history}) ≤ limits.conversationBytes (${key}); check SANDCELL_CONVERSATION_OUTPUT_BYTES, SANDCELL_CONVERSATION_HISTORY_BYTES and SANDCELL_CONVERSATION_BYTES_PER_KEY.`,
    );
  }
}

/** Fills defaults from the environment, then from constants; refuses a non-loopback bind without keys. */
export function resolveServerOptions(
  options: ServerOptions = {},
  environment: Environment = process.env,
): ResolvedServerOptions {
  const limits = options.limits ?? {};
  const maxCodeBytes = options.sessionOptions?.maxCodeBytes ?? DEFAULT_MAX_CODE_BYTES;
  const host = options.host ?? environment.SANDCELL_HOST ?? DEFAULT_HOST;
  const apiKeys = options.apiKeys ?? list(environment.SANDCELL_API_KEYS) ?? [];
  const preload = options.preloadModules ?? list(environment.SANDCELL_PRELOAD);
  const resolved: ResolvedServerOptions = {
    host,
    port: count('port', options.port ?? numberFrom(environment, 'SANDCELL_PORT'), DEFAULT_PORT, 0),
    apiKeys,
    allowedHosts: (options.allowedHosts ?? list(environment.SANDCELL_ALLOWED_HOSTS) ?? []).map(allowedHostName),
    maxConnections: count(
      'maxConnections',
      options.maxConnections ?? numberFrom(environment, 'SANDCELL_MAX_CONNECTIONS'),
      DEFAULT_MAX_CONNECTIONS,
      1,
    ),
    maxConnectionsPerAddress: count(
      'maxConnectionsPerAddress',
      options.maxConnectionsPerAddress ?? numberFrom(environment, 'SANDCELL_MAX_CONNECTIONS_PER_ADDRESS'),
      DEFAULT_MAX_CONNECTIONS_PER_ADDRESS,
      1,
    ),
    headersTimeoutMs: count(
      'headersTimeoutMs',
      options.headersTimeoutMs ?? durationFrom(environment, 'SANDCELL_HEADERS_TIMEOUT', 'SANDCELL_HEADERS_TIMEOUT_MS'),
      DEFAULT_HEADERS_TIMEOUT_MS,
      1,
    ),
    limits: {
      maxSessions: count(
        'limits.maxSessions',
        limits.maxSessions ?? numberFrom(environment, 'SANDCELL_SESSIONS_PER_KEY'),
        DEFAULT_SESSIONS_PER_KEY,
        1,
      ),
      executionsPerMinute: count(
        'limits.executionsPerMinute',
        limits.executionsPerMinute ?? numberFrom(environment, 'SANDCELL_EXECUTIONS_PER_MINUTE'),
        DEFAULT_EXECUTIONS_PER_MINUTE,
        0,
      ),
      maxRequestBytes: count(
        'limits.maxRequestBytes',
        limits.maxRequestBytes ?? sizeFrom(environment, 'SANDCELL_MAX_REQUEST_BYTES'),
        maxCodeBytes + 64 * 1024,
        1024,
      ),
      maxUploadBytes: count(
        'limits.maxUploadBytes',
        limits.maxUploadBytes ?? sizeFrom(environment, 'SANDCELL_MAX_UPLOAD_BYTES'),
        options.sessionOptions?.fileTransferBytes ?? DEFAULT_FILE_TRANSFER_BYTES,
        1,
      ),
      maxExecutionMs: count(
        'limits.maxExecutionMs',
        limits.maxExecutionMs ?? durationFrom(environment, 'SANDCELL_MAX_EXECUTION_TIME', 'SANDCELL_MAX_EXECUTION_MS'),
        DEFAULT_MAX_EXECUTION_MS,
        1,
      ),
      maxQueuedExecutions: count(
        'limits.maxQueuedExecutions',
        limits.maxQueuedExecutions ?? numberFrom(environment, 'SANDCELL_MAX_QUEUED_EXECUTIONS'),
        DEFAULT_MAX_QUEUED_EXECUTIONS,
        0,
      ),
      maxMcpSessions: count(
        'limits.maxMcpSessions',
        limits.maxMcpSessions ?? numberFrom(environment, 'SANDCELL_MCP_SESSIONS_PER_KEY'),
        DEFAULT_MCP_SESSIONS_PER_KEY,
        1,
      ),
      conversationBytes: count(
        'limits.conversationBytes',
        limits.conversationBytes ?? sizeFrom(environment, 'SANDCELL_CONVERSATION_BYTES_PER_KEY'),
        DEFAULT_CONVERSATION_BYTES_PER_KEY,
        1024,
      ),
    },
    maxSessions: count(
      'maxSessions',
      options.maxSessions ?? numberFrom(environment, 'SANDCELL_MAX_SESSIONS'),
      DEFAULT_SERVER_MAX_SESSIONS,
      1,
    ),
    poolSize: count(
      'poolSize',
      options.poolSize ?? numberFrom(environment, 'SANDCELL_POOL_SIZE'),
      DEFAULT_POOL_SIZE,
      0,
    ),
    // Set below, once poolSize is known (its default follows it).
    poolMax: 0,
    dataBudgetBytes: count(
      'dataBudgetBytes',
      options.dataBudgetBytes ?? sizeFrom(environment, 'SANDCELL_DATA_BUDGET_BYTES'),
      defaultDataBudgetBytes({}),
      MINIMUM_DATA_BUDGET_BYTES,
    ),
    idleTimeoutMs: count(
      'idleTimeoutMs',
      options.idleTimeoutMs ?? durationFrom(environment, 'SANDCELL_IDLE_TIMEOUT', 'SANDCELL_IDLE_TIMEOUT_MS'),
      DEFAULT_IDLE_TIMEOUT_MS,
      1,
    ),
    executionTimeoutMs: count(
      'executionTimeoutMs',
      options.executionTimeoutMs ??
        durationFrom(environment, 'SANDCELL_EXECUTION_TIMEOUT', 'SANDCELL_EXECUTION_TIMEOUT_MS'),
      DEFAULT_EXECUTION_TIMEOUT_MS,
      1,
    ),
    preloadModules: preload?.length === 1 && preload[0] === 'none' ? [] : (preload ?? DEFAULT_PRELOAD_MODULES),
    preloadWhenBehind:
      options.preloadWhenBehind ?? ['1', 'true'].includes(environment.SANDCELL_PRELOAD_WHEN_BEHIND ?? ''),
    shutdownGraceMs: count('shutdownGraceMs', options.shutdownGraceMs, DEFAULT_SHUTDOWN_GRACE_MS, 0),
    backend: options.backend,
    sessionOptions: options.sessionOptions ?? {},
    networkPermission: networkPermissionOf(options, environment),
    networkSecrets: (options.networkSecrets ?? []).map(checkNetworkSecret),
    logLevel: options.logLevel ?? environment.SANDCELL_LOG_LEVEL ?? 'info',
    logDestination: options.logDestination,
    model: options.model,
    approvalDefault: approvalMode(options.approvalDefault ?? environment.SANDCELL_APPROVAL),
    webRoot: options.webRoot ?? fileURLToPath(new URL('../../../dist/web', import.meta.url)),
    conversationOutputBytes: count(
      'conversationOutputBytes',
      options.conversationOutputBytes ?? sizeFrom(environment, 'SANDCELL_CONVERSATION_OUTPUT_BYTES'),
      DEFAULT_CONVERSATION_OUTPUT_BYTES,
      1024,
    ),
    conversationHistoryBytes: count(
      'conversationHistoryBytes',
      options.conversationHistoryBytes ?? sizeFrom(environment, 'SANDCELL_CONVERSATION_HISTORY_BYTES'),
      DEFAULT_CONVERSATION_HISTORY_BYTES,
      1024,
    ),
    stateDirectory: options.stateDirectory ?? environment.SANDCELL_STATE_DIR ?? false,
  };
  checkConversationBounds(resolved);
  resolved.poolMax = resolvePoolMax(options.poolMax ?? numberFrom(environment, 'SANDCELL_POOL_MAX'), resolved.poolSize);
  if (resolved.stateDirectory === '' || resolved.stateDirectory === NO_STATE_DIRECTORY) resolved.stateDirectory = false;
  if (resolved.stateDirectory !== false) resolved.stateDirectory = path.resolve(resolved.stateDirectory);
  for (const key of apiKeys) {
    const secret = key.includes(':') ? key.slice(key.indexOf(':') + 1) : key;
    if (secret.length < 8 || /\s/.test(key)) {
      throw new InvalidInputError(
        'Each API key must be at least 8 characters without spaces (as `key` or `name:key`); check --api-key or SANDCELL_API_KEYS.',
      );
    }
  }
  if (apiKeys.length === 0 && !isLoopback(host)) {
    throw new InvalidInputError(
      `Refusing to listen on ${host} without API keys: anyone who can reach it could run code. Set SANDCELL_API_KEYS (or --api-key), or listen on 127.0.0.1.`,
    );
  }
  return resolved;
}

function networkPermissionOf(options: ServerOptions, environment: Environment): NetworkPermission {
  const fromEnvironment = list(environment.SANDCELL_PERMITTED_HOSTS);
  const permission =
    options.networkPermission ??
    (fromEnvironment?.length === 1 && (fromEnvironment[0] === 'any' || fromEnvironment[0] === 'none')
      ? (fromEnvironment[0] as 'any' | 'none')
      : fromEnvironment) ??
    defaultPermission(options.sessionOptions?.network);
  if (Array.isArray(permission) && permission.length === 0) return 'none';
  // A bad rule fails at start, not at the first request that names it.
  if (Array.isArray(permission)) resolveNetworkOption({ allow: permission });
  return permission;
}

/**
 * `poolMax`: at least `poolSize` (equal turns sizing by demand off); by default 8, or `poolSize` if
 * larger. Asking for no warm sessions (`poolSize` 0) asks for none by demand either, unless `poolMax` says so.
 */
function resolvePoolMax(value: number | undefined, poolSize: number): number {
  const poolMax = count('poolMax', value, poolSize === 0 ? 0 : Math.max(DEFAULT_POOL_MAX, poolSize), 0);
  if (poolMax < poolSize) {
    throw new InvalidInputError(
      `\`poolMax\` (--pool-max, SANDCELL_POOL_MAX) must be at least \`poolSize\` (${poolSize}); got ${poolMax}. Equal keeps exactly poolSize warm.`,
    );
  }
  return poolMax;
}
