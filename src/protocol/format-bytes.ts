/**
 * A size in words, one way everywhere a person reads one: the session's and the server's messages,
 * what the agents tell the model, the Discord bot and the web UI (which bundles this folder).
 */

const UNITS = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];

/**
 * `512 B`, `1.5 KiB`, `1 MiB`, `120.6 KiB`: binary units (as the limits' options take them), at most
 * one decimal, none when it is zero, so a round limit reads as set. A size that is not a finite
 * number (unknown) reads as nothing.
 */
export function formatBytes(bytes: number): string {
  if (!Number.isFinite(bytes)) return '';
  const tenths = (unit: number) => Math.round((bytes / 1024 ** unit) * 10) / 10;
  let unit = 0;
  // On the rounded value, so 1023.97 KiB reads `1 MiB` rather than `1024 KiB`.
  while (unit < UNITS.length - 1 && Math.abs(tenths(unit)) >= 1024) unit++;
  return `${tenths(unit)} ${UNITS[unit]}`;
}
