/** `sandcell serve`: the HTTP server (REST /v1, Azure-compatible /azure, MCP /mcp, the web UI) until SIGTERM or Ctrl-C. */
import type { ChatModel } from '../agents/model.js';
import { modelIsConfigured } from '../agents/providers/select.js';
import { InvalidInputError } from '../errors.js';
import { SERVER_OOM_SCORE_ADJ, setOwnOomScoreAdjust } from '../internal/oom-score.js';
import { defaultStateDirectory } from '../server/conversations/state-directory.js';
import { logOomScore } from '../server/core/runtime.js';
import { createServer, type SandcellServer, type ServerOptions } from '../server/index.js';
import type { ModelCliOptions } from './agent-flags.js';
import { createModel, toCliExit } from './agent-options.js';
import { type BackendCliOptions, backendFromOptions } from './backend-option.js';
import { CliExit, EXIT_OK, EXIT_USAGE } from './exit-codes.js';
import { type LogFormat, logDestinationFor } from './log-lines.js';
import { serveNetworkOptions } from './network-options.js';
import { optionalDurationFlag, optionalSizeFlag } from './unit-flags.js';

export interface ServeCommandOptions extends BackendCliOptions, ModelCliOptions {
  approve?: boolean;
  ui?: boolean;
  host?: string;
  port?: string;
  apiKey: string[];
  allowedHost: string[];
  poolSize?: string;
  poolMax?: string;
  maxSessions?: string;
  dataBudgetBytes?: string;
  sessionsPerKey?: string;
  executionsPerMinute?: string;
  maxRequestBytes?: string;
  maxUploadBytes?: string;
  maxExecutionTime?: string;
  maxQueuedExecutions?: string;
  mcpSessionsPerKey?: string;
  maxConnections?: string;
  maxConnectionsPerAddress?: string;
  headersTimeout?: string;
  timeout?: string;
  idleTimeout?: string;
  preload?: string;
  preloadWhenBehind?: boolean;
  shutdownGrace?: string;
  logLevel?: string;
  /** A directory, or false with --no-state-dir. */
  stateDir?: string | false;
  logFormat?: LogFormat;
  allowHost?: string[];
  permitHost?: string[];
  secretHeader?: string[];
}

/** A count flag's number (a port, sessions, connections), or undefined when not given. */
export function numberOption(flag: string, value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const number = Number(value);
  if (value.trim() === '' || !Number.isFinite(number) || number < 0) {
    throw new CliExit(EXIT_USAGE, `${flag} takes a number of at least 0; got ${JSON.stringify(value)}.`);
  }
  return number;
}

