/**
 * sandcell/server: the HTTP API (/v1), Azure dynamic-sessions compatible
 * routes (/azure), MCP (/mcp and stdio), on the SessionPool.
 * Named exports only: what runs a server and names its options and parts;
 * the app, auth and HTTP-error plumbing stay internal.
 */
export type { Owner } from './core/auth.js';
export type { ServerContext } from './core/context.js';
export type { ManagedSession, SessionSource } from './core/managed-session.js';
export {
  DEFAULT_EXECUTIONS_PER_MINUTE,
  DEFAULT_HOST,
  DEFAULT_IDLE_TIMEOUT_MS,
  DEFAULT_MAX_EXECUTION_MS,
  DEFAULT_PORT,
  DEFAULT_SERVER_MAX_SESSIONS,
  DEFAULT_SESSIONS_PER_KEY,
  type KeyLimits,
  type ResolvedServerOptions,
  resolveServerOptions,
  type ServerOptions,
} from './core/options.js';
export type { SessionRegistry } from './core/registry.js';
export type { ErrorBody } from './http/errors.js';
export { createMcpServer, type McpServerOptions } from './mcp/mcp-server.js';
export { type McpStdioOptions, runMcpStdio } from './mcp/stdio.js';
export { createServer, type SandcellServer } from './server.js';
