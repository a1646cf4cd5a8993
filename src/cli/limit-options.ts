/**
 * The session limits a person at the CLI can set — memory, the largest file
 * moved in or out, what /mnt/data may hold, what one execution's output may
 * take — as flags taking sizes like `512M` or `2G`, and the session options
 * they make: limit errors then name these flags, not the library's options.
 */
import type { Command } from 'commander';
import { DEFAULT_LIMITS, dataCapacityBytes } from '../backends/limits.js';
import { formatBytes } from '../protocol/format-bytes.js';
import { CLI_LIMIT_NAMES } from '../session/limit-names.js';
import type { SessionOptions } from '../session/options.js';
import { dim } from './render.js';
import { optionalSizeFlag } from './unit-flags.js';

export interface LimitCliOptions {
  memory?: string;
  maxUpload?: string;
  maxData?: string;
  maxOutput?: string;
  maxResults?: string;
}

export function addLimitOptions(command: Command): Command {
  return command
    .option('--memory <size>', "the session's memory, its files in /mnt/data included, e.g. 4G (default: 2G)")
    .option('--max-upload <size>', 'the largest file moved into or out of the session, e.g. 256M (default: 64M)')
    .option('--max-data <size>', 'what /mnt/data may hold, e.g. 2G; at most --memory less 128M (default: 1G)')
    .option('--max-output <size>', 'stdout and stderr kept per execution (each, for a command), e.g. 8M (default: 1M)')
    .option('--max-results <size>', 'results (charts, tables) kept per execution, e.g. 128M (default: 32M)');
}

/** Notes already printed: a command that opens many sessions (discord) says each once. */
const printed = new Set<string>();

function noteOnce(text: string): void {
  if (printed.has(text)) return;
  printed.add(text);
  process.stderr.write(`${dim(text, process.stderr)}\n`);
}

/**
 * The session options the flags give; limit errors name the flags. A `--max-data` that
 * `--memory` cannot hold is lowered by the session (dataCapacityBytes): `note` says so.
 */
export function limitSessionOptions(
  options: LimitCliOptions,
  note: (text: string) => void = noteOnce,
): Pick<SessionOptions, 'limits' | 'fileTransferBytes' | 'outputBytes' | 'resultBytes' | 'limitNames'> {
  const memoryBytes = optionalSizeFlag('--memory', options.memory);
  const dataBytes = optionalSizeFlag('--max-data', options.maxData);
  const fileTransferBytes = optionalSizeFlag('--max-upload', options.maxUpload);
  const outputBytes = optionalSizeFlag('--max-output', options.maxOutput);
  const resultBytes = optionalSizeFlag('--max-results', options.maxResults);
  if (dataBytes !== undefined) {
    const memory = memoryBytes ?? DEFAULT_LIMITS.memoryBytes;
    const capacity = dataCapacityBytes({ dataBytes, memoryBytes: memory });
    if (capacity < dataBytes) {
      note(
        `note: /mnt/data will hold at most ${formatBytes(capacity)}, not the ${formatBytes(dataBytes)} of --max-data: its files are RAM within --memory (${formatBytes(memory)}${memoryBytes === undefined ? ', the default' : ''}), which keeps ${formatBytes(memory - capacity)} for the kernel; raise --memory to hold more (e.g. --memory ${Math.ceil((dataBytes + (memory - capacity)) / 1024 ** 3)}G).`,
      );
    }
  }
  return {
    limits: { ...(memoryBytes ? { memoryBytes } : {}), ...(dataBytes ? { dataBytes } : {}) },
    ...(fileTransferBytes ? { fileTransferBytes } : {}),
    ...(outputBytes ? { outputBytes } : {}),
    ...(resultBytes ? { resultBytes } : {}),
    limitNames: CLI_LIMIT_NAMES,
  };
}
