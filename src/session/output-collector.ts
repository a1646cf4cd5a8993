/**
 * Gathers one execution's events into an Execution, within the host-side caps.
 * The kernel is untrusted, so every part of what it sends is bounded here:
 * stream text by `outputBytes`, results (data, metadata, framing: the whole
 * protocol line) by `resultBytes`, an error's value and traceback by
 * `outputBytes` each. What is over is cut or dropped, and `truncated` says so.
 */
import type { ExecutionError, ExecutionResult, MimeBundle, RunOptions } from './execution.js';
import { boundedError, headBytes } from './output-limits.js';

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

  /**
   * A result, counted by `messageBytes`, the length of the protocol line it came
   * in: that covers data and metadata alike without serialising either again.
   */
  result(type: ExecutionResult['type'], data: unknown, metadata: unknown, messageBytes: number): void {
    if (!isPlainObject(data)) return;
    if (this.resultsUsed + messageBytes > this.resultBytes) {
      this.truncated = true;
      return;
    }
    this.resultsUsed += messageBytes;
    const result: ExecutionResult = {
      type,
      data: data as MimeBundle,
      metadata: isPlainObject(metadata) ? metadata : {},
    };
    this.results.push(result);
    this.callbacks.onResult?.(result);
  }

  fail(name: unknown, value: unknown, traceback: unknown): void {
    const { error, cut } = boundedError(name, value, traceback, this.outputBytes);
    this.error = error;
    if (cut) this.truncated = true;
  }

  /** A message too large to read was dropped on the way: whatever it held is missing. */
  dropped(): void {
    this.truncated = true;
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
    return headBytes(text, room);
  }
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
