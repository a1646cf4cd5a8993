/**
 * The session limits a person at the CLI can set — memory, the largest file
 * moved in or out, what /mnt/data may hold — as flags taking sizes like
 * `512M` or `2G`, and the session options they make: limit errors then name
 * these flags, not the library's options.
 */
import type { Command } from 'commander';
import { CLI_LIMIT_NAMES } from '../session/limit-names.js';
import type { SessionOptions } from '../session/options.js';
import { CliExit, EXIT_USAGE } from './exit-codes.js';

export interface LimitCliOptions {
  memory?: string;
  maxUpload?: string;
  maxData?: string;
}

const UNITS: Record<string, number> = { '': 1, b: 1, k: 1024, m: 1024 ** 2, g: 1024 ** 3, t: 1024 ** 4 };

/** `512M`, `2G`, `1.5GiB`, `64MB`, `1048576`: binary units, so `1G` is 1024³ bytes. */
export function parseSize(flag: string, value: string): number {
  const match = value.trim().match(/^(\d+(?:\.\d+)?)\s*([kmgt]?)(?:i?b)?$/i) ?? value.trim().match(/^(\d+)(b?)$/i);
  const scale = match ? UNITS[(match[2] ?? '').toLowerCase()] : undefined;
  const bytes = match && scale ? Math.floor(Number(match[1]) * scale) : 0;
  if (!(bytes > 0)) {
    throw new CliExit(EXIT_USAGE, `${flag} takes a size such as 512M or 2G; got ${JSON.stringify(value)}.`);
  }
  return bytes;
}

export function addLimitOptions(command: Command): Command {
  return command
    .option('--memory <size>', "the session's memory, its files in /mnt/data included (e.g. 4G); default 2G")
    .option('--max-upload <size>', 'the largest file moved into or out of the session (e.g. 256M); default 64M')
    .option('--max-data <size>', 'what /mnt/data may hold (e.g. 2G); default 1G, and below --memory');
}

/** The session options the flags give; limit errors name the flags. */
export function limitSessionOptions(
  options: LimitCliOptions,
): Pick<SessionOptions, 'limits' | 'fileTransferBytes' | 'limitNames'> {
  const memoryBytes = options.memory === undefined ? undefined : parseSize('--memory', options.memory);
  const dataBytes = options.maxData === undefined ? undefined : parseSize('--max-data', options.maxData);
  const fileTransferBytes = options.maxUpload === undefined ? undefined : parseSize('--max-upload', options.maxUpload);
  return {
    limits: { ...(memoryBytes ? { memoryBytes } : {}), ...(dataBytes ? { dataBytes } : {}) },
    ...(fileTransferBytes ? { fileTransferBytes } : {}),
    limitNames: CLI_LIMIT_NAMES,
  };
}
