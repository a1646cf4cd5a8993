/** How sessions, executions and files look on the wire: the native /v1 shapes and Azure's. */

import { imageType } from '../protocol/images.js';
import type { Execution, ExecutionResult } from '../session/execution.js';
import { formatTraceback } from '../session/execution.js';
import type { FileEntry } from '../session/files.js';
import type { ImageStore } from './image-store.js';
import type { ManagedSession } from './registry.js';

const encodePath = (path: string): string => path.split('/').map(encodeURIComponent).join('/');

export function sessionUrl(entry: ManagedSession): string {
  return `/v1/sessions/${entry.id}`;
}

/** Where a client downloads a file of the session (a path relative to /mnt/data). */
export function sessionFileUrl(entry: ManagedSession, path: string): string {
  return `${sessionUrl(entry)}/files/${encodePath(path)}`;
}

export function presentSession(entry: ManagedSession) {
  return {
    id: entry.id,
    source: entry.source,
    ...(entry.name !== undefined ? { name: entry.name } : {}),
    createdAt: new Date(entry.createdAt).toISOString(),
    lastActivityAt: new Date(entry.session.lastActivityAt).toISOString(),
    executions: entry.executions,
    busy: entry.session.busy,
  };
}

export function presentFile(entry: ManagedSession, file: FileEntry) {
  return {
    path: file.path,
    type: file.type,
    size: file.size,
    modifiedAt: new Date(file.modifiedMs).toISOString(),
    ...(file.type === 'file' ? { url: sessionFileUrl(entry, file.path) } : {}),
  };
}

/**
 * A result with its images stored and linked (mode `url`) or left in `data` as base64 (mode `inline`).
 * Images go to the session's store unless another is given (a conversation keeps its own).
 */
export function presentResult(
  entry: ManagedSession,
  result: ExecutionResult,
  images: 'url' | 'inline',
  store: { images: ImageStore; url: string } = { images: entry.images, url: `${sessionUrl(entry)}/images` },
) {
  if (images === 'inline') return { type: result.type, data: result.data, metadata: result.metadata };
  const data: Record<string, unknown> = {};
  const links: { mimeType: string; url: string }[] = [];
  for (const [mimeType, value] of Object.entries(result.data)) {
    if (imageType(mimeType) && typeof value === 'string') {
      const stored = store.images.add(mimeType, value);
      links.push({ mimeType, url: `${store.url}/${stored.name}` });
    } else {
      data[mimeType] = value;
    }
  }
  return { type: result.type, data, metadata: result.metadata, ...(links.length ? { images: links } : {}) };
}

export function presentExecution(
  entry: ManagedSession,
  executionId: string,
  execution: Execution,
  images: 'url' | 'inline',
) {
  return {
    id: executionId,
    sessionId: entry.id,
    status: execution.status,
    stdout: execution.stdout,
    stderr: execution.stderr,
    results: execution.results.map((result) => presentResult(entry, result, images)),
    ...(execution.error ? { error: execution.error } : {}),
    executionCount: execution.executionCount,
    durationMs: execution.durationMs,
    ...(execution.stateLost ? { stateLost: true, stateLostReason: execution.stateLostReason } : {}),
    ...(execution.outputTruncated ? { outputTruncated: true } : {}),
  };
}

// --- Azure ---------------------------------------------------------------------

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
