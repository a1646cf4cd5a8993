/**
 * What `history_request` answers: the code each execution ran, kept on the
 * host (the sandbox's IPython keeps none across contexts), bounded in entries
 * and bytes, oldest dropped first.
 */
export interface HistoryEntry {
  /** The kernel incarnation (1, then 2 after a restart, …), as IPython numbers sessions. */
  session: number;
  line: number;
  input: string;
}

const MAX_ENTRIES = 1_000;
const MAX_BYTES = 4 * 1024 * 1024;
/** What a pause keeps of it (in the paused session's record, which stays small): the newest entries. */
export const KEPT_ENTRIES = 200;
export const KEPT_INPUT_CHARS = 64 * 1024;
const KEPT_CHARS = 256 * 1024;

/** An entry as a record keeps it: `[session, line, input]`, as `history_request` answers. */
export type KeptHistoryEntry = [number, number, string];

export class KernelHistory {
  private readonly entries: HistoryEntry[] = [];
  private bytes = 0;

  add(entry: HistoryEntry): void {
    this.entries.push(entry);
    this.bytes += entry.input.length;
    while (this.entries.length > MAX_ENTRIES || (this.bytes > MAX_BYTES && this.entries.length > 1)) {
      this.bytes -= this.entries.shift()?.input.length ?? 0;
    }
  }

  /**
   * The newest entries, within what a paused record keeps (an input longer than
   * KEPT_INPUT_CHARS is left out rather than cut: a cut cell would read as one
   * that ran).
   */
  kept(): KeptHistoryEntry[] {
    const kept: KeptHistoryEntry[] = [];
    let chars = 0;
    for (let index = this.entries.length - 1; index >= 0 && kept.length < KEPT_ENTRIES; index--) {
      const entry = this.entries[index] as HistoryEntry;
      if (entry.input.length > KEPT_INPUT_CHARS) continue;
      if (chars + entry.input.length > KEPT_CHARS) break;
      chars += entry.input.length;
      kept.push([entry.session, entry.line, entry.input]);
    }
    return kept.reverse();
  }

  /** Takes back what kept() gave (a resumed kernel's history, older than anything it runs now). */
  restore(kept: KeptHistoryEntry[]): void {
    for (const [session, line, input] of kept) this.add({ session, line, input });
  }

  /** `history_request` content → the `history` list of its reply: `[session, line, input]` triples. */
  answer(content: Record<string, unknown>): [number, number, string][] {
    const access = content.hist_access_type;
    const count = typeof content.n === 'number' && content.n > 0 ? Math.floor(content.n) : 10;
    let selected = this.entries;
    if (access === 'tail') selected = this.entries.slice(-count);
    else if (access === 'search') {
      const pattern = typeof content.pattern === 'string' ? globPattern(content.pattern) : undefined;
      selected = pattern ? this.entries.filter((entry) => pattern.test(entry.input)).slice(-count) : [];
    } else if (access === 'range') {
      const session = typeof content.session === 'number' ? content.session : 0;
      const start = typeof content.start === 'number' ? content.start : 0;
      const stop = typeof content.stop === 'number' ? content.stop : Number.POSITIVE_INFINITY;
      const latest = this.entries.at(-1)?.session ?? 0;
      // IPython counts sessions from the current one backwards when the number is not positive.
      const wanted = session > 0 ? session : latest + session;
      selected = this.entries.filter((entry) => entry.session === wanted && entry.line >= start && entry.line < stop);
    }
    return selected.map((entry) => [entry.session, entry.line, entry.input]);
  }
}

/** IPython's search patterns are globs (`*`, `?`) matched against the whole input. */
function globPattern(pattern: string): RegExp | undefined {
  if (pattern.length > 1_000) return undefined;
  const source = pattern
    .replace(/[.+^${}()|[\]\\]/g, '\\$&')
    .replace(/\*/g, '.*')
    .replace(/\?/g, '.');
  return new RegExp(`^${source}$`, 's');
}
