/**
 * What a conversation keeps of one piece of code's output. Stdout, stderr and
 * results share one budget, spent in the order they arrive: the output that
 * crosses it is cut, with a note where the cut is (in the stream's text, or in
 * the result's `text/plain`), and what comes after is not kept. The error
 * (name, value, traceback) has a budget of its own, so a long output never
 * hides why the code failed. Sizes are UTF-8 bytes as the history's JSON holds
 * them. The session's own caps are not relied on: the kernel is untrusted.
 */
import { formatBytes } from '../../protocol/format-bytes.js';
import type { PresentedResult, TracebackError } from '../../protocol/index.js';

/** Bytes `value` takes in the history's JSON. */
export function jsonBytes(value: unknown): number {
  try {
    return Buffer.byteLength(JSON.stringify(value) ?? '', 'utf8');
  } catch {
    return Number.POSITIVE_INFINITY; // unserialisable (too deep): never kept
  }
}

/** The head of `text` within `maxBytes` of UTF-8, never splitting a character. */
export function headWithin(text: string, maxBytes: number): string {
  if (maxBytes <= 0) return '';
  if (text.length <= maxBytes / 3 || Buffer.byteLength(text, 'utf8') <= maxBytes) return text;
  let head = text.slice(0, maxBytes);
  while (Buffer.byteLength(head, 'utf8') > maxBytes) {
    head = head.slice(0, Math.floor(head.length * 0.9));
  }
  const last = head.charCodeAt(head.length - 1);
  return last >= 0xd800 && last <= 0xdbff ? head.slice(0, -1) : head; // half a surrogate pair
}

export function outputCutNote(limitBytes: number): string {
  return `\n[output cut: this conversation keeps the first ${formatBytes(limitBytes)} of each step's output; the rest was not kept]\n`;
}

export class OutputBudget {
  private used = 0;
  private cut = false;
  /** Results the code produced so far, kept or not (to match a later list of all of them). */
  resultsSeen = 0;

  constructor(readonly limitBytes: number) {}

  /** Nothing more is kept: output crossed the budget. */
  get exhausted(): boolean {
    return this.cut;
  }

  /** The part of a stream's text that is kept (with the note where it was cut), or undefined for none. */
  text(text: string): string | undefined {
    if (this.cut) return undefined;
    const size = Buffer.byteLength(text, 'utf8');
    if (this.used + size <= this.limitBytes) {
      this.used += size;
      return text;
    }
    const head = headWithin(text, this.limitBytes - this.used);
    this.cut = true;
    this.used = this.limitBytes;
    return head + outputCutNote(this.limitBytes);
  }

  /**
   * A result as kept: whole when it fits; else its text values cut to what is
   * left, other values and the metadata dropped, and the note in `text/plain`.
   * Undefined once the budget is spent. Its images stay (stored apart, bounded
   * with the conversation's history).
   */
  result(result: PresentedResult): PresentedResult | undefined {
    this.resultsSeen++;
    if (this.cut) return undefined;
    const size = jsonBytes(result.data) + jsonBytes(result.metadata);
    if (this.used + size <= this.limitBytes) {
      this.used += size;
      return result;
    }
    const data: Record<string, unknown> = {};
    let left = this.limitBytes - this.used;
    for (const [mimeType, value] of Object.entries(result.data)) {
      if (typeof value !== 'string' || left <= 0) continue;
      const head = headWithin(value, left);
      left -= Buffer.byteLength(head, 'utf8');
      if (head !== '') data[mimeType] = head;
    }
    data['text/plain'] =
      `${typeof data['text/plain'] === 'string' ? data['text/plain'] : ''}${outputCutNote(this.limitBytes)}`;
    this.cut = true;
    this.used = this.limitBytes;
    return { ...result, data, metadata: {} };
  }
}

/** An error as kept: its value and traceback within `limitBytes` together, cut with a note. */
export function errorWithin(error: TracebackError, limitBytes: number): TracebackError {
  if (jsonBytes(error) <= limitBytes) return error;
  const note = outputCutNote(limitBytes).trim();
  const name = headWithin(error.name, 1024);
  const value = headWithin(error.value, Math.floor(limitBytes / 4));
  let left = limitBytes - Buffer.byteLength(value, 'utf8');
  const traceback: string[] = [];
  for (const line of error.traceback) {
    const head = headWithin(line, left);
    if (head === '') break;
    traceback.push(head);
    left -= Buffer.byteLength(head, 'utf8') + 4;
    if (head !== line) break;
  }
  return { name, value: value === error.value ? value : `${value}…`, traceback: [...traceback, note] };
}
