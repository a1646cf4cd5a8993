/** `sandcell serve`: the HTTP server (REST /v1, Azure-compatible /azure, MCP /mcp, the web UI) until SIGTERM or Ctrl-C. */
import type { ChatModel } from '../agents/model.js';
import { modelIsConfigured } from '../agents/providers/select.js';
import { InvalidInputError } from '../errors.js';
import { SERVER_OOM_SCORE_ADJ, setOwnOomScoreAdjust } from '../internal/oom-score.js';
import { defaultStateDirectory } from '../server/conversations/state-directory.js';
import { type NumericOption, placeNumbers } from '../server/core/numeric-options.js';
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
  gvisorKey?: string[];
  allowedHost: string[];
  sandboxDomain?: string;
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
  onIdle?: 'pause' | 'close';
  snapshotRetention?: string;
  snapshotBytesPerKey?: string;
  volumeBytesPerKey?: string;
  preload?: string;
  preloadWhenBehind?: boolean;
  shutdownGrace?: string;
  drainDelay?: string;
  logLevel?: string;
  /** A directory, or false with --no-state-dir. */
  stateDir?: string | false;
  store?: string;
  advertiseUrl?: string;
  publishOutputs?: boolean;
  linkTtl?: string;
  logFormat?: LogFormat;
  allowHost?: string[];
  allowPackageIndex?: boolean;
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

/** `--max-connections-per-address` → `maxConnectionsPerAddress`, as commander names a flag's value. */
function flagValue(options: ServeCommandOptions, flag: string): string | undefined {
  const key = flag.replace(/^--/, '').replace(/-([a-z])/g, (_match, letter: string) => letter.toUpperCase());
  const value = (options as unknown as Record<string, unknown>)[key];
  return typeof value === 'string' ? value : undefined;
}

/** A numeric option's flag, parsed by its unit; the server checks the option's minimum and names it. */
function numericFlag(options: ServeCommandOptions, row: NumericOption): number | undefined {
  if (row.flag === undefined) return undefined;
  const value = flagValue(options, row.flag);
  if (row.unit === 'count') return numberOption(row.flag, value);
  if (row.unit === 'size') return optionalSizeFlag(row.flag, value);
  return optionalDurationFlag(row.flag, value, row.minimum);
}

export function serverOptionsFrom(options: ServeCommandOptions): ServerOptions {
  const keys = options.apiKey.length > 0 ? options.apiKey : undefined;
  const { network, ...permission } = serveNetworkOptions(options);
  // The flags of the numeric options are a column of their table (server/core/numeric-options.ts).
  const numbers = placeNumbers((row) => numericFlag(options, row));
  return {
    ...permission,
    ...(network ? { sessionOptions: { network } } : {}),
    ...numbers,
    host: options.host,
    apiKeys: keys,
    ...(options.gvisorKey?.length ? { gvisorKeys: options.gvisorKey } : {}),
    allowedHosts: options.allowedHost.length > 0 ? options.allowedHost : undefined,
    ...(options.sandboxDomain !== undefined ? { sandboxDomain: options.sandboxDomain } : {}),
    preloadModules: options.preload === undefined ? undefined : options.preload.split(',').filter(Boolean),
    ...(options.preloadWhenBehind ? { preloadWhenBehind: true } : {}),
    ...(options.env ? { sessionOptions: { environmentName: options.env } } : {}),
    logLevel: options.logLevel,
    ...(options.onIdle ? { onIdle: options.onIdle } : {}),
    stateDirectory: options.stateDir === false ? false : (options.stateDir ?? defaultStateDirectory()),
    ...(options.store !== undefined ? { store: options.store } : {}),
    ...(options.advertiseUrl !== undefined ? { advertiseUrl: options.advertiseUrl } : {}),
    ...(options.publishOutputs ? { publishOutputs: true } : {}),
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
