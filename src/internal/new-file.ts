/**
 * Writing a file on the host without replacing one: an existing name gets a
 * number (`chart.png` → `chart-2.png`), chosen with an exclusive create so two
 * writers never pick the same one.
 */
import { writeFile } from 'node:fs/promises';
import path from 'node:path';

/** Past this many taken numbers something is wrong (a directory full of copies): fail rather than loop. */
const MAX_NUMBER = 10_000;

/** Writes `content` at `target`, or at the first free numbered name beside it; returns where it went. */
export async function writeNewFile(target: string, content: Uint8Array | string): Promise<string> {
  const extension = path.extname(target);
  const stem = target.slice(0, target.length - extension.length);
  for (let number = 1; number <= MAX_NUMBER; number++) {
    const candidate = number === 1 ? target : `${stem}-${number}${extension}`;
    try {
      await writeFile(candidate, content, { flag: 'wx' });
      return candidate;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
  }
  throw new Error(`${target} and ${MAX_NUMBER - 1} numbered copies of it exist already; clear the directory.`);
}