export function serverOptionsFrom(options: ServeCommandOptions): ServerOptions {
  const keys = options.apiKey.length > 0 ? options.apiKey : undefined;
  const { network, ...permission } = serveNetworkOptions(options);
  return {
    ...permission,
    ...(network ? { sessionOptions: { network } } : {}),
    host: options.host,
    port: numberOption('--port', options.port),
    apiKeys: keys,
    allowedHosts: options.allowedHost.length > 0 ? options.allowedHost : undefined,
    maxConnections: numberOption('--max-connections', options.maxConnections),
    maxConnectionsPerAddress: numberOption('--max-connections-per-address', options.maxConnectionsPerAddress),
    headersTimeoutMs: optionalDurationFlag('--headers-timeout', options.headersTimeout),
    poolSize: numberOption('--pool-size', options.poolSize),
    poolMax: numberOption('--pool-max', options.poolMax),
    maxSessions: numberOption('--max-sessions', options.maxSessions),
    dataBudgetBytes: optionalSizeFlag('--data-budget-bytes', options.dataBudgetBytes),
    limits: {
      maxSessions: numberOption('--sessions-per-key', options.sessionsPerKey),
      executionsPerMinute: numberOption('--executions-per-minute', options.executionsPerMinute),
      maxRequestBytes: optionalSizeFlag('--max-request-bytes', options.maxRequestBytes),
      maxUploadBytes: optionalSizeFlag('--max-upload-bytes', options.maxUploadBytes),
      maxExecutionMs: optionalDurationFlag('--max-execution-time', options.maxExecutionTime),
      maxQueuedExecutions: numberOption('--max-queued-executions', options.maxQueuedExecutions),
      maxMcpSessions: numberOption('--mcp-sessions-per-key', options.mcpSessionsPerKey),
    },
    executionTimeoutMs: optionalDurationFlag('--timeout', options.timeout),
    idleTimeoutMs: optionalDurationFlag('--idle-timeout', options.idleTimeout),
    preloadModules: options.preload === undefined ? undefined : options.preload.split(',').filter(Boolean),
    ...(options.preloadWhenBehind ? { preloadWhenBehind: true } : {}),
    ...(options.env ? { sessionOptions: { environmentName: options.env } } : {}),
    shutdownGraceMs: optionalDurationFlag('--shutdown-grace', options.shutdownGrace, 0),
    logLevel: options.logLevel,
    stateDirectory: options.stateDir === false ? false : (options.stateDir ?? defaultStateDirectory()),
    logDestination: logDestinationFor(options.logFormat ?? 'auto'),
    ...(options.approve ? { approvalDefault: 'ask' as const } : {}),
    ...(options.ui === false ? { webRoot: false as const } : {}),
  };
}

/** The model conversations use: the one the flags, environment or config file name, or none if none is named. */
export function serverModel(options: ModelCliOptions): ChatModel | undefined {
  const selection = { provider: options.provider, model: options.model, baseURL: options.baseUrl };
  try {
    return modelIsConfigured(selection) ? createModel(options) : undefined;
  } catch (error) {
    throw toCliExit(error);
  }
}

/** Resolves once a signal closed the server; a second signal closes the sandboxes at once and exits. */
function stopOnSignals(server: SandcellServer): Promise<void> {
  return new Promise<void>((resolve) => {
    let signals = 0;
    const onSignal = (signal: NodeJS.Signals) => {
      signals++;
      if (signals > 1) {
        // A second signal: do not wait for running code, close the sandboxes now.
        void server.closeSandboxes().finally(() => process.exit(signal === 'SIGINT' ? 130 : 143));
        return;
      }
      server.logger.info({ signal }, 'signal received');
      void server.close().then(resolve, resolve);
    };
    process.on('SIGTERM', onSignal);
    process.on('SIGINT', onSignal);
  });
}

export async function serveCommand(options: ServeCommandOptions): Promise<number> {
  let server: SandcellServer;
  let stopped: Promise<void>;
  // Before any sandbox starts: a host OOM must take a sandbox, never the server.
  const oomScore = setOwnOomScoreAdjust(SERVER_OOM_SCORE_ADJ);
  try {
    const model = serverModel(options);
    const settings = serverOptionsFrom(options); // a bad flag fails before a backend is prepared
    const backend = await backendFromOptions(options);
    server = await createServer({ ...settings, backend, model });
    // Before the "web UI at" line: a Ctrl-C once it shows stops the server gracefully.
    stopped = stopOnSignals(server);
    server.logger.info(
      { model: model ? `${model.provider}/${model.model}` : null, ui: server.options.webRoot !== false },
      model
        ? `web UI at ${server.url}/ — conversations use ${model.provider} model ${model.model}`
        : `web UI at ${server.url}/ — no model configured: notebook cells work; start with --provider/--model (or --base-url) to chat`,
    );
    logOomScore(server.logger, oomScore);
  } catch (error) {
    if (error instanceof InvalidInputError) throw new CliExit(EXIT_USAGE, error.message);
    if ((error as NodeJS.ErrnoException).code === 'EADDRINUSE') {
      throw new CliExit(EXIT_USAGE, `The port is in use; choose another with --port. (${(error as Error).message})`);
    }
    throw error;
  }
  await stopped;
  return EXIT_OK;
}
