/** The pieces behind every front door of the server: logger, metrics, pool, registry. */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import pino, { type Logger } from 'pino';
import { sharedDataBudget } from '../../backends/data-budget.js';
import type { OomScoreOutcome } from '../../internal/oom-score.js';
import { createGateHost } from '../../network/gate-host.js';
import { SERVER_LIMIT_NAMES } from '../../session/limit-names.js';
import { DEFAULT_MAX_CODE_BYTES } from '../../session/options.js';
import { SessionPool } from '../../session/pool.js';
import { VolumeStore } from '../../volumes/volume-store.js';
import { ConversationHandover } from '../conversations/handover.js';
import { ConversationStore, MAX_HISTORY_FILE_BYTES } from '../conversations/store.js';
import { ApiKeys } from './auth.js';
import { Cluster } from './cluster.js';
import type { ServerContext } from './context.js';
import { Metrics } from './metrics.js';
import type { ResolvedServerOptions } from './options.js';
import { OutputPublisher } from './output-publisher.js';
import { PausedSessions } from './paused-sessions.js';
import { RateLimiter } from './rate-limiter.js';
import { SessionRegistry } from './registry.js';
import { VolumeHomes } from './volume-homes.js';

export function packageVersion(): string {
  const manifest = new URL('../../../package.json', import.meta.url);
  return (JSON.parse(readFileSync(manifest, 'utf8')) as { version: string }).version;
}

/** Says what became of the server's own oom_score_adj (see internal/oom-score.ts). */
export function logOomScore(logger: Logger, outcome: OomScoreOutcome): void {
  if (outcome.applied) {
    logger.info({ oomScoreAdj: outcome.value }, 'the OOM killer takes sandboxes before this server');
  } else {
    // Info, not a warning: without root this is the expected case (sandboxes are still taken first).
    logger.info(
      { oomScoreAdj: outcome.value, reason: outcome.reason },
      `could not lower this server's oom_score_adj to ${outcome.value}: ${outcome.reason}; sandboxes still get 1000, so a host OOM takes them first, but the server is not shielded beyond that`,
    );
  }
}

