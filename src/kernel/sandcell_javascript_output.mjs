// What the JavaScript kernel sends about a cell's values: results and displays as MIME bundles
// within the execution's result budget, and errors as { name, value, traceback } within the
// output budget, their stacks cut to the user's frames, each frame of a cell shown with its line.
import { Buffer } from 'node:buffer';
import { inspect } from 'node:util';

// The types the host carries (MIME_TYPES in sandcell_kernel.py); anything else is dropped.
const MIME_TYPES = new Set([
  'text/plain',
  'text/html',
  'text/markdown',
  'text/latex',
  'image/png',
  'image/jpeg',
  'image/svg+xml',
  'application/json',
]);
const ERROR_NAME_LIMIT = 1024;
const METADATA_LIMIT = 1 << 20;
// As Node's REPL shows values; showProxy keeps a Proxy's traps from running.
const INSPECT_OPTIONS = Object.freeze({ showProxy: true, depth: 4, breakLength: 100 });

/** The text/plain of a value, as Node's REPL shows it; never throws. */
export function plainText(value) {
  try {
    return inspect(value, INSPECT_OPTIONS);
  } catch (error) {
    return `[value that could not be shown: ${safeMessage(error)}]`;
  }
}

function safeMessage(error) {
  try {
    return String(error?.message ?? error);
  } catch {
    return 'unprintable error';
  }
}

/**
 * The MIME bundle `display(value)` sends: an object whose keys are all MIME types is a bundle
 * (binary values, such as PNG bytes, become base64); anything else is shown as text/plain.
 */
export function displayBundle(value) {
  if (value === null || typeof value !== 'object' || Array.isArray(value) || ArrayBuffer.isView(value)) {
    return { 'text/plain': plainText(value) };
  }
  const keys = Object.keys(value);
  if (keys.length === 0 || !keys.every((key) => key.includes('/'))) return { 'text/plain': plainText(value) };
  const bundle = {};
  for (const key of keys) {
    if (!MIME_TYPES.has(key)) continue;
    const item = value[key];
    if (typeof item === 'string') bundle[key] = item;
    else if (ArrayBuffer.isView(item))
      bundle[key] = Buffer.from(item.buffer, item.byteOffset, item.byteLength).toString('base64');
    else if (item instanceof ArrayBuffer) bundle[key] = Buffer.from(item).toString('base64');
    else if (key === 'application/json') bundle[key] = item;
    else bundle[key] = String(item);
  }
  return bundle;
}

/** The metadata to send: a plain object whose JSON fits, else {} (and the bundle is marked truncated). */
export function boundedMetadata(metadata) {
  if (metadata === undefined || metadata === null) return { metadata: {}, cut: false };
  try {
    const json = JSON.stringify(metadata);
    if (typeof metadata === 'object' && !Array.isArray(metadata) && json.length <= METADATA_LIMIT) {
      return { metadata: JSON.parse(json), cut: false };
    }
  } catch {
    // Cyclic or otherwise not JSON: sent without it.
  }
  return { metadata: {}, cut: true };
}

/** `text` within `limit` UTF-8 bytes, with a note when cut (as cut_text in sandcell_kernel.py). */
export function cutText(text, limit, what) {
  if (text.length * 4 <= limit || Buffer.byteLength(text) <= limit) return { text, cut: false };
  const note = `\n[sandcell cut this ${what}: ${Buffer.byteLength(text)} bytes, the first %d kept; the limit follows the session option outputBytes]`;
  const room = Math.max(0, limit - note.length - 12);
  const head = Buffer.from(text)
    .subarray(0, room)
    .toString('utf8')
    .replace(/\uFFFD$/, '');
  return { text: head + note.replace('%d', String(Buffer.byteLength(head))), cut: true };
}

/** The error event's fields for a thrown value; `cells` maps a cell's number to its source and position map. */
export function errorFields(thrown, cells, limit) {
  const { name, value, traceback } = describeThrown(thrown, cells);
  const cutName = cutText(name, ERROR_NAME_LIMIT, 'error name');
  const cutValue = cutText(value, limit, 'error value');
  const cutTraceback = cutLines(traceback, limit);
  return {
    name: cutName.text,
    value: cutValue.text,
    traceback: cutTraceback.lines,
    cut: cutName.cut || cutValue.cut || cutTraceback.cut,
  };
}

