// TypeScript cells: transpiled by esbuild (Debian's `esbuild` binary, one process per cell),
// never type-checked. A cell that is already valid JavaScript is not transpiled at all, so a
// TypeScript context pays nothing for `1 + 1`; esbuild's inline source map takes positions in
// a transpiled cell back to the TypeScript the user wrote.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { PARSE_OPTIONS } from './sandcell_javascript_cell.mjs';

const ESBUILD_CANDIDATES = ['/usr/bin/esbuild', '/usr/local/bin/esbuild'];
// Imports kept even when only types use them: a later cell may use the value.
// Legacy decorators: esbuild 0.17 has no standard ones.
const TSCONFIG = JSON.stringify({ compilerOptions: { preserveValueImports: true, experimentalDecorators: true } });
const TRANSPILE_TIMEOUT_MS = 30_000;
const SOURCE_MAP_PREFIX = '//# sourceMappingURL=data:application/json;base64,';

/** A cell esbuild refused; `traceback` is its report, positions naming the cell. */
export class TranspileError extends SyntaxError {
  constructor(message, report) {
    super(message);
    this.name = 'SyntaxError';
    this.sandcellTraceback = report;
  }
}

/** The transpiler could not run (missing, killed): the cell's error, by its own name. */
export class TranspilerUnavailableError extends Error {
  constructor(message, signal) {
    super(message);
    this.name = signal === 'SIGINT' ? 'Interrupted' : 'TranspilerUnavailable';
  }
}

/**
 * Whether a TypeScript cell must be transpiled: it does not parse as JavaScript, or it parses
 * only by reading a generic call `f<T>(x)` as the comparisons `(f < T) > (x)`.
 */
export function needsTranspile(parser, source) {
  let program;
  try {
    program = parser.parse(source, PARSE_OPTIONS);
  } catch {
    return true;
  }
  return source.includes('<') && source.includes('>') && hasGenericCallShape(program);
}

function hasGenericCallShape(node) {
  if (node.type === 'BinaryExpression' && node.operator === '>' && isLessThan(node.left)) return true;
  if (node.type === 'SequenceExpression' && isLessThan(node.expressions[0])) {
    const last = node.expressions[node.expressions.length - 1];
    if (last.type === 'BinaryExpression' && last.operator === '>') return true;
  }
  for (const key in node) {
    const value = node[key];
    if (Array.isArray(value)) {
      for (const child of value)
        if (child !== null && typeof child?.type === 'string' && hasGenericCallShape(child)) return true;
    } else if (value !== null && typeof value === 'object' && typeof value.type === 'string') {
      if (hasGenericCallShape(value)) return true;
    }
  }
  return false;
}

function isLessThan(node) {
  return node?.type === 'BinaryExpression' && node.operator === '<';
}

let esbuildPath;
function findEsbuild() {
  esbuildPath ??= ESBUILD_CANDIDATES.find((candidate) => existsSync(candidate)) ?? 'esbuild';
  return esbuildPath;
}

function runEsbuild(source, extraArguments) {
  const result = spawnSync(
    findEsbuild(),
    ['--loader=ts', '--log-level=error', '--color=false', `--tsconfig-raw=${TSCONFIG}`, ...extraArguments],
    { input: source, encoding: 'utf8', timeout: TRANSPILE_TIMEOUT_MS, maxBuffer: 64 << 20, stdio: 'pipe' },
  );
  if (result.error?.code === 'ENOENT') {
    throw new TranspilerUnavailableError(
      'TypeScript cells need esbuild, which is not installed in this sandbox (Debian package `esbuild`; `npm run setup` installs it on the host).',
    );
  }
  if (result.signal || result.error) {
    throw new TranspilerUnavailableError(
      `esbuild did not finish (${result.signal ?? result.error.message})`,
      result.signal ?? undefined,
    );
  }
  return result;
}

/** Transpiles a TypeScript cell: `{ code, mapPosition(line, column) }` (positions 1-based), or throws TranspileError. */
export function transpile(source, cellName) {
  const result = runEsbuild(source, ['--sourcemap=inline']);
  if (result.status !== 0) {
    // esbuild's report, as a JavaScript syntax error reads: where, the line and a caret, then the message.
    const report = result.stderr.replaceAll('<stdin>', cellName).trimEnd().split('\n');
    const messages = report.filter((line) => line.includes('[ERROR] ')).map((line) => line.split('[ERROR] ')[1]);
    const message = messages[0] ?? 'esbuild could not transpile the cell';
    const excerpt = report.filter(
      (line) => !line.includes('[ERROR] ') && line.trim() !== '' && !/^\d+ errors?$/.test(line),
    );
    throw new TranspileError(message, [...excerpt.map((line) => line.replace(/^ {4}/, '')), `SyntaxError: ${message}`]);
  }
  const mapStart = result.stdout.lastIndexOf(SOURCE_MAP_PREFIX);
  if (mapStart === -1) return { code: result.stdout, mapPosition: (line, column) => ({ line, column }) };
  const map = JSON.parse(Buffer.from(result.stdout.slice(mapStart + SOURCE_MAP_PREFIX.length), 'base64').toString());
  return { code: result.stdout.slice(0, mapStart), mapPosition: sourceMapLookup(map.mappings) };
}

/** Whether esbuild reads a TypeScript cell as complete, unfinished or invalid. */
export function typescriptCompleteness(source) {
  const result = runEsbuild(source, []);
  if (result.status === 0) return 'complete';
  return /end of file/.test(result.stderr) ? 'incomplete' : 'invalid';
}

const BASE64 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';

/** A lookup from generated (line, column) to source (line, column), from a version 3 source map's mappings. */
function sourceMapLookup(mappings) {
  const lines = [];
  const state = [0, 0, 0, 0, 0]; // generated column, source, source line, source column, name
  for (const lineText of mappings.split(';')) {
    const segments = [];
    state[0] = 0;
    for (const segmentText of lineText.split(',')) {
      if (segmentText === '') continue;
      const fields = decodeVlq(segmentText);
      for (const [index, delta] of fields.entries()) state[index] += delta;
      if (fields.length >= 4) segments.push([state[0], state[2], state[3]]);
    }
    lines.push(segments);
  }
  return (line, column) => {
    const segments = lines[line - 1];
    if (!segments || segments.length === 0) return { line, column };
    let found = segments[0];
    for (const segment of segments) if (segment[0] <= column - 1) found = segment;
    return { line: found[1] + 1, column: found[2] + 1 + Math.max(0, column - 1 - found[0]) };
  };
}

function decodeVlq(text) {
  const values = [];
  let value = 0;
  let shift = 0;
  for (const character of text) {
    const digit = BASE64.indexOf(character);
    value += (digit & 31) << shift;
    if (digit & 32) {
      shift += 5;
      continue;
    }
    values.push(value & 1 ? -(value >>> 1) : value >>> 1);
    value = 0;
    shift = 0;
  }
  return values;
}
