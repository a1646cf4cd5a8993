/**
 * The server's numeric options as one table: each row names the option, the environment variable it
 * falls back to, the `sandcell serve` flag that sets it, its unit, default and minimum.
 * `resolveServerOptions` resolves them from it and `sandcell serve` reads its flags from it, so a
 * new limit is one row.
 */

import { defaultDataBudgetBytes } from '../../backends/data-budget.js';
import { InvalidInputError } from '../../errors.js';
import { type DurationUnit, parseDuration, parseSize } from '../../internal/units.js';
import { DEFAULT_FILE_TRANSFER_BYTES, DEFAULT_MAX_CODE_BYTES } from '../../session/options.js';
import { DEFAULT_IDLE_TIMEOUT_MS } from '../../session/pool.js';
import { DEFAULT_VOLUME_BYTES_PER_OWNER } from '../../volumes/volume-store.js';
import {
  DEFAULT_CONVERSATION_BYTES_PER_KEY,
  DEFAULT_CONVERSATION_HISTORY_BYTES,
  DEFAULT_CONVERSATION_OUTPUT_BYTES,
} from '../conversations/history-limits.js';
import type { KeyLimits, ServerOptions } from './server-options.js';

export const DEFAULT_PORT = 8080;
/** What one key's snapshots may take in the store. */
export const DEFAULT_SNAPSHOT_BYTES_PER_KEY = 10 * 1024 ** 3;
export const DEFAULT_POOL_SIZE = 2;
/** Most warm sessions when demand calls for them: what 2 new sessions a second need with ~1 s cold starts. */
export const DEFAULT_POOL_MAX = 8;
export const DEFAULT_SERVER_MAX_SESSIONS = 64;
export const DEFAULT_SESSIONS_PER_KEY = 32;
export const DEFAULT_EXECUTIONS_PER_MINUTE = 600;
export const DEFAULT_MAX_EXECUTION_MS = 300_000;
export const DEFAULT_EXECUTION_TIMEOUT_MS = 60_000;
export const DEFAULT_SHUTDOWN_GRACE_MS = 30_000;
/** How long a paused session's snapshot is kept: a week, so a session paused on a Friday resumes on Monday. */
export const DEFAULT_SNAPSHOT_RETENTION_MS = 7 * 24 * 3_600_000;
/** How long a published output's link works: an hour, as long as a chat's reader needs. */
export const DEFAULT_LINK_TTL_MS = 3_600_000;
export const DEFAULT_MAX_QUEUED_EXECUTIONS = 16;
export const DEFAULT_MCP_SESSIONS_PER_KEY = 16;
export const DEFAULT_MAX_CONNECTIONS = 1024;
export const DEFAULT_MAX_CONNECTIONS_PER_ADDRESS = 256;
export const DEFAULT_HEADERS_TIMEOUT_MS = 10_000;
const MINIMUM_DATA_BUDGET_BYTES = 1024 * 1024;

/** The numeric options of the whole server, beside the per-key ones under `limits`. */
export type ServerNumber =
  | 'port'
  | 'maxConnections'
  | 'maxConnectionsPerAddress'
  | 'headersTimeoutMs'
  | 'maxSessions'
  | 'poolSize'
  | 'poolMax'
  | 'dataBudgetBytes'
  | 'idleTimeoutMs'
  | 'executionTimeoutMs'
  | 'shutdownGraceMs'
  | 'drainDelayMs'
  | 'snapshotRetentionMs'
  | 'linkTtlMs'
  | 'conversationOutputBytes'
  | 'conversationHistoryBytes';

/** An option as messages name it: `poolSize`, or `limits.maxSessions` for a per-key limit. */
export type NumericOptionName = ServerNumber | `limits.${keyof KeyLimits}`;

/** How the variable and the flag are written: a whole number, a size (`64M`) or a duration (`30s`). */
export type OptionUnit = 'count' | 'size' | 'duration';

/** The numeric options resolved so far, in table order: a default may follow an earlier row. */
type ResolvedSoFar = Partial<Record<NumericOptionName, number>>;

export interface NumericOption {
  option: NumericOptionName;
  /** The environment variable read when the option is not given; none for those only code and flags set. */
  variable?: string;
  /** A duration's old variable, whose bare number is milliseconds; read when `variable` is unset. */
  legacyVariable?: string;
  /** The `sandcell serve` flag; none for those only code and the environment set. */
  flag?: string;
  unit: OptionUnit;
  default: number | ((options: ServerOptions, resolved: ResolvedSoFar) => number);
  minimum: number;
}

