/** What every route needs: the registry, the pool, metrics, the logger and the resolved options. */

import type { Logger } from 'pino';
import type { SessionPool } from '../../session/pool.js';
import type { VolumeStore } from '../../volumes/volume-store.js';
import type { ConversationStore } from '../conversations/store.js';
import type { ApiKeys } from './auth.js';
import type { Cluster } from './cluster.js';
import type { Metrics } from './metrics.js';
import type { ResolvedServerOptions } from './options.js';
import type { SessionRegistry } from './registry.js';

export interface ServerContext {
  registry: SessionRegistry;
  /** The nodes sharing the store, when this server is one of several (--advertise-url). */
  cluster?: Cluster;
  conversations: ConversationStore;
  pool: SessionPool;
  metrics: Metrics;
  logger: Logger;
  apiKeys: ApiKeys;
  options: ResolvedServerOptions;
  version: string;
  /** The keys' volumes, in the state directory (none without one). */
  volumes?: VolumeStore;
}