export function createRuntime(options: ResolvedServerOptions): ServerContext {
  const logger = pino(
    { name: 'sandcell', level: options.logLevel, base: { pid: process.pid } },
    options.logDestination ?? pino.destination({ fd: 1, sync: false }),
  );
  const metrics = new Metrics();
  // One budget for the files of every session this process starts (the pool's included).
  const dataBudget = sharedDataBudget();
  void dataBudget.configure(options.dataBudgetBytes).catch((error: Error) => {
    logger.warn({ error: error.message }, 'could not resize the data volumes to the new data budget');
  });
  const pool = new SessionPool({
    size: options.poolSize,
    // Above poolSize, the pool sizes itself by demand, per environment.
    maxWarm: options.poolMax,
    // Warm sessions come on top of the live ones the registry allows.
    maxSessions: options.maxSessions + options.poolMax,
    // The pool closes idle sessions, counting from the hand-out; the registry hears of it (onIdleClose).
    idleTimeoutMs: options.idleTimeoutMs,
    lightStartsWhenBehind: !options.preloadWhenBehind,
    sessionOptions: {
      // Its clients cannot change a session's limits: errors say the operator sets them.
      limitNames: SERVER_LIMIT_NAMES,
      ...options.sessionOptions,
      // Every allowed connection and every refusal is a log line naming the session (no bodies, no headers).
      networkGate:
        options.sessionOptions.networkGate ??
        createGateHost({
          logger: (entry) => logger.info({ network: entry }, `network ${entry.event}`),
          secrets: options.networkSecrets,
        }),
      ...(options.backend ? { backend: options.backend } : {}),
      timeoutMs: options.executionTimeoutMs,
      preloadModules: options.preloadModules,
    },
  });
  const paused = new PausedSessions({
    stateDirectory: options.stateDirectory,
    ...(options.store !== undefined ? { store: options.store } : {}),
    ...(options.nodeName !== undefined ? { node: options.nodeName } : {}),
  });
  const cluster =
    options.advertiseUrl === undefined
      ? undefined
      : new Cluster({
          node: paused.node,
          url: options.advertiseUrl,
          objects: async () => (await paused.store()).objects,
          logger,
          heartbeatMs: options.heartbeatMs,
          load: () => ({ live: registry.stats.live, max: registry.maxSessions, draining: registry.isDraining }),
        });
  const volumes =
    options.stateDirectory === false
      ? undefined
      : new VolumeStore({
          directory: path.join(options.stateDirectory, 'volumes'),
          bytesPerOwner: options.limits.volumeBytes,
          // In a cluster a volume's id names the node that keeps it (volume-homes.ts).
          ...(cluster ? { idTag: cluster.tag } : {}),
        });
  const registry: SessionRegistry = new SessionRegistry({
    pool,
    metrics,
    logger,
    rateLimiter: new RateLimiter(options.limits.executionsPerMinute),
    maxSessions: options.maxSessions,
    sessionsPerOwner: options.limits.maxSessions,
    defaultTimeoutMs: options.executionTimeoutMs,
    maxExecutionMs: options.limits.maxExecutionMs,
    maxCodeBytes: options.sessionOptions.maxCodeBytes ?? DEFAULT_MAX_CODE_BYTES,
    maxQueuedExecutions: options.limits.maxQueuedExecutions,
    networkPermission: options.networkPermission,
    paused,
    publisher: new OutputPublisher(() => paused.store(), { linkTtlMs: options.linkTtlMs, logger }),
    publishOutputs: options.publishOutputs,
    onIdle: options.onIdle,
    pauseGraceMs: options.shutdownGraceMs,
    snapshotRetentionMs: options.snapshotRetentionMs,
    snapshotBytesPerOwner: options.limits.snapshotBytes,
    ...(cluster ? { cluster } : {}),
    ...(volumes ? { volumes } : {}),
    ...(cluster ? { volumeHomes: new VolumeHomes(cluster, async () => (await paused.store()).objects) } : {}),
  });
  metrics.gauge('sandcell_sessions_live', 'Sessions handed to clients and alive, by API.', () =>
    Object.entries(registry.stats.bySource).map(([api, value]) => ({ labels: { api }, value })),
  );
  metrics.gauge('sandcell_sessions_pooled', 'Warm sessions waiting in the pool.', () => [
    { labels: {}, value: pool.stats().warm },
  ]);
  metrics.gauge('sandcell_sessions_starting', 'Sandboxes starting.', () => [
    { labels: {}, value: pool.stats().starting },
  ]);
  metrics.gauge(
    'sandcell_pool_target',
    'Warm and starting sessions the pool aims at, by environment (by the recent arrival rate when --pool-max is above --pool-size).',
    () =>
      Object.entries(pool.stats().environments).map(([environment, stats]) => ({
        labels: { environment },
        value: stats.target,
      })),
  );
  metrics.gauge(
    'sandcell_pool_warm_light',
    "1 while warm sessions start without the preload: the arrivals' preloaded starts would take more than 60% of the cores.",
    () => [{ labels: {}, value: pool.stats().warmLight ? 1 : 0 }],
  );
  metrics.gauge(
    'sandcell_pool_start_cpu_demand_cores',
    'Cores that preloaded starts would keep busy at the recent arrival rates (rate × measured start CPU, all environments).',
    () => [{ labels: {}, value: pool.stats().startCpuDemand }],
  );
  metrics.gauge(
    'sandcell_sessions_capacity_used_ratio',
    'Live sessions over --max-sessions (0 to 1): what a HorizontalPodAutoscaler scales nodes on.',
    () => [{ labels: {}, value: registry.stats.live / registry.maxSessions }],
  );
  if (cluster)
    metrics.gauge('sandcell_cluster_peer_alive', 'The other nodes of the cluster this node sees alive (1 each).', () =>
      cluster.livePeers().map((peer) => ({ labels: { peer: peer.node }, value: 1 })),
    );
  metrics.gauge('sandcell_executions_running', 'Executions running now.', () => [
    { labels: {}, value: registry.stats.running },
  ]);
  metrics.gauge('sandcell_commands_running', 'Shell commands running now, by kind (foreground, background).', () =>
    Object.entries(registry.commands.running).map(([kind, value]) => ({ labels: { kind }, value })),
  );
  metrics.gauge(
    'sandcell_data_budget_bytes',
    "RAM all sessions' files may hold together (--data-budget-bytes).",
    () => [{ labels: {}, value: dataBudget.budgetBytes }],
  );
  metrics.gauge(
    'sandcell_data_committed_bytes',
    "Sizes of the sessions' /mnt/data mounts together; never above the budget.",
    () => [{ labels: {}, value: dataBudget.snapshot().committedBytes }],
  );
  const conversations = new ConversationStore({
    registry,
    logger,
    model: options.model,
    approvalDefault: options.approvalDefault,
    limits: {
      outputBytes: options.conversationOutputBytes,
      historyBytes: options.conversationHistoryBytes,
      keyBytes: options.limits.conversationBytes,
    },
  });
  if (cluster)
    conversations.handOverThrough(
      new ConversationHandover({
        objects: async () => (await paused.store()).objects,
        maxFileBytes: MAX_HISTORY_FILE_BYTES,
        logger,
      }),
    );
  return {
    registry,
    ...(cluster ? { cluster } : {}),
    conversations,
    pool,
    metrics,
    logger,
    apiKeys: new ApiKeys(options.apiKeys, options.gvisorKeys),
    options,
    version: packageVersion(),
    ...(volumes ? { volumes } : {}),
  };
}
