/**
 * How executions look on the Azure dynamic-sessions wire: the last value as JSON, stderr with the
 * traceback, status; and shell commands in the same shape, their exit status deciding success.
 */
import type { CommandResult } from '../../session/command.js';
import type { Execution, ExecutionResult } from '../../session/execution.js';
import { formatTraceback } from '../../session/execution.js';

const PYTHON_ESCAPES: Record<string, string> = {
  n: '\n',
  t: '\t',
  r: '\r',
  '\\': '\\',
  "'": "'",
  '"': '"',
  a: '\x07',
  b: '\b',
  f: '\f',
  v: '\v',
  '0': '\0',
};

/** Decodes a Python `str` repr ('…' or "…"); undefined when `text` is not exactly one. */
function decodePythonString(text: string): string | undefined {
  const quote = text[0];
  if ((quote !== "'" && quote !== '"') || text.length < 2 || text[text.length - 1] !== quote) return undefined;
  let output = '';
  for (let index = 1; index < text.length - 1; index++) {
    const character = text[index] as string;
    if (character === quote) return undefined;
    if (character !== '\\') {
      output += character;
      continue;
    }
    const next = text[++index] ?? '';
    const width = next === 'x' ? 2 : next === 'u' ? 4 : next === 'U' ? 8 : 0;
    if (width) {
      const hex = text.slice(index + 1, index + 1 + width);
      if (!/^[0-9a-fA-F]+$/.test(hex) || hex.length !== width) return undefined;
      output += String.fromCodePoint(Number.parseInt(hex, 16));
      index += width;
    } else if (next in PYTHON_ESCAPES) {
      output += PYTHON_ESCAPES[next];
    } else {
      return undefined;
    }
  }
  return output;
}

/** The last expression's value as JSON: numbers, booleans and strings as themselves, anything else as its text. */
export function pythonValueAsJson(result: ExecutionResult | undefined): unknown {
  if (!result) return '';
  const json = result.data['application/json'];
  if (json !== undefined) return json;
  const text = String(result.data['text/plain'] ?? '');
  if (/^-?\d+(\.\d+)?([eE][+-]?\d+)?$/.test(text) && Number.isFinite(Number(text))) return Number(text);
  if (text === 'True' || text === 'False') return text === 'True';
  if (text === 'None') return null;
  return decodePythonString(text) ?? text;
}

/** Azure's `result`: an image object when the run made a figure, else the last expression as JSON. */
export function azureResult(execution: Execution): unknown {
  for (const result of execution.results) {
    for (const format of ['png', 'jpeg', 'svg+xml'] as const) {
      const value = result.data[`image/${format}`];
      if (typeof value === 'string') {
        const base64 = format === 'svg+xml' ? Buffer.from(value, 'utf8').toString('base64') : value;
        return { type: 'image', format: format === 'svg+xml' ? 'svg' : format, base64_data: base64 };
      }
    }
  }
  return pythonValueAsJson(execution.results.find((result) => result.type === 'execute_result'));
}

/** stderr as Azure shows it: the captured stream, then the traceback or the timeout note. */
export function azureStderr(execution: Execution): string {
  const parts = [execution.stderr];
  if (execution.error) parts.push(`${formatTraceback(execution.error)}\n`);
  if (execution.stateLost && execution.stateLostReason && execution.status !== 'timeout') {
    parts.push(`${execution.stateLostReason}\n`);
  }
  return parts.filter((part) => part !== '').join(parts[0]?.endsWith('\n') || parts[0] === '' ? '' : '\n');
}

export function azureStatus(execution: Execution): 'Success' | 'Failure' | 'Timeout' {
  if (execution.status === 'timeout') return 'Timeout';
  return execution.status === 'error' ? 'Failure' : 'Success';
}

export function azureCommandStatus(result: CommandResult): 'Success' | 'Failure' | 'Timeout' {
  if (result.timedOut) return 'Timeout';
  return result.exitCode === 0 ? 'Success' : 'Failure';
}

/** A command's stderr, with a note when it was killed at its time limit (as code's timeout is noted). */
export function azureCommandStderr(result: CommandResult): string {
  if (!result.timedOut) return result.stderr;
  const separator = result.stderr === '' || result.stderr.endsWith('\n') ? '' : '\n';
  return `${result.stderr}${separator}The command was killed at its time limit (exit code ${result.exitCode}).\n`;
}
