/**
 * The context a model gets about a data file, computed on the host without
 * running any code in the sandbox: for tables (CSV, TSV, JSON, JSON lines)
 * the columns, their dtypes as pandas infers them by default, the row count
 * and the first rows; for other files their size and first lines or bytes.
 */
import path from 'node:path';
import type { LoadedFileSummary } from './events.js';
import { formatBytes } from './execution-report.js';

export const PREVIEW_ROWS = 15;
const MAX_CELL_CHARS = 30;
const MAX_TABLE_COLUMNS = 30;
const MAX_LISTED_COLUMNS = 300;

/** pandas' default NA markers for read_csv. */
const NA_VALUES = new Set([
  '',
  '#N/A',
  '#N/A N/A',
  '#NA',
  '-1.#IND',
  '-1.#QNAN',
  '-NaN',
  '-nan',
  '1.#IND',
  '1.#QNAN',
  '<NA>',
  'N/A',
  'NA',
  'NULL',
  'NaN',
  'None',
  'n/a',
  'nan',
  'null',
]);
const INTEGER = /^[+-]?\d+$/;
const FLOAT = /^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$|^[+-]?(inf|Inf|INF|infinity|Infinity)$/;
const BOOLEAN = new Set(['True', 'False', 'TRUE', 'FALSE', 'true', 'false']);

export type DataFormat = LoadedFileSummary['format'];

export interface Table {
  columns: string[];
  /** Cells as text (missing values as ''). */
  rows: string[][];
  dtypes: string[];
}

export interface DataPreview {
  format: DataFormat;
  table?: Table;
  rowCount?: number;
  /** The text the model gets. */
  text: string;
}

/** Splits delimited text into records (RFC 4180 quoting, CRLF or LF, a leading BOM dropped, blank lines skipped). */
export function parseDelimited(text: string, delimiter: string): string[][] {
  const records: string[][] = [];
  let record: string[] = [];
  let field = '';
  let quoted = false;
  let index = text.charCodeAt(0) === 0xfeff ? 1 : 0;
  const endRecord = () => {
    record.push(field);
    field = '';
    if (!(record.length === 1 && record[0] === '')) records.push(record);
    record = [];
  };
  for (; index < text.length; index++) {
    const char = text[index]!;
    if (quoted) {
      if (char === '"') {
        if (text[index + 1] === '"') {
          field += '"';
          index++;
        } else quoted = false;
      } else field += char;
    } else if (char === '"' && field === '') quoted = true;
    else if (char === delimiter) {
      record.push(field);
      field = '';
    } else if (char === '\n' || char === '\r') {
      if (char === '\r' && text[index + 1] === '\n') index++;
      endRecord();
    } else field += char;
  }
  if (field !== '' || record.length > 0) endRecord();
  return records;
}

/** The dtype pandas' read_csv gives a column of these cells, with its default options. */
export function inferDtype(cells: readonly string[]): string {
  const present = cells.map((cell) => cell.trim()).filter((cell) => !NA_VALUES.has(cell));
  const missing = present.length < cells.length;
  if (present.length === 0) return 'float64';
  if (present.every((cell) => INTEGER.test(cell))) return missing ? 'float64' : 'int64';
  if (present.every((cell) => INTEGER.test(cell) || FLOAT.test(cell))) return 'float64';
  if (!missing && present.every((cell) => BOOLEAN.has(cell))) return 'bool';
  return 'object';
}

function jsonDtype(values: readonly unknown[]): string {
  const present = values.filter((value) => value !== null && value !== undefined);
  const missing = present.length < values.length;
  if (present.length === 0) return 'float64';
  if (present.every((value) => typeof value === 'number' && Number.isInteger(value)))
    return missing ? 'float64' : 'int64';
  if (present.every((value) => typeof value === 'number')) return 'float64';
  if (!missing && present.every((value) => typeof value === 'boolean')) return 'bool';
  return 'object';
}

function cellText(value: unknown): string {
  if (value === null || value === undefined) return '';
  return typeof value === 'object' ? JSON.stringify(value) : String(value);
}

/** Records from JSON as pandas.read_json reads them: a list of objects, or an object of columns. */
function jsonTable(value: unknown): { columns: string[]; records: Record<string, unknown>[] } | undefined {
  if (Array.isArray(value) && value.every((item) => item && typeof item === 'object' && !Array.isArray(item))) {
    const columns = [...new Set(value.flatMap((item) => Object.keys(item as object)))];
    return { columns, records: value as Record<string, unknown>[] };
  }
  if (value && typeof value === 'object' && !Array.isArray(value)) {
    const columns = Object.keys(value);
    const series = columns.map((column) => (value as Record<string, unknown>)[column]);
    if (columns.length === 0 || !series.every((item) => item && typeof item === 'object')) return undefined;
    const index = [...new Set(series.flatMap((item) => Object.keys(item as object)))];
    const records = index.map((key) =>
      Object.fromEntries(columns.map((column, i) => [column, (series[i] as Record<string, unknown>)[key]])),
    );
    return { columns, records };
  }
  return undefined;
}

