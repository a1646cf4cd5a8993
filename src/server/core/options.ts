/** Options of `sandcell serve` and `createServer()`, their defaults, environment fallbacks and validation. */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { InvalidInputError } from '../../errors.js';
import { resolveNetworkOption } from '../../network/network-option.js';
import { checkNetworkSecret } from '../../network/network-secret.js';
import { DEFAULT_IDLE_TIMEOUT_MS, DEFAULT_PRELOAD_MODULES } from '../../session/pool.js';
import { MAX_LINK_TTL_MS } from '../../store/object-store.js';
import { parseStoreLocation } from '../../store/open-object-store.js';
import { MAX_CONVERSATION_HISTORY_BYTES } from '../conversations/history-limits.js';
import { NO_STATE_DIRECTORY } from '../conversations/state-directory.js';
import { defaultPermission, type NetworkPermission } from './network-permission.js';
import { resolveNumbers } from './numeric-options.js';

export {
  DEFAULT_EXECUTION_TIMEOUT_MS,
  DEFAULT_EXECUTIONS_PER_MINUTE,
  DEFAULT_HEADERS_TIMEOUT_MS,
  DEFAULT_MAX_CONNECTIONS,
  DEFAULT_MAX_CONNECTIONS_PER_ADDRESS,
  DEFAULT_MAX_EXECUTION_MS,
  DEFAULT_MAX_QUEUED_EXECUTIONS,
  DEFAULT_MCP_SESSIONS_PER_KEY,
  DEFAULT_POOL_MAX,
  DEFAULT_POOL_SIZE,
  DEFAULT_PORT,
  DEFAULT_SERVER_MAX_SESSIONS,
  DEFAULT_SESSIONS_PER_KEY,
  DEFAULT_SHUTDOWN_GRACE_MS,
} from './numeric-options.js';

export const DEFAULT_HOST = '127.0.0.1';

import type { ResolvedServerOptions, ServerOptions } from './server-options.js';

export type { KeyLimits, ResolvedKeyLimits, ResolvedServerOptions, ServerOptions } from './server-options.js';
// The pool closes idle sessions, so its default is the server's.
export { DEFAULT_IDLE_TIMEOUT_MS };

type Environment = Record<string, string | undefined>;

function list(value: string | undefined): string[] | undefined {
  if (value === undefined) return undefined;
  return value
    .split(',')
    .map((item) => item.trim())
    .filter((item) => item !== '');
}

