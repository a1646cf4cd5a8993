/**
 * Counting the rows of a large data file without parsing it: byte-level
 * scanners (CSV/TSV records with RFC 4180 quoting, JSON lines, lines, the
 * elements of a top-level JSON array) that hold no more than a few flags of
 * state, and work through the file in chunks, yielding to the event loop
 * between them, so a server previewing a big upload keeps answering others.
 * Only ASCII bytes are structural, and UTF-8 never uses them inside a
 * multi-byte character, so scanning bytes counts what parsing the text would.
 */
import { setImmediate as yieldToEventLoop } from 'node:timers/promises';

/** Bytes scanned between two yields to the event loop. */
export const SCAN_CHUNK_BYTES = 1 << 20;

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const LINE_FEED = 0x0a;
const CARRIAGE_RETURN = 0x0d;
const COMMA = 0x2c;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;

const isJsonSpace = (byte: number): boolean => byte === 0x20 || byte === 0x09 || byte === 0x0a || byte === 0x0d;
const isSpace = (byte: number): boolean => isJsonSpace(byte) || byte === 0x0b || byte === 0x0c;

/** Bytes after a UTF-8 byte order mark, if there is one. */
export function withoutByteOrderMark(bytes: Uint8Array): Uint8Array {
  return bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf ? bytes.subarray(3) : bytes;
}

/** Calls `visit` with each chunk of `bytes` (and its offset), yielding to the event loop between chunks. */
export async function eachChunk(
  bytes: Uint8Array,
  visit: (chunk: Uint8Array, offset: number) => void,
  chunkBytes = SCAN_CHUNK_BYTES,
): Promise<void> {
  for (let offset = 0; offset < bytes.length; offset += chunkBytes) {
    if (offset > 0) await yieldToEventLoop();
    visit(bytes.subarray(offset, offset + chunkBytes), offset);
  }
}

/**
 * The records `parseDelimited` would find (blank lines skipped, quoted fields
 * may hold delimiters and newlines), without building any of them.
 */
export async function countDelimitedRecords(
  bytes: Uint8Array,
  delimiter: string,
  chunkBytes = SCAN_CHUNK_BYTES,
): Promise<number> {
  const separator = delimiter.charCodeAt(0);
  let records = 0;
  let quoted = false;
  let quoteInQuotes = false; // either the closing quote or the first of an escaped pair: the next byte says
  let fieldEmpty = true;
  let recordHasDelimiter = false;
  await eachChunk(
    withoutByteOrderMark(bytes),
    (chunk) => {
      for (let index = 0; index < chunk.length; index++) {
        const byte = chunk[index]!;
        if (quoteInQuotes) {
          quoteInQuotes = false;
          if (byte === QUOTE) {
            fieldEmpty = false;
            continue;
          }
          quoted = false;
        }
        if (quoted) {
          if (byte === QUOTE) quoteInQuotes = true;
          else fieldEmpty = false;
        } else if (byte === QUOTE && fieldEmpty) {
          quoted = true;
        } else if (byte === separator) {
          recordHasDelimiter = true;
          fieldEmpty = true;
        } else if (byte === LINE_FEED || byte === CARRIAGE_RETURN) {
          // CRLF ends a record at CR; the LF then ends an empty one, which is skipped like a blank line.
          if (recordHasDelimiter || !fieldEmpty) records++;
          recordHasDelimiter = false;
          fieldEmpty = true;
        } else {
          fieldEmpty = false;
        }
      }
    },
    chunkBytes,
  );
  if (recordHasDelimiter || !fieldEmpty) records++;
  return records;
}

/** Lines holding anything but whitespace (the records of a JSON lines file). */
export async function countNonBlankLines(bytes: Uint8Array, chunkBytes = SCAN_CHUNK_BYTES): Promise<number> {
  let lines = 0;
  let content = false;
  await eachChunk(
    withoutByteOrderMark(bytes),
    (chunk) => {
      for (let index = 0; index < chunk.length; index++) {
        const byte = chunk[index]!;
        if (byte === LINE_FEED) {
          if (content) lines++;
          content = false;
        } else if (!content && !isSpace(byte)) {
          content = true;
        }
      }
    },
    chunkBytes,
  );
  return content ? lines + 1 : lines;
}

/** Lines as `text.split(/\r?\n/)` counts them: line feeds plus one. */
export async function countLines(bytes: Uint8Array, chunkBytes = SCAN_CHUNK_BYTES): Promise<number> {
  let lines = 1;
  await eachChunk(
    bytes,
    (chunk) => {
      for (let index = chunk.indexOf(LINE_FEED); index >= 0; index = chunk.indexOf(LINE_FEED, index + 1)) lines++;
    },
    chunkBytes,
  );
  return lines;
}

export interface JsonArrayScan {
  /** Elements of the top-level array. */
  count: number;
  /** The elements that end within the first `sampleBytes`, parsed, in order. */
  sample: unknown[];
}

/**
 * Counts the elements of a top-level JSON array and parses those within the
 * first `sampleBytes`. Undefined when the file is not one array, or what was
 * parsed is not JSON (the elements past the sample are counted, not checked).
 */
export async function scanJsonArray(
  bytes: Uint8Array,
  sampleBytes: number,
  chunkBytes = SCAN_CHUNK_BYTES,
): Promise<JsonArrayScan | undefined> {
  const body = withoutByteOrderMark(bytes);
  const decoder = new TextDecoder();
  const sample: unknown[] = [];
  let count = 0;
  let depth = 0;
  let opened = false;
  let closed = false;
  let inString = false;
  let escaped = false;
  let elementStart = -1;
  let broken = false;
  const endElement = (end: number): void => {
    if (elementStart < 0) {
      broken = true; // `[,` or `[1,]`
      return;
    }
    count++;
    if (end <= sampleBytes) {
      try {
        sample.push(JSON.parse(decoder.decode(body.subarray(elementStart, end))));
      } catch {
        broken = true;
      }
    }
    elementStart = -1;
  };
  await eachChunk(
    body,
    (chunk, offset) => {
      for (let index = 0; index < chunk.length && !broken; index++) {
        const byte = chunk[index]!;
        if (inString) {
          if (escaped) escaped = false;
          else if (byte === BACKSLASH) escaped = true;
          else if (byte === QUOTE) inString = false;
          continue;
        }
        if (isJsonSpace(byte)) continue;
        if (depth === 0) {
          // Only one array, opened once; nothing after it.
          if (byte !== OPEN_BRACKET || opened) broken = true;
          opened = true;
          depth = 1;
          continue;
        }
        if (depth === 1 && elementStart < 0 && byte !== CLOSE_BRACKET && byte !== COMMA) {
          elementStart = offset + index;
        }
        if (byte === QUOTE) inString = true;
        else if (byte === OPEN_BRACKET || byte === OPEN_BRACE) depth++;
        else if (byte === CLOSE_BRACKET || byte === CLOSE_BRACE) {
          depth--;
          if (depth === 0) {
            if (elementStart >= 0 || count > 0) endElement(offset + index);
            closed = true;
          }
        } else if (byte === COMMA && depth === 1) endElement(offset + index);
      }
    },
    chunkBytes,
  );
  return broken || !closed ? undefined : { count, sample };
}
