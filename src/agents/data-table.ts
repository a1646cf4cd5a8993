/**
 * Tables as pandas reads them with its default options: RFC 4180 records for
 * read_csv, records or columns for read_json, and the dtype each column gets.
 * Pure functions over text already in memory (data-preview.ts bounds how much).
 */

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

export interface Table {
  columns: string[];
  /** Cells as text (missing values as ''). */
  rows: string[][];
  dtypes: string[];
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

/** The table of delimited records: the first is the header. */
export function delimitedTable(records: string[][]): Table | undefined {
  const [header, ...rows] = records;
  if (!header) return undefined;
  const columns = header.map((name, i) => name || `Unnamed: ${i}`);
  return { columns, rows, dtypes: columns.map((_, i) => inferDtype(rows.map((row) => row[i] ?? ''))) };
}

/** The table of parsed JSON (records or columns), or undefined when it is not one. */
export function jsonValueTable(value: unknown): Table | undefined {
  const parsed = jsonTable(value);
  if (!parsed) return undefined;
  const { columns, records } = parsed;
  return {
    columns,
    rows: records.map((record) => columns.map((column) => cellText(record[column]))),
    dtypes: columns.map((column) => jsonDtype(records.map((record) => record[column]))),
  };
}