function describeThrown(thrown, cells) {
  if (thrown instanceof Error || (thrown !== null && typeof thrown === 'object' && typeof thrown.stack === 'string')) {
    let name;
    let value;
    try {
      name = String(thrown.name ?? thrown.constructor?.name ?? 'Error');
      value = String(thrown.message ?? '');
    } catch {
      name = 'Error';
      value = '';
    }
    if (thrown.sandcellTraceback) return { name, value, traceback: thrown.sandcellTraceback };
    const traceback = [value ? `${name}: ${value}` : name, ...userFrames(thrown.stack, cells)];
    const details = ownDetails(thrown);
    if (details) traceback.push(details);
    return { name, value, traceback };
  }
  const shown = plainText(thrown);
  return { name: 'Uncaught', value: shown, traceback: [`Uncaught ${shown}`] };
}

/** The stack's frames, without the kernel's (everything from the first frame outside a cell that follows one). */
function userFrames(stack, cells) {
  const lines = String(stack ?? '').split('\n');
  const firstFrame = lines.findIndex((line) => /^\s+at /.test(line));
  if (firstFrame === -1) return [];
  const frames = lines.slice(firstFrame);
  const lastCellFrame = frames.findLastIndex((line) => line.includes('<cell-'));
  // An error no cell raised (a cell that did not compile) has only the kernel's frames.
  if (lastCellFrame === -1) return [];
  const kept = frames.slice(0, lastCellFrame + 1);
  const result = [];
  let caretShown = false;
  for (const frame of kept) {
    if (/sandcell_javascript_\w+\.mjs/.test(frame)) continue;
    const location = /<cell-(\d+)>:(\d+):(\d+)/.exec(frame);
    const cell = location ? cells.get(Number(location[1])) : undefined;
    if (!location || !cell) {
      result.push(frame);
      continue;
    }
    // The line after the cell's last is the kernel's call of the cell.
    if (Number(location[2]) > cell.lineCount) continue;
    const { line, column } = cell.mapPosition(Number(location[2]), Number(location[3]));
    result.push(frame.replace(location[0], `<cell-${location[1]}>:${line}:${column}`));
    const text = cell.source.split('\n')[line - 1];
    if (text === undefined) continue;
    result.push(`        ${text.trim()}`);
    if (!caretShown) {
      const indent = text.length - text.trimStart().length;
      result.push(`        ${' '.repeat(Math.max(0, column - 1 - indent))}^`);
      caretShown = true;
    }
  }
  return result;
}

/** Own properties an error carries beyond its message (code, errno, path, cause), as Node prints them. */
function ownDetails(error) {
  try {
    const keys = Object.keys(error).filter((key) => key !== 'stack' && key !== 'message');
    if (error.cause !== undefined && !keys.includes('cause')) keys.push('cause');
    if (keys.length === 0) return undefined;
    const details = {};
    for (const key of keys) details[key] = error[key];
    return plainText(details);
  } catch {
    return undefined;
  }
}

/** Traceback lines within `limit` bytes: the first ones (the error, then the innermost frames) are kept. */
function cutLines(lines, limit) {
  const kept = [];
  let used = 0;
  for (const [index, line] of lines.entries()) {
    const size = Buffer.byteLength(line) + 1;
    if (used + size > limit - 200) {
      if (kept.length === 0) kept.push(cutText(line, Math.max(0, limit - 200), 'traceback line').text);
      kept.push(
        `[sandcell cut ${lines.length - index} later traceback lines: the traceback is kept within the session option outputBytes]`,
      );
      return { lines: kept, cut: true };
    }
    kept.push(line);
    used += size;
  }
  return { lines: kept, cut: false };
}

/** A SyntaxError in a cell, as Node prints one: where, the line, a caret, then the message. */
export function syntaxError(source, position, message, cellName) {
  const before = source.slice(0, Math.max(0, Math.min(position, source.length)));
  const line = before.split('\n').length;
  const column = before.length - (before.lastIndexOf('\n') + 1);
  const text = source.split('\n')[line - 1] ?? '';
  const error = new SyntaxError(message);
  error.sandcellTraceback = [`${cellName}:${line}`, text, `${' '.repeat(column)}^`, `SyntaxError: ${message}`];
  return error;
}
