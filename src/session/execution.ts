/** What one run of code gives back, in Jupyter's output model. */
import type { Language } from './languages.js';

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
  /** The context (kernel) the code ran in: `python` unless the run named another. */
  context: string;
  /** That context's language. */
  language: Language;
  stdout: string;
  stderr: string;
  results: ExecutionResult[];
  error?: ExecutionError;
  /** The context's execution counter (In [n] in IPython); it restarts at 1 with a fresh kernel. */
  executionCount: number;
  durationMs: number;
  /** True when the context's state (variables, imports) was lost during or just before this run. */
  stateLost?: boolean;
  /** Why the state was lost, in words a user can act on. */
  stateLostReason?: string;
  /** True when stdout/stderr, results, result metadata or the error went past the per-execution caps and were cut or dropped. */
  outputTruncated?: boolean;
  /**
   * The code asked its interpreter to exit, with this status (0–255), and stopped there; the
   * session goes on. Python (`sys.exit(n)`, `exit()`, `quit()`, any SystemExit): the state is
   * kept, status 0 is a success and another one an `error` named `SystemExit`, as Jupyter shows
   * it. bash (`exit`, or `set -e` ending the shell): a fresh shell replaces it, so the run ends
   * with a `ShellExited` error. `sandcell run` exits with it, as the script's interpreter would.
   */
  exitStatus?: number;
}

export interface RunOptions {
  /**
   * The context to run in (`session.createContext()` gives ids; a language's name is its default
   * context, created on first use). @default the `language`'s default context, else `python`
   */
  context?: string;
  /** Run in this language's default context (its id is the language), created on first use. */
  language?: Language;
  /** Wall-clock limit for this run. @default the session's `timeoutMs` */
  timeoutMs?: number;
  /** Aborting interrupts the running code (KeyboardInterrupt in Python), or drops the run if it has not started. */
  signal?: AbortSignal;
  onStdout?: (text: string) => void;
  onStderr?: (text: string) => void;
  onResult?: (result: ExecutionResult) => void;
  /**
   * Answers the code's requests for input (Python's input() and getpass()): called with the
   * prompt, resolves with the line (without its newline). Rejecting makes input() raise EOFError.
   * A request left unanswered holds the run until its timeout or an abort interrupts it. Without
   * it, input() raises EOFError at once, as reading an empty stdin does.
   */
  onInput?: (request: InputRequest) => Promise<string>;
  /**
   * JavaScript and TypeScript: the run ends when the event loop is empty (the timers, sockets and
   * other work the code left pending are done), as `node script.js` ends, rather than when the
   * code's top level returns; still within `timeoutMs`. Work left by earlier runs in the context
   * counts too. `sandcell run` sets it. The other languages' code has nothing left pending once it
   * returns, and their kernels ignore it. @default false
   */
  waitForEventLoop?: boolean;
}

/** What running code asks its user for. */
export interface InputRequest {
  prompt: string;
  /** The input is a password (getpass): a client should not echo it. */
  password: boolean;
}

/**
 * The traceback as one block of text, as a terminal shows it, naming the error once: Python's ends
 * with `name: value`, a JavaScript stack starts with it; `name: value` is added when it does neither
 * (a timeout, whose traceback is the interrupt's).
 */
export function formatTraceback(error: ExecutionError): string {
  const summary = `${error.name}: ${error.value}`;
  const text = error.traceback.join('\n').trimEnd();
  if (!text) return summary;
  const lines = text.split('\n');
  const names = (line: string | undefined) => line === error.name || line?.startsWith(`${error.name}:`) === true;
  return names(lines.at(-1)) || names(lines[0]) ? text : `${text}\n${summary}`;
}