export const NUMERIC_OPTIONS: readonly NumericOption[] = [
  { option: 'port', variable: 'SANDCELL_PORT', flag: '--port', unit: 'count', default: DEFAULT_PORT, minimum: 0 },
  {
    option: 'maxConnections',
    variable: 'SANDCELL_MAX_CONNECTIONS',
    flag: '--max-connections',
    unit: 'count',
    default: DEFAULT_MAX_CONNECTIONS,
    minimum: 1,
  },
  {
    option: 'maxConnectionsPerAddress',
    variable: 'SANDCELL_MAX_CONNECTIONS_PER_ADDRESS',
    flag: '--max-connections-per-address',
    unit: 'count',
    default: DEFAULT_MAX_CONNECTIONS_PER_ADDRESS,
    minimum: 1,
  },
  {
    option: 'headersTimeoutMs',
    variable: 'SANDCELL_HEADERS_TIMEOUT',
    legacyVariable: 'SANDCELL_HEADERS_TIMEOUT_MS',
    flag: '--headers-timeout',
    unit: 'duration',
    default: DEFAULT_HEADERS_TIMEOUT_MS,
    minimum: 1,
  },
  {
    option: 'limits.maxSessions',
    variable: 'SANDCELL_SESSIONS_PER_KEY',
    flag: '--sessions-per-key',
    unit: 'count',
    default: DEFAULT_SESSIONS_PER_KEY,
    minimum: 1,
  },
  {
    option: 'limits.executionsPerMinute',
    variable: 'SANDCELL_EXECUTIONS_PER_MINUTE',
    flag: '--executions-per-minute',
    unit: 'count',
    default: DEFAULT_EXECUTIONS_PER_MINUTE,
    minimum: 0,
  },
  {
    option: 'limits.maxRequestBytes',
    variable: 'SANDCELL_MAX_REQUEST_BYTES',
    flag: '--max-request-bytes',
    unit: 'size',
    // The largest code a session takes, and room for the JSON around it.
    default: (options) => (options.sessionOptions?.maxCodeBytes ?? DEFAULT_MAX_CODE_BYTES) + 64 * 1024,
    minimum: 1024,
  },
  {
    option: 'limits.maxUploadBytes',
    variable: 'SANDCELL_MAX_UPLOAD_BYTES',
    flag: '--max-upload-bytes',
    unit: 'size',
    default: (options) => options.sessionOptions?.fileTransferBytes ?? DEFAULT_FILE_TRANSFER_BYTES,
    minimum: 1,
  },
  {
    option: 'limits.maxExecutionMs',
    variable: 'SANDCELL_MAX_EXECUTION_TIME',
    legacyVariable: 'SANDCELL_MAX_EXECUTION_MS',
    flag: '--max-execution-time',
    unit: 'duration',
    default: DEFAULT_MAX_EXECUTION_MS,
    minimum: 1,
  },
  {
    option: 'limits.maxQueuedExecutions',
    variable: 'SANDCELL_MAX_QUEUED_EXECUTIONS',
    flag: '--max-queued-executions',
    unit: 'count',
    default: DEFAULT_MAX_QUEUED_EXECUTIONS,
    minimum: 0,
  },
  {
    option: 'limits.maxMcpSessions',
    variable: 'SANDCELL_MCP_SESSIONS_PER_KEY',
    flag: '--mcp-sessions-per-key',
    unit: 'count',
    default: DEFAULT_MCP_SESSIONS_PER_KEY,
    minimum: 1,
  },
  {
    option: 'limits.conversationBytes',
    variable: 'SANDCELL_CONVERSATION_BYTES_PER_KEY',
    unit: 'size',
    default: DEFAULT_CONVERSATION_BYTES_PER_KEY,
    minimum: 1024,
  },
  {
    option: 'maxSessions',
    variable: 'SANDCELL_MAX_SESSIONS',
    flag: '--max-sessions',
    unit: 'count',
    default: DEFAULT_SERVER_MAX_SESSIONS,
    minimum: 1,
  },
  {
    option: 'poolSize',
    variable: 'SANDCELL_POOL_SIZE',
    flag: '--pool-size',
    unit: 'count',
    default: DEFAULT_POOL_SIZE,
    minimum: 0,
  },
  {
    option: 'poolMax',
    variable: 'SANDCELL_POOL_MAX',
    flag: '--pool-max',
    unit: 'count',
    // The larger of 8 and poolSize; no warm sessions asked for (poolSize 0) asks for none by demand either.
    default: (_options, resolved) => (resolved.poolSize === 0 ? 0 : Math.max(DEFAULT_POOL_MAX, resolved.poolSize ?? 0)),
    minimum: 0,
  },
  {
    option: 'dataBudgetBytes',
    variable: 'SANDCELL_DATA_BUDGET_BYTES',
    flag: '--data-budget-bytes',
    unit: 'size',
    default: () => defaultDataBudgetBytes({}),
    minimum: MINIMUM_DATA_BUDGET_BYTES,
  },
  {
    option: 'idleTimeoutMs',
    variable: 'SANDCELL_IDLE_TIMEOUT',
    legacyVariable: 'SANDCELL_IDLE_TIMEOUT_MS',
    flag: '--idle-timeout',
    unit: 'duration',
    default: DEFAULT_IDLE_TIMEOUT_MS,
    minimum: 1,
  },
  {
    option: 'executionTimeoutMs',
    variable: 'SANDCELL_EXECUTION_TIMEOUT',
    legacyVariable: 'SANDCELL_EXECUTION_TIMEOUT_MS',
    flag: '--timeout',
    unit: 'duration',
    default: DEFAULT_EXECUTION_TIMEOUT_MS,
    minimum: 1,
  },
  {
    option: 'shutdownGraceMs',
    flag: '--shutdown-grace',
    unit: 'duration',
    default: DEFAULT_SHUTDOWN_GRACE_MS,
    minimum: 0,
  },
  {
    option: 'drainDelayMs',
    variable: 'SANDCELL_DRAIN_DELAY',
    flag: '--drain-delay',
    unit: 'duration',
    default: 0,
    minimum: 0,
  },
  {
    option: 'limits.snapshotBytes',
    variable: 'SANDCELL_SNAPSHOT_BYTES_PER_KEY',
    flag: '--snapshot-bytes-per-key',
    unit: 'size',
    default: DEFAULT_SNAPSHOT_BYTES_PER_KEY,
    minimum: 1024 * 1024,
  },
  {
    option: 'limits.volumeBytes',
    variable: 'SANDCELL_VOLUME_BYTES_PER_KEY',
    flag: '--volume-bytes-per-key',
    unit: 'size',
    default: DEFAULT_VOLUME_BYTES_PER_OWNER,
    minimum: 1024 * 1024,
  },
  {
    option: 'snapshotRetentionMs',
    variable: 'SANDCELL_SNAPSHOT_RETENTION',
    flag: '--snapshot-retention',
    unit: 'duration',
    default: DEFAULT_SNAPSHOT_RETENTION_MS,
    minimum: 1,
  },
  {
    option: 'linkTtlMs',
    variable: 'SANDCELL_LINK_TTL',
    flag: '--link-ttl',
    unit: 'duration',
    default: DEFAULT_LINK_TTL_MS,
    minimum: 1000,
  },
  {
    option: 'conversationOutputBytes',
    variable: 'SANDCELL_CONVERSATION_OUTPUT_BYTES',
    unit: 'size',
    default: DEFAULT_CONVERSATION_OUTPUT_BYTES,
    minimum: 1024,
  },
  {
    option: 'conversationHistoryBytes',
    variable: 'SANDCELL_CONVERSATION_HISTORY_BYTES',
    unit: 'size',
    default: DEFAULT_CONVERSATION_HISTORY_BYTES,
    minimum: 1024,
  },
];

