/** What every route needs: the registry, the pool, metrics, the logger and the resolved options. */
import type { Logger } from 'pino';
import type { SessionPool } from '../../session/pool.js';
import type { ConversationStore } from '../conversations/store.js';
import type { ApiKeys } from './auth.js';
import type { Metrics } from './metrics.js';
import type { ResolvedServerOptions } from './options.js';
import type { SessionRegistry } from './registry.js';

export interface ServerContext {
  registry: SessionRegistry;
  conversations: ConversationStore;
  pool: SessionPool;
  metrics: Metrics;
  logger: Logger;
  apiKeys: ApiKeys;
  options: ResolvedServerOptions;
  version: string;
}
