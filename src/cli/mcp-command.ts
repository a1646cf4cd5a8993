/** `sandcell mcp`: an MCP server on stdio, for desktop clients and coding agents that spawn it. */
import { InvalidInputError } from '../errors.js';
import { defaultStateDirectory } from '../internal/state-directory.js';
import { runMcpStdio } from '../server/index.js';
import { type BackendCliOptions, backendFromOptions } from './backend-option.js';
import { CliExit, EXIT_OK, EXIT_USAGE } from './exit-codes.js';
import { numberOption } from './serve-command.js';
import { optionalDurationFlag } from './unit-flags.js';

export interface McpCommandOptions extends BackendCliOptions {
  poolSize?: string;
  maxSessions?: string;
  timeout?: string;
  idleTimeout?: string;
  preload?: string;
  logLevel?: string;
  /** A directory, or false with --no-state-dir. */
  stateDir?: string | false;
}

export async function mcpCommand(options: McpCommandOptions): Promise<number> {
  // The flags first: a bad one fails before a backend is prepared.
  const settings = {
    poolSize: numberOption('--pool-size', options.poolSize),
    maxSessions: numberOption('--max-sessions', options.maxSessions),
    executionTimeoutMs: optionalDurationFlag('--timeout', options.timeout),
    idleTimeoutMs: optionalDurationFlag('--idle-timeout', options.idleTimeout),
  };
  try {
    await runMcpStdio({
      backend: await backendFromOptions(options),
      ...settings,
      preloadModules: options.preload === undefined ? undefined : options.preload.split(',').filter(Boolean),
      logLevel: options.logLevel,
      stateDirectory: options.stateDir === false ? false : (options.stateDir ?? defaultStateDirectory()),
      ...(options.env ? { sessionOptions: { environmentName: options.env } } : {}),
    });
  } catch (error) {
    if (error instanceof InvalidInputError) throw new CliExit(EXIT_USAGE, error.message);
    throw error;
  }
  return EXIT_OK;
}