type Environment = Record<string, string | undefined>;

/** Every numeric option, at its place in ServerOptions (`limits.x` under `limits`). */
export type NumericOptionValues<T> = Record<ServerNumber, T> & { limits: Record<keyof KeyLimits, T> };

/** Puts each row's value at its place: top level, or under `limits`. */
export function placeNumbers<T>(values: (row: NumericOption) => T): NumericOptionValues<T> {
  const placed = { limits: {} } as NumericOptionValues<T>;
  for (const row of NUMERIC_OPTIONS) {
    const [first, second] = row.option.split('.') as [string, string?];
    const target = (second === undefined ? placed : placed.limits) as Record<string, T>;
    target[second ?? first] = values(row);
  }
  return placed;
}

/** The value the caller gave for a row, if any. */
function given(options: ServerOptions, option: NumericOptionName): number | undefined {
  const [first, second] = option.split('.') as [string, string?];
  if (second === undefined) return (options as Record<string, unknown>)[first] as number | undefined;
  return (options.limits as Record<string, number | undefined> | undefined)?.[second];
}

/** Each numeric option: given, else from its variable, else its default; refused below its minimum. */
export function resolveNumbers(
  options: ServerOptions,
  environment: Environment,
): { [K in keyof NumericOptionValues<number>]: NumericOptionValues<number>[K] } {
  const resolved: ResolvedSoFar = {};
  for (const row of NUMERIC_OPTIONS) {
    const value = given(options, row.option) ?? fromEnvironment(environment, row);
    const fallback = typeof row.default === 'number' ? row.default : row.default(options, resolved);
    resolved[row.option] = count(row.option, value, fallback, row.minimum);
  }
  return placeNumbers((row) => resolved[row.option] as number);
}

function fromEnvironment(environment: Environment, row: NumericOption): number | undefined {
  if (row.variable === undefined) return undefined;
  if (row.unit === 'count') return numberFrom(environment, row.variable);
  if (row.unit === 'size') return sizeFrom(environment, row.variable);
  return durationFrom(environment, row.variable, row.legacyVariable);
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
function durationFrom(environment: Environment, name: string, legacy: string | undefined): number | undefined {
  const variables: [string, DurationUnit][] = [[name, 's']];
  if (legacy !== undefined) variables.push([legacy, 'ms']);
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

/** A whole number of at least `minimum`, the fallback when none was given. */
export function count(name: string, value: number | undefined, fallback: number, minimum: number): number {
  const resolved = value ?? fallback;
  if (!Number.isInteger(resolved) || resolved < minimum) {
    throw new InvalidInputError(`\`${name}\` must be a whole number of at least ${minimum}; got ${String(resolved)}.`);
  }
  return resolved;
}
