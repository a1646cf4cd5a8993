/**
 * The context a model gets about a data file, computed on the host without
 * running any code in the sandbox: for tables (CSV, TSV, JSON, JSON lines)
 * the columns, their dtypes as pandas infers them by default, the row count
 * and the first rows; for other files their size and first lines or bytes.
 *
 * Bounded whatever the file's size: only the first `SAMPLE_BYTES` are decoded
 * and parsed (columns, dtypes and the first rows come from the rows that fit,
 * and the text says so when that is not the whole file); the rest is only
 * scanned to count rows (data-scan.ts), in chunks that yield to the event
 * loop. The file is never held as one string.
 */
import path from 'node:path';
import { formatBytes } from '../protocol/format-bytes.js';
import { countDelimitedRecords, countLines, countNonBlankLines, SCAN_CHUNK_BYTES, scanJsonArray } from './data-scan.js';
import { delimitedTable, jsonValueTable, parseDelimited, type Table } from './data-table.js';
import type { LoadedFileSummary } from './events.js';

export { inferDtype, parseDelimited, type Table } from './data-table.js';

export const PREVIEW_ROWS = 15;
/** The bytes of a file decoded and parsed for its preview; past them, rows are only counted. */
export const SAMPLE_BYTES = 1 << 20;
/** The bytes looked at to tell text from binary, and to show a text file's first lines. */
const TEXT_SAMPLE_BYTES = 64 * 1024;
const MAX_CELL_CHARS = 30;
const MAX_TABLE_COLUMNS = 30;
const MAX_LISTED_COLUMNS = 300;
const FORMAT_NAMES = { csv: 'CSV (comma-separated)', tsv: 'TSV (tab-separated)', json: 'JSON', jsonl: 'JSON lines' };

export type DataFormat = LoadedFileSummary['format'];

export interface DataPreview {
  format: DataFormat;
  /** Columns, dtypes and the rows that were parsed: all of them, or the first `sampledRows`. */
  table?: Table;
  /** Rows in the whole file (for JSON, the records of its top-level array). */
  rowCount?: number;
  /** Set when the file is larger than the sample: columns and dtypes were judged from this many first rows. */
  sampledRows?: number;
  /** The text the model gets. */
  text: string;
}

export interface PreviewOptions {
  /** @default SAMPLE_BYTES */
  sampleBytes?: number;
  /** Bytes scanned between yields to the event loop. @default SCAN_CHUNK_BYTES (1 MiB) */
  chunkBytes?: number;
}

/** Decodes bytes as UTF-8; a character cut at the end is left out rather than shown as U+FFFD. */
function decode(bytes: Uint8Array): string {
  return new TextDecoder().decode(bytes, { stream: true });
}

