/**
 * Flags that take sizes and durations, on every command alike (src/internal/units.ts holds the
 * grammar): a flag's text becomes bytes or milliseconds, or a usage error naming the flag.
 */
import { parseDuration, parseSize } from '../internal/units.js';
import { CliExit, EXIT_USAGE } from './exit-codes.js';

/** The grammar, for the end of a command's --help. */
export const UNITS_HELP =
  '\nSizes: 512K, 64M, 2G (binary: 1G is 1024M; a bare number is bytes). Durations: 250ms, 30s, 5m, 1h (a bare number is seconds).';

/** Bytes from a size flag (`512M`, `2G`, `4096`); refuses what is not a size of at least `minimum` (1). */
export function sizeFlag(flag: string, value: string, minimum = 1): number {
  const bytes = parseSize(value);
  if (bytes === undefined || bytes < minimum) {
    throw new CliExit(EXIT_USAGE, `${flag} takes a size such as 512M or 2G; got ${JSON.stringify(value)}.`);
  }
  return bytes;
}

/** `sizeFlag` for a flag that may be left out. */
export function optionalSizeFlag(flag: string, value: string | undefined, minimum = 1): number | undefined {
  return value === undefined ? undefined : sizeFlag(flag, value, minimum);
}

/**
 * Milliseconds from a duration flag (`30s`, `5m`, `1h`, `250ms`; a bare number is seconds);
 * refuses what is not a duration, or one shorter than `minimumMs` (a positive one by default).
 */
export function durationFlag(flag: string, value: string, minimumMs = 1): number {
  const milliseconds = parseDuration(value);
  if (milliseconds === undefined || milliseconds < minimumMs) {
    throw new CliExit(
      EXIT_USAGE,
      `${flag} takes a duration such as 30s, 5m or 1h (a bare number is seconds); got ${JSON.stringify(value)}.`,
    );
  }
  return milliseconds;
}

/** `durationFlag` for a flag that may be left out. */
export function optionalDurationFlag(flag: string, value: string | undefined, minimumMs = 1): number | undefined {
  return value === undefined ? undefined : durationFlag(flag, value, minimumMs);
}
