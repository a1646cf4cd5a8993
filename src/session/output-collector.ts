/**
 * Gathers one execution's events into an Execution, within the host-side caps.
 * The kernel is untrusted: its events arrive typed (kernel-protocol.ts checked
 * their fields), and every part of what they carry is bounded here:
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

  stream(name: 'stdout' | 'stderr', text: string): void {
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
  result(
    type: ExecutionResult['type'],
    data: MimeBundle,
    metadata: Record<string, unknown>,
    messageBytes: number,
  ): void {
    if (this.resultsUsed + messageBytes > this.resultBytes) {
      this.truncated = true;
      return;
    }
    this.resultsUsed += messageBytes;
    const result: ExecutionResult = { type, data, metadata };
    this.results.push(result);
    this.callbacks.onResult?.(result);
  }

  fail(reported: ExecutionError): void {
    const { error, cut } = boundedError(reported, this.outputBytes);
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