export function detectFormat(name: string, bytes: Uint8Array): DataFormat {
  const extension = path.extname(name).toLowerCase();
  if (extension === '.csv') return 'csv';
  if (extension === '.tsv' || extension === '.tab') return 'tsv';
  if (extension === '.json') return 'json';
  if (extension === '.jsonl' || extension === '.ndjson') return 'jsonl';
  const sample = bytes.subarray(0, 8192);
  return sample.includes(0) || decode(sample).includes('\uFFFD') ? 'binary' : 'text';
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

interface SampledTable {
  table: Table;
  rowCount: number;
  /** Whether the table holds every row. */
  complete: boolean;
}

/** Parses the first `sampleBytes` into a table and counts the rows of the whole file. */
async function sampleTable(
  format: 'csv' | 'tsv' | 'json' | 'jsonl',
  bytes: Uint8Array,
  options: Required<PreviewOptions>,
): Promise<SampledTable | undefined> {
  const complete = bytes.length <= options.sampleBytes;
  const sample = decode(bytes.subarray(0, options.sampleBytes));
  if (format === 'csv' || format === 'tsv') {
    const delimiter = format === 'csv' ? ',' : '\t';
    const records = parseDelimited(sample, delimiter);
    if (!complete) records.pop(); // the sample ends inside the last record
    const table = delimitedTable(records);
    if (!table) return undefined;
    const rowCount = complete
      ? table.rows.length
      : (await countDelimitedRecords(bytes, delimiter, options.chunkBytes)) - 1;
    return { table, rowCount, complete };
  }
  if (format === 'jsonl') {
    const lines = sample.split(/\r?\n/);
    if (!complete) lines.pop();
    let table: Table | undefined;
    try {
      table = jsonValueTable(lines.filter((line) => line.trim() !== '').map((line) => JSON.parse(line)));
    } catch {
      return undefined;
    }
    if (!table) return undefined;
    const rowCount = complete ? table.rows.length : await countNonBlankLines(bytes, options.chunkBytes);
    return { table, rowCount, complete };
  }
  if (complete) {
    let value: unknown;
    try {
      value = JSON.parse(sample);
    } catch {
      return undefined;
    }
    const table = jsonValueTable(value);
    return table ? { table, rowCount: table.rows.length, complete } : undefined;
  }
  // A large JSON file: the records of its top-level array, those within the sample parsed.
  const scan = await scanJsonArray(bytes, options.sampleBytes, options.chunkBytes);
  const table = scan && scan.sample.length > 0 ? jsonValueTable(scan.sample) : undefined;
  return table && scan ? { table, rowCount: scan.count, complete: scan.count === table.rows.length } : undefined;
}

function describeTable(format: keyof typeof FORMAT_NAMES, sampled: SampledTable): string {
  const { table, rowCount, complete } = sampled;
  const width = Math.max(...table.columns.map((column) => column.length), 6);
  const listed = table.columns.slice(0, MAX_LISTED_COLUMNS);
  const unit = format === 'json' ? 'records' : 'rows';
  const dtypesFrom = complete
    ? 'Columns and dtypes (as pandas reads them by default):'
    : `Columns and dtypes (as pandas reads them by default), judged from the first ${table.rows.length} ${unit} only: a later ${unit === 'rows' ? 'row' : 'record'} can change a dtype${format === 'json' || format === 'jsonl' ? ' or add a column' : ''}:`;
  return [
    `Format: ${FORMAT_NAMES[format]}. Shape: ${rowCount} ${unit} × ${table.columns.length} columns${complete ? '' : ` (${unit} counted in the whole file)`}.`,
    dtypesFrom,
    ...listed.map((column, i) => `  ${column.padEnd(width)}  ${table.dtypes[i]}`),
    ...(table.columns.length > listed.length ? [`  [${table.columns.length - listed.length} more columns]`] : []),
    `First ${Math.min(PREVIEW_ROWS, table.rows.length)} rows:`,
    formatTable(table, PREVIEW_ROWS),
  ].join('\n');
}

/**
 * The preview of a file that now lives at /mnt/data/<name>. Reads at most the
 * first `sampleBytes` as text; a larger file is scanned in chunks, yielding.
 */
export async function previewData(name: string, bytes: Uint8Array, options: PreviewOptions = {}): Promise<DataPreview> {
  const resolved = {
    sampleBytes: options.sampleBytes ?? SAMPLE_BYTES,
    chunkBytes: options.chunkBytes ?? SCAN_CHUNK_BYTES,
  };
  const format = detectFormat(name, bytes);
  const heading = `Data file ${name} (${formatBytes(bytes.length)}) is at /mnt/data/${name}.`;
  const firstText = () => decode(bytes.subarray(0, TEXT_SAMPLE_BYTES));
  if (format === 'binary') {
    const hex = Buffer.from(bytes.subarray(0, 32)).toString('hex').replace(/(..)/g, '$1 ').trim();
    return { format, text: `${heading}\nBinary; its first bytes (hex): ${hex}` };
  }
  if (format === 'text') {
    const lines = await countLines(bytes, resolved.chunkBytes);
    return { format, text: `${heading}\nText, ${lines} lines. First lines:\n${firstLines(firstText())}` };
  }
  const sampled = await sampleTable(format, bytes, resolved);
  if (!sampled) {
    const why = bytes.length > resolved.sampleBytes && format === 'json' ? ' (as an array of records)' : '';
    return {
      format: 'text',
      text: `${heading}\nIt could not be read as ${format.toUpperCase()}${why}; first lines:\n${firstLines(firstText())}`,
    };
  }
  return {
    format,
    table: sampled.table,
    rowCount: sampled.rowCount,
    ...(sampled.complete ? {} : { sampledRows: sampled.table.rows.length }),
    text: `${heading}\n${describeTable(format, sampled)}`,
  };
}

function firstLines(text: string): string {
  return text
    .split(/\r?\n/)
    .slice(0, PREVIEW_ROWS)
    .map((line) => (line.length > 200 ? `${line.slice(0, 199)}…` : line))
    .join('\n');
}