function idleMode(value: string | undefined): 'pause' | 'close' {
  if (value === undefined || value === '' || value === 'pause') return 'pause';
  if (value === 'close') return 'close';
  throw new InvalidInputError(
    `What an idle session becomes is pause or close; got ${JSON.stringify(value)} (--on-idle, SANDCELL_ON_IDLE).`,
  );
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

/**
 * The sandbox domain as compared: lower case, a host name of at least one dot or `localhost`, with an
 * optional port; no address (`PORT-ID.127.0.0.1` names nothing), no path. `https://` before it says
 * the URLs of ports are https (a TLS proxy in front, with a wildcard certificate); else http.
 */
function sandboxDomainOption(
  domain: string | undefined,
): Pick<ResolvedServerOptions, 'sandboxDomain' | 'sandboxScheme'> {
  if (domain === undefined) return { sandboxDomain: undefined, sandboxScheme: 'http' };
  const given = domain.trim().toLowerCase();
  const scheme = given.startsWith('https://') ? 'https' : 'http';
  const bare = given.replace(/^https?:\/\//, '');
  let parsed: URL | undefined;
  try {
    parsed = new URL(`http://${bare}`);
  } catch {
    parsed = undefined;
  }
  const name = parsed?.hostname ?? '';
  if (
    !parsed ||
    parsed.host !== bare ||
    parsed.pathname !== '/' ||
    !/^[a-z0-9-]+(\.[a-z0-9-]+)*$/.test(name) ||
    /^[0-9.]+$/.test(name) ||
    (!name.includes('.') && name !== 'localhost')
  ) {
    throw new InvalidInputError(
      `A sandbox domain is a host name, with a port if clients use one, and https:// before it if they reach it over TLS, e.g. https://sandboxes.example.com or localhost:8080; got ${JSON.stringify(domain)} (--sandbox-domain, SANDCELL_SANDBOX_DOMAIN).`,
    );
  }
  return { sandboxDomain: bare, sandboxScheme: scheme };
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
  const host = options.host ?? environment.SANDCELL_HOST ?? DEFAULT_HOST;
  const apiKeys = options.apiKeys ?? list(environment.SANDCELL_API_KEYS) ?? [];
  const preload = options.preloadModules ?? list(environment.SANDCELL_PRELOAD);
  const resolved: ResolvedServerOptions = {
    // Ports, limits, sizes and durations: one table (numeric-options.ts).
    ...resolveNumbers(options, environment),
    host,
    apiKeys,
    gvisorKeys: options.gvisorKeys ?? list(environment.SANDCELL_GVISOR_KEYS) ?? [],
    allowedHosts: (options.allowedHosts ?? list(environment.SANDCELL_ALLOWED_HOSTS) ?? []).map(allowedHostName),
    ...sandboxDomainOption(options.sandboxDomain ?? (environment.SANDCELL_SANDBOX_DOMAIN || undefined)),
    preloadModules: preload?.length === 1 && preload[0] === 'none' ? [] : (preload ?? DEFAULT_PRELOAD_MODULES),
    preloadWhenBehind:
      options.preloadWhenBehind ?? ['1', 'true'].includes(environment.SANDCELL_PRELOAD_WHEN_BEHIND ?? ''),
    backend: options.backend,
    sessionOptions: options.sessionOptions ?? {},
    networkPermission: networkPermissionOf(options, environment),
    networkSecrets: (options.networkSecrets ?? []).map(checkNetworkSecret),
    logLevel: options.logLevel ?? environment.SANDCELL_LOG_LEVEL ?? 'info',
    logDestination: options.logDestination,
    model: options.model,
    approvalDefault: approvalMode(options.approvalDefault ?? environment.SANDCELL_APPROVAL),
    webRoot: options.webRoot ?? fileURLToPath(new URL('../../../dist/web', import.meta.url)),
    stateDirectory: options.stateDirectory ?? environment.SANDCELL_STATE_DIR ?? false,
    ...storeOf(options.store ?? (environment.SANDCELL_STORE || undefined)),
    ...advertiseUrlOf(options.advertiseUrl ?? (environment.SANDCELL_ADVERTISE_URL || undefined)),
    heartbeatMs: options.heartbeatMs ?? 2_000,
    ...(options.nodeName !== undefined ? { nodeName: options.nodeName } : {}),
    publishOutputs: options.publishOutputs ?? ['1', 'true'].includes(environment.SANDCELL_PUBLISH_OUTPUTS ?? ''),
    onIdle: idleMode(options.onIdle ?? environment.SANDCELL_ON_IDLE),
  };
  checkConversationBounds(resolved);
  if (resolved.linkTtlMs > MAX_LINK_TTL_MS) {
    throw new InvalidInputError(
      `\`linkTtlMs\` (--link-ttl, SANDCELL_LINK_TTL) is at most 7 days (a presigned link's longest); got ${resolved.linkTtlMs} ms.`,
    );
  }
  checkPoolMax(resolved);
  if (resolved.advertiseUrl !== undefined && resolved.store === undefined) {
    throw new InvalidInputError(
      '--advertise-url (SANDCELL_ADVERTISE_URL) makes this server a node of a cluster, whose nodes share one store: name it with --store (SANDCELL_STORE).',
    );
  }
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

/** Where peers reach this node: an http(s) URL with no path, query or credentials. */
function advertiseUrlOf(url: string | undefined): { advertiseUrl?: string } {
  if (url === undefined) return {};
  let parsed: URL | undefined;
  try {
    parsed = new URL(url);
  } catch {
    parsed = undefined;
  }
  if (
    !parsed ||
    !['http:', 'https:'].includes(parsed.protocol) ||
    parsed.username !== '' ||
    parsed.password !== '' ||
    parsed.search !== '' ||
    parsed.hash !== '' ||
    parsed.pathname !== '/'
  ) {
    throw new InvalidInputError(
      `--advertise-url (SANDCELL_ADVERTISE_URL) is where the other nodes reach this one, such as http://sandcell-0.sandcell-peers:8080, with no path; got ${JSON.stringify(url)}.`,
    );
  }
  return { advertiseUrl: parsed.origin };
}

/** The store's location, checked for its form now (its credentials are checked when the server starts). */
function storeOf(store: string | undefined): { store?: string } {
  if (store === undefined) return {};
  parseStoreLocation(store);
  return { store };
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

/** `poolMax` is at least `poolSize`: equal turns sizing by demand off. */
function checkPoolMax({ poolMax, poolSize }: ResolvedServerOptions): void {
  if (poolMax < poolSize) {
    throw new InvalidInputError(
      `\`poolMax\` (--pool-max, SANDCELL_POOL_MAX) must be at least \`poolSize\` (${poolSize}); got ${poolMax}. Equal keeps exactly poolSize warm.`,
    );
  }
}
