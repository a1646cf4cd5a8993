/**
 * `sandcell mcp`: the MCP server over stdio, for desktop clients and coding
 * agents that spawn it. stdout carries the protocol only; logs go to stderr.
 * The connection ends when stdin closes (or on SIGTERM/SIGINT), and every
 * sandbox closes with it: with a state directory, each session is paused
 * there first, and the next `sandcell mcp` resumes it at the first call that
 * names it.
 */
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import pino from 'pino';
import { SERVER_OOM_SCORE_ADJ, setOwnOomScoreAdjust } from '../../internal/oom-score.js';
import { LOCAL_OWNER } from '../core/auth.js';
import { resolveServerOptions, type ServerOptions } from '../core/options.js';
import { createRuntime, logOomScore } from '../core/runtime.js';
import { createMcpServer } from './mcp-server.js';

export interface McpStdioOptions
  extends Pick<
    ServerOptions,
    | 'poolSize'
    | 'poolMax'
    | 'maxSessions'
    | 'idleTimeoutMs'
    | 'executionTimeoutMs'
    | 'preloadModules'
    | 'backend'
    | 'logLevel'
    | 'sessionOptions'
    | 'stateDirectory'
  > {
  input?: NodeJS.ReadableStream;
  output?: NodeJS.WritableStream;
}

/** Serves MCP on stdin/stdout until the client goes away; resolves once every sandbox is closed. */
export async function runMcpStdio(options: McpStdioOptions = {}): Promise<void> {
  // This serves one client for the life of its process: a host OOM must take a sandbox, never it.
  const oomScore = setOwnOomScoreAdjust(SERVER_OOM_SCORE_ADJ);
  const resolved = resolveServerOptions({
    host: '127.0.0.1',
    apiKeys: [],
    poolSize: options.poolSize ?? 1,
    // One client: a fixed pool, unless asked otherwise.
    poolMax: options.poolMax ?? options.poolSize ?? 1,
    maxSessions: options.maxSessions,
    idleTimeoutMs: options.idleTimeoutMs,
    executionTimeoutMs: options.executionTimeoutMs,
    preloadModules: options.preloadModules,
    backend: options.backend,
    sessionOptions: options.sessionOptions,
    logLevel: options.logLevel ?? process.env.SANDCELL_LOG_LEVEL ?? 'warn',
    logDestination: pino.destination({ fd: 2, sync: true }) as unknown as NodeJS.WritableStream,
    shutdownGraceMs: 5_000,
    stateDirectory: options.stateDirectory,
  });
  const context = createRuntime(resolved);
  logOomScore(context.logger, oomScore);
  const server = createMcpServer({
    registry: context.registry,
    owner: LOCAL_OWNER,
    scope: 'stdio',
    version: context.version,
    deployment: 'stdio',
    defaultEnvironment: resolved.sessionOptions.environmentName,
  });
  // Warm in the background: the client's handshake should not wait for a sandbox.
  void context.pool.start().catch((error: Error) => context.logger.error({ err: error }, 'could not warm a sandbox'));
  const transport = new StdioServerTransport(
    options.input as NodeJS.ReadStream | undefined,
    options.output as NodeJS.WriteStream | undefined,
  );
  const input = options.input ?? process.stdin;
  let finish: () => void = () => undefined;
  const finished = new Promise<void>((resolve) => {
    finish = resolve;
  });
  const onSignal = () => finish();
  transport.onclose = () => finish();
  input.once('end', () => finish());
  input.once('close', () => finish());
  process.once('SIGTERM', onSignal);
  process.once('SIGINT', onSignal);
  await server.connect(transport);
  context.logger.info('sandcell MCP server on stdio');
  await finished;
  process.off('SIGTERM', onSignal);
  process.off('SIGINT', onSignal);
  await context.registry.shutdown(resolved.shutdownGraceMs);
  await server.close().catch(() => undefined);
}
