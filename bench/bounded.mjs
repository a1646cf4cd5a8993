// Every part of the bench has a time bound (issue 44): a part that throws or stalls is reported as failed,
// with its first error, and the parts after it still run and print. A stalled part's work is abandoned,
// not awaited, so whoever runs parts ends the process with process.exit() once the table is out.

/** `part()`'s value, or, when it threw or did not finish within `limitMs`, `{ failed: why }`. */
export async function bounded(name, limitMs, part) {
  let timer;
  const stalled = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${name} stalled: not done within ${limitMs / 1000} s`)), limitMs);
  });
  try {
    return { value: await Promise.race([part(), stalled]) };
  } catch (error) {
    return { failed: firstLine(error) };
  } finally {
    clearTimeout(timer);
  }
}

/** An error's message, on one line and short enough for a table's cell. */
export function firstLine(error) {
  const text = String(error?.message ?? error).split('\n')[0] ?? '';
  return text.length > 160 ? `${text.slice(0, 157)}…` : text;
}

/** A table row (`[measure, stat, observed, unit, target, met]`) for a part that failed. */
export function failedRow(name, why) {
  return [name, 'FAILED', why, '', 'done', false];
}

/** Minutes, for the bounds. */
export const minutes = (count) => count * 60_000;