export function detectFormat(name: string, bytes: Buffer): DataFormat {
  const extension = path.extname(name).toLowerCase();
  if (extension === '.csv') return 'csv';
  if (extension === '.tsv' || extension === '.tab') return 'tsv';
  if (extension === '.json') return 'json';
  if (extension === '.jsonl' || extension === '.ndjson') return 'jsonl';
  const sample = bytes.subarray(0, 8192);
  return sample.includes(0) || sample.toString('utf8').includes('\uFFFD') ? 'binary' : 'text';
}

function pad(text: string, width: number): string {
  return text.length >= width ? text : ' '.repeat(width - text.length) + text;
}

/** A table as pandas prints a DataFrame's head: the index, then right-aligned columns. */
export function formatTable(table: Table, rows: number): string {
  const shown = table.columns.slice(0, MAX_TABLE_COLUMNS);
  const clip = (text: string) => (text.length > MAX_CELL_CHARS ? `${text.slice(0, MAX_CELL_CHARS - 1)}…` : text);
  const body = table.rows
    .slice(0, rows)
    .map((row, index) => [String(index), ...shown.map((_, i) => clip(row[i] ?? ''))]);
  const header = ['', ...shown.map(clip)];
  const widths = header.map((cell, i) => Math.max(cell.length, ...body.map((row) => row[i]!.length)));
  const line = (cells: string[]) => cells.map((cell, i) => pad(cell, widths[i]!)).join('  ');
  const omitted = table.columns.length - shown.length;
  return [line(header), ...body.map(line), ...(omitted > 0 ? [`[${omitted} more columns not shown]`] : [])].join('\n');
}

function tableFrom(format: DataFormat, bytes: Buffer): Table | undefined {
  const text = bytes.toString('utf8');
  if (format === 'csv' || format === 'tsv') {
    const records = parseDelimited(text, format === 'csv' ? ',' : '\t');
    const [header, ...rows] = records;
    if (!header) return undefined;
    const columns = header.map((name, i) => name || `Unnamed: ${i}`);
    return { columns, rows, dtypes: columns.map((_, i) => inferDtype(rows.map((row) => row[i] ?? ''))) };
  }
  let parsed: { columns: string[]; records: Record<string, unknown>[] } | undefined;
  try {
    parsed =
      format === 'json'
        ? jsonTable(JSON.parse(text))
        : jsonTable(
            text
              .split(/\r?\n/)
              .filter((line) => line.trim() !== '')
              .map((line) => JSON.parse(line)),
          );
  } catch {
    return undefined;
  }
  if (!parsed) return undefined;
  const { columns, records } = parsed;
  return {
    columns,
    rows: records.map((record) => columns.map((column) => cellText(record[column]))),
    dtypes: columns.map((column) => jsonDtype(records.map((record) => record[column]))),
  };
}

/** The preview of a file that now lives at /mnt/data/<name>. */
export function previewData(name: string, bytes: Buffer): DataPreview {
  const format = detectFormat(name, bytes);
  const where = `/mnt/data/${name}`;
  const heading = `Data file ${name} (${formatBytes(bytes.length)}) is at ${where}.`;
  if (format !== 'text' && format !== 'binary') {
    const table = tableFrom(format, bytes);
    if (table) {
      const kind = { csv: 'CSV (comma-separated)', tsv: 'TSV (tab-separated)', json: 'JSON', jsonl: 'JSON lines' }[
        format
      ];
      const width = Math.max(...table.columns.map((column) => column.length), 6);
      const listed = table.columns.slice(0, MAX_LISTED_COLUMNS);
      const text = [
        heading,
        `Format: ${kind}. Shape: ${table.rows.length} rows × ${table.columns.length} columns.`,
        'Columns and dtypes (as pandas reads them by default):',
        ...listed.map((column, i) => `  ${column.padEnd(width)}  ${table.dtypes[i]}`),
        ...(table.columns.length > listed.length ? [`  [${table.columns.length - listed.length} more columns]`] : []),
        `First ${Math.min(PREVIEW_ROWS, table.rows.length)} rows:`,
        formatTable(table, PREVIEW_ROWS),
      ].join('\n');
      return { format, table, rowCount: table.rows.length, text };
    }
    const text = bytes.toString('utf8');
    return {
      format: 'text',
      text: `${heading}\nIt could not be read as ${format.toUpperCase()}; first lines:\n${firstLines(text)}`,
    };
  }
  if (format === 'text') {
    const text = bytes.toString('utf8');
    const lines = text.split(/\r?\n/).length;
    return { format, text: `${heading}\nText, ${lines} lines. First lines:\n${firstLines(text)}` };
  }
  const hex = bytes.subarray(0, 32).toString('hex').replace(/(..)/g, '$1 ').trim();
  return { format, text: `${heading}\nBinary; its first bytes (hex): ${hex}` };
}

function firstLines(text: string): string {
  return text
    .split(/\r?\n/)
    .slice(0, PREVIEW_ROWS)
    .map((line) => (line.length > 200 ? `${line.slice(0, 199)}…` : line))
    .join('\n');
}
