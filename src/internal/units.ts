/**
 * Sizes and durations as people write them, one grammar for every flag and
 * every SANDCELL_* variable: sizes `512`, `512K`, `64M`, `2G`, `1.5GiB`
 * (binary units, so `1G` is 1024³ bytes; a bare number is bytes), durations
 * `250ms`, `30s`, `5m`, `1h`, `1h30m` (a bare number is seconds, unless a
 * caller reading an old `…_MS` variable says milliseconds). The parsers answer
 * undefined for text that is neither; each front door words its own refusal.
 */

const SIZE_UNITS: Record<string, number> = { '': 1, b: 1, k: 1024, m: 1024 ** 2, g: 1024 ** 3, t: 1024 ** 4 };

/** Bytes, or undefined when `text` is not a size. `64MB` and `64MiB` are both 64 MiB. */
export function parseSize(text: string): number | undefined {
  const match = /^(\d+(?:\.\d+)?)\s*(?:([kmgt])(?:i?b)?|(b))?$/i.exec(text.trim());
  if (!match) return undefined;
  const scale = SIZE_UNITS[(match[2] ?? match[3] ?? '').toLowerCase()] ?? 1;
  return Math.floor(Number(match[1]) * scale);
}

const DURATION_UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

export type DurationUnit = 'ms' | 's';

/**
 * Milliseconds, or undefined when `text` is not a duration. Parts add up
 * (`1h30m`); a bare number is in `bareUnit` (seconds unless said otherwise).
 */
export function parseDuration(text: string, bareUnit: DurationUnit = 's'): number | undefined {
  const trimmed = text.trim().toLowerCase();
  if (/^\d+(?:\.\d+)?$/.test(trimmed)) return Math.round(Number(trimmed) * (DURATION_UNITS[bareUnit] ?? 1000));
  if (!/^(?:\d+(?:\.\d+)?\s*(?:ms|s|m|h|d)\s*)+$/.test(trimmed)) return undefined;
  let milliseconds = 0;
  for (const part of trimmed.matchAll(/(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)/g)) {
    milliseconds += Number(part[1]) * (DURATION_UNITS[part[2] ?? ''] ?? 0);
  }
  return Math.round(milliseconds);
}

/** A size as a flag takes it, for help texts: `64M`, `2G`, `2112K`, `100` (bytes). */
export function formatSizeFlag(bytes: number): string {
  for (const [unit, scale] of [
    ['T', 1024 ** 4],
    ['G', 1024 ** 3],
    ['M', 1024 ** 2],
    ['K', 1024],
  ] as const) {
    if (bytes >= scale && bytes % scale === 0) return `${bytes / scale}${unit}`;
  }
  return String(bytes);
}

/** A duration as a flag takes it, for help texts and messages: `20m`, `10s`, `1h`, `250ms`, `1m30s`. */
export function formatDuration(milliseconds: number): string {
  if (milliseconds === 0) return '0s';
  if (milliseconds % 1000 !== 0) return `${milliseconds}ms`;
  let rest = milliseconds;
  let text = '';
  for (const [unit, scale] of [
    ['d', 86_400_000],
    ['h', 3_600_000],
    ['m', 60_000],
    ['s', 1000],
  ] as const) {
    const whole = Math.floor(rest / scale);
    if (whole > 0) text += `${whole}${unit}`;
    rest -= whole * scale;
  }
  return text;
}
