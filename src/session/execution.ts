/** What one run of code gives back, in Jupyter's output model. */

/** A MIME bundle: `text/plain`, `text/html`, `image/png` (base64), `image/svg+xml`, `application/json`, … */
export type MimeBundle = Record<string, unknown>;

export interface ExecutionResult {
  /** `execute_result` is the value of the last expression; `display_data` came from display() or a figure. */
  type: 'execute_result' | 'display_data';
  data: MimeBundle;
  metadata: Record<string, unknown>;
}

export interface ExecutionError {
  name: string;
  value: string;
  traceback: string[];
}

export type ExecutionStatus = 'ok' | 'error' | 'timeout';

export interface Execution {
  status: ExecutionStatus;
  stdout: string;
  stderr: string;
  results: ExecutionResult[];
  error?: ExecutionError;
  /** IPython's execution counter (In [n]). */
  executionCount: number;
  durationMs: number;
  /** True when the session's Python state (variables, imports) was lost during or just before this run. */
  stateLost?: boolean;
  /** Why the state was lost, in words a user can act on. */
  stateLostReason?: string;
  /** True when stdout/stderr, results, result metadata or the error went past the per-execution caps and were cut or dropped. */
  outputTruncated?: boolean;
}

export interface RunOptions {
  /** Wall-clock limit for this run. @default the session's `timeoutMs` */
  timeoutMs?: number;
  /** Aborting interrupts the running code (KeyboardInterrupt), or drops the run if it has not started. */
  signal?: AbortSignal;
  onStdout?: (text: string) => void;
  onStderr?: (text: string) => void;
  onResult?: (result: ExecutionResult) => void;
}

/**
 * The traceback as one block of text, as a terminal shows it, ending with
 * `name: value` (added when the traceback does not already end so, as for a
 * timeout, whose traceback is the interrupt's).
 */
export function formatTraceback(error: ExecutionError): string {
  const summary = `${error.name}: ${error.value}`;
  const text = error.traceback.join('\n').trimEnd();
  const lastLine = text.split('\n').pop() ?? '';
  if (!text) return summary;
  return lastLine.startsWith(`${error.name}:`) || lastLine === error.name ? text : `${text}\n${summary}`;
}
