/**
 * Completion and inspection as the host reads them: the kernel's untrusted
 * replies to `complete` and `inspect`, checked for shape and cut to bounds
 * here, so a kernel (or code writing to its channel) cannot hand a client a
 * million matches or a gigabyte of help text.
 */

/** What may replace `code` between `cursorStart` and `cursorEnd` (code points, as Jupyter counts them). */
export interface Completion {
  matches: string[];
  cursorStart: number;
  cursorEnd: number;
  /** The kernel's extra facts (Python: `_jupyter_types_experimental`, each match's type and signature). */
  metadata: Record<string, unknown>;
}

/** Help on the name at the cursor: `data` is a MIME bundle with `text/plain` at least when `found`. */
export interface Inspection {
  found: boolean;
  data: Record<string, unknown>;
  metadata: Record<string, unknown>;
}

/** More than any menu shows; the kernels send no more than this either. */
export const COMPLETION_MATCH_LIMIT = 1000;
export const COMPLETION_MATCH_CHARS = 1000;
/** The metadata's JSON, past which it is dropped (the matches stay). */
export const ASSIST_METADATA_CHARS = 256 * 1024;
/** All of an inspection's MIME data together, in characters. */
export const INSPECTION_DATA_CHARS = 1024 * 1024;

export function parseCompletion(body: Record<string, unknown>): Completion | { invalid: string } {
  const { matches, cursorStart, cursorEnd } = body;
  if (!Array.isArray(matches)) return { invalid: 'a complete reply without its matches' };
  if (!isPosition(cursorStart) || !isPosition(cursorEnd) || cursorStart > cursorEnd) {
    return { invalid: 'a complete reply whose cursor positions are not a span' };
  }
  const kept: string[] = [];
  for (const match of matches) {
    if (kept.length === COMPLETION_MATCH_LIMIT) break;
    if (typeof match === 'string' && match.length <= COMPLETION_MATCH_CHARS) kept.push(match);
  }
  return { matches: kept, cursorStart, cursorEnd, metadata: boundedMetadata(body.metadata) };
}

export function parseInspection(body: Record<string, unknown>): Inspection | { invalid: string } {
  if (typeof body.found !== 'boolean') return { invalid: 'an inspect reply without `found`' };
  const empty = { found: false, data: {}, metadata: {} };
  if (!body.found) return empty;
  if (!isPlainObject(body.data) || typeof body.data['text/plain'] !== 'string') {
    return { invalid: 'an inspect reply that found something but has no text/plain' };
  }
  // text/plain first, so it is the one kept whole when the bundle is over the bound.
  const data: Record<string, string> = {};
  let room = INSPECTION_DATA_CHARS;
  for (const [mime, value] of [['text/plain', body.data['text/plain']], ...Object.entries(body.data)]) {
    if (typeof value !== 'string' || mime in data || mime.length > 255 || room <= 0) continue;
    if (value.length > room && mime !== 'text/plain') continue;
    data[mime] = value.slice(0, room);
    room -= data[mime].length;
  }
  return { found: true, data, metadata: boundedMetadata(body.metadata) };
}

/** Whether `position` lies in `code`, counting code points: the kernels' positions are checked against what was asked. */
export function withinCode(code: string, reply: Completion): boolean {
  return reply.cursorEnd <= codePointLength(code);
}

export function codePointLength(text: string): number {
  let length = 0;
  for (const _ of text) length += 1;
  return length;
}

function boundedMetadata(metadata: unknown): Record<string, unknown> {
  if (!isPlainObject(metadata)) return {};
  try {
    return JSON.stringify(metadata).length <= ASSIST_METADATA_CHARS ? metadata : {};
  } catch {
    return {};
  }
}

function isPosition(value: unknown): value is number {
  return typeof value === 'number' && Number.isInteger(value) && value >= 0;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
