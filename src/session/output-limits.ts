/**
 * The host's bounds on what one execution may hand back, and the cutting that
 * keeps it within them. The kernel applies the same bounds before sending
 * (sandcell_kernel.py: cut_text, cut_traceback), so an honest kernel's output
 * is never cut twice; these apply to whatever reaches the host regardless.
 */
import type { ExecutionError } from './execution.js';

/** Exception class names are identifiers; anything longer is cut. */
export const ERROR_NAME_BYTES = 1024;

/** Room kept in a cut traceback for the note that says how many entries were left out. */
const TRACEBACK_NOTE_BYTES = 200;

/** Room for framing (type, id, keys) and notes in a protocol line, on top of what it carries. */
const FRAMING_BYTES = 1024 * 1024;

/**
 * JSON with `ensure_ascii` (what the kernel writes) takes at most six bytes per
 * UTF-8 byte of text: a control character becomes `\u00XX`.
 */
const WORST_CASE_ESCAPING = 6;

export interface MessageLimits {
  /** The longest line accepted while no request is pending: one execution event. */
  executionMessageBytes: number;
  /** The longest line accepted while a request is pending: a file read's reply carries the file in base64. */
  replyMessageBytes: number;
}

/**
 * How long a protocol line may be. An honest kernel's lines always fit: a
 * result is at most `resultBytes` on the wire (the kernel counts whole lines),
 * a stream chunk at most `outputBytes` of text, an error at most `outputBytes`
 * of value plus `outputBytes` of traceback, each escaped. Longer lines are
 * dropped unread, so this is also what one line can cost the host.
 */
export function messageLimits(options: { outputBytes: number; resultBytes: number; fileTransferBytes: number }) {
  const executionMessageBytes =
    Math.max(options.resultBytes, 2 * WORST_CASE_ESCAPING * options.outputBytes) + FRAMING_BYTES;
  const base64Bytes = Math.ceil(options.fileTransferBytes / 3) * 4;
  return {
    executionMessageBytes,
    replyMessageBytes: Math.max(base64Bytes + FRAMING_BYTES, executionMessageBytes),
  } satisfies MessageLimits;
}

/**
 * `text` within `maxBytes` UTF-8 bytes, cut on a character boundary; a copy, so
 * that the cut text does not keep a huge original alive (V8 slices share it).
 */
export function headBytes(text: string, maxBytes: number): string {
  if (maxBytes <= 0) return '';
  // A character takes at least one byte: no more than maxBytes of them can fit.
  const candidate = text.length > maxBytes ? text.slice(0, maxBytes) : text;
  return Buffer.from(candidate, 'utf8')
    .subarray(0, maxBytes)
    .toString('utf8')
    .replace(/\uFFFD$/, '');
}

/** `text` within `maxBytes`, ending with a note of the cut when it was cut. */
export function cutText(text: string, maxBytes: number, what: string): { text: string; cut: boolean } {
  // A character takes at most 4 bytes, so a short text needs no measuring.
  if (text.length * 4 <= maxBytes) return { text, cut: false };
  const size = Buffer.byteLength(text, 'utf8');
  if (size <= maxBytes) return { text, cut: false };
  const note = (kept: number) =>
    `\n[sandcell cut this ${what}: ${size} bytes, the first ${kept} kept; the limit follows the session option outputBytes]`;
  const head = headBytes(text, Math.max(0, maxBytes - Buffer.byteLength(note(size))));
  return { text: head + note(Buffer.byteLength(head)), cut: true };
}

/**
 * The traceback within `maxBytes`. The last entry names the error (repeating
 * its value) and the innermost frames say where it happened, so entries are
 * kept from the end: the last cut to half the bound, then whole earlier ones
 * while they fit, with a note for those left out.
 */
export function cutTraceback(entries: string[], maxBytes: number): { traceback: string[]; cut: boolean } {
  const sizes = entries.map((entry) => Buffer.byteLength(entry, 'utf8'));
  const last = entries.at(-1);
  if (last === undefined || sizes.reduce((sum, size) => sum + size, 0) <= maxBytes) {
    return { traceback: entries, cut: false };
  }
  const kept = [cutText(last, Math.floor(maxBytes / 2), 'traceback line').text];
  let room = maxBytes - Buffer.byteLength(kept[0] ?? '') - TRACEBACK_NOTE_BYTES;
  let index = entries.length - 2;
  for (; index >= 0 && (sizes[index] ?? 0) <= room; index--) {
    kept.push(entries[index] ?? '');
    room -= sizes[index] ?? 0;
  }
  if (index >= 0) {
    kept.push(
      `[sandcell cut ${index + 1} earlier traceback entries: the traceback is kept within the session option outputBytes]`,
    );
  }
  return { traceback: kept.reverse(), cut: true };
}

/** An error as the kernel reported it, each part bounded: the name by ERROR_NAME_BYTES, value and traceback by `maxBytes` each. */
export function boundedError(error: ExecutionError, maxBytes: number): { error: ExecutionError; cut: boolean } {
  const boundedName = cutText(error.name, ERROR_NAME_BYTES, 'error name');
  const boundedValue = cutText(error.value, maxBytes, 'error value');
  const boundedTraceback = cutTraceback(error.traceback, maxBytes);
  return {
    error: { name: boundedName.text, value: boundedValue.text, traceback: boundedTraceback.traceback },
    cut: boundedName.cut || boundedValue.cut || boundedTraceback.cut,
  };
}
