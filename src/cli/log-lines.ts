/**
 * The server's log for a person at a terminal: each pino JSON line becomes
 * `12:04:05 INFO  message key=value …`. Piped (or `--log-format json`), the
 * JSON lines go out untouched, for log collectors.
 */
import { Writable } from 'node:stream';
import { dim, red } from './render.js';

export const LOG_FORMATS = ['auto', 'text', 'json'] as const;
export type LogFormat = (typeof LOG_FORMATS)[number];

const LEVEL_NAMES: Record<number, string> = {
  10: 'TRACE',
  20: 'DEBUG',
  30: 'INFO',
  40: 'WARN',
  50: 'ERROR',
  60: 'FATAL',
};
/** Fields every line has, or that the line's own words already say. */
const OMITTED_FIELDS = new Set(['level', 'time', 'pid', 'hostname', 'name', 'msg', 'v']);
const WARN_LEVEL = 40;

/** Where the server's log goes: undefined keeps pino's JSON on stdout. */
export function logDestinationFor(format: LogFormat, output: NodeJS.WriteStream = process.stdout) {
  const readable = format === 'text' || (format === 'auto' && output.isTTY === true);
  return readable ? new ReadableLogLines(output) : undefined;
}

export class ReadableLogLines extends Writable {
  private partial = '';

  constructor(private readonly output: NodeJS.WriteStream) {
    super();
  }

  override _write(chunk: Buffer, _encoding: string, callback: () => void): void {
    const lines = (this.partial + chunk.toString('utf8')).split('\n');
    this.partial = lines.pop() ?? '';
    for (const line of lines) if (line.trim()) this.output.write(`${formatLogLine(line, this.output)}\n`);
    callback();
  }
}

/** One pino line as text; a line that is not a JSON object passes as it is. */
export function formatLogLine(line: string, stream?: NodeJS.WriteStream): string {
  let record: Record<string, unknown>;
  try {
    record = JSON.parse(line);
  } catch {
    return line;
  }
  if (typeof record !== 'object' || record === null) return line;
  const level = typeof record.level === 'number' ? record.level : 30;
  const time = typeof record.time === 'number' ? new Date(record.time).toTimeString().slice(0, 8) : '';
  const fields = Object.entries(record)
    .filter(([key]) => !OMITTED_FIELDS.has(key))
    // A string with spaces is quoted, so where one field ends stays clear.
    .map(([key, value]) => `${key}=${typeof value === 'string' && !/\s/.test(value) ? value : JSON.stringify(value)}`);
  const label = (LEVEL_NAMES[level] ?? String(level)).padEnd(5);
  const head = `${dim(time, stream)} ${level >= WARN_LEVEL ? red(label, stream) : label} ${String(record.msg ?? '')}`;
  return fields.length > 0 ? `${head} ${dim(fields.join(' '), stream)}` : head;
}
