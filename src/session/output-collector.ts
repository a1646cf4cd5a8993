/** Gathers one execution's events into an Execution, within the host-side caps. */
import type { ExecutionError, ExecutionResult, MimeBundle, RunOptions } from './execution.js';

export class OutputCollector {
  stdout = '';
  stderr = '';
  results: ExecutionResult[] = [];
  error?: ExecutionError;
  truncated = false;
  private outputUsed = 0;
  private resultsUsed = 0;

  constructor(
    private readonly outputBytes: number,
    private readonly resultBytes: number,
    private readonly callbacks: RunOptions,
  ) {}

  stream(name: unknown, text: unknown): void {
    if (typeof text !== 'string' || (name !== 'stdout' && name !== 'stderr')) return;
    const kept = this.takeOutput(text);
    if (!kept) return;
    if (name === 'stdout') {
      this.stdout += kept;
      this.callbacks.onStdout?.(kept);
    } else {
      this.stderr += kept;
      this.callbacks.onStderr?.(kept);
    }
  }

  result(type: ExecutionResult['type'], data: unknown, metadata: unknown): void {
    if (typeof data !== 'object' || data === null || Array.isArray(data)) return;
    const size = bundleSize(data as MimeBundle);
    if (this.resultsUsed + size > this.resultBytes) {
      this.truncated = true;
      return;
    }
    this.resultsUsed += size;
    const result: ExecutionResult = {
      type,
      data: data as MimeBundle,
      metadata: typeof metadata === 'object' && metadata !== null ? (metadata as Record<string, unknown>) : {},
    };
    this.results.push(result);
    this.callbacks.onResult?.(result);
  }

  fail(name: unknown, value: unknown, traceback: unknown): void {
    this.error = {
      name: String(name ?? 'Error'),
      value: String(value ?? ''),
      traceback: Array.isArray(traceback) ? traceback.map(String) : [],
    };
  }

  private takeOutput(text: string): string {
    const room = this.outputBytes - this.outputUsed;
    if (room <= 0) {
      this.truncated = true;
      return '';
    }
    const size = Buffer.byteLength(text, 'utf8');
    if (size <= room) {
      this.outputUsed += size;
      return text;
    }
    this.truncated = true;
    this.outputUsed = this.outputBytes;
    // Cut on a character boundary.
    return Buffer.from(text, 'utf8')
      .subarray(0, room)
      .toString('utf8')
      .replace(/\uFFFD$/, '');
  }
}

/** Roughly the bytes a MIME bundle holds, without serialising its (often large, base64) strings again. */
function bundleSize(bundle: MimeBundle): number {
  let size = 0;
  for (const value of Object.values(bundle))
    size += typeof value === 'string' ? value.length : JSON.stringify(value).length;
  return size;
}
