/**
 * Lines from stdin, one at a time, for prompts. Lines that arrive before they
 * are asked for (piped input, typing ahead) wait in a queue instead of being
 * lost, and a question given up (its signal aborted) leaves the next line to
 * the next question.
 */
import readline from 'node:readline';
import { Writable } from 'node:stream';

export interface LineReaderOptions {
  /** Tab completion at a terminal: the text before the cursor → the candidates and the text they replace. */
  completer?: (line: string) => Promise<[string[], string]>;
  /** Earlier lines, newest first, for the arrow keys at a terminal; lines read are added to it. */
  history?: string[];
  /** @default 30 (readline's) */
  historySize?: number;
  /** Write the prompts when the input is not a terminal. @default true */
  promptWhenPiped?: boolean;
}

export interface QuestionOptions {
  /** Aborting gives the question up: it answers undefined, and the next line goes to the next question. */
  signal?: AbortSignal;
  /** At a terminal, the line is not echoed and not kept in the history (a password). */
  hidden?: boolean;
  /** At a terminal, text typed in for the user after the prompt (an indent). */
  prefill?: string;
}

type CompleterCallback = (error: Error | null, result?: readline.CompleterResult) => void;

/** A terminal's output that can stop echoing what is typed, as a password prompt must. */
class MutableOutput extends Writable {
  muted = false;

  constructor(readonly target: NodeJS.WriteStream) {
    super();
    target.on('resize', () => this.emit('resize'));
  }

  /** readline lays the line out by the terminal's width. */
  get columns(): number | undefined {
    return this.target.columns;
  }

  get rows(): number | undefined {
    return this.target.rows;
  }

  get isTTY(): boolean {
    return this.target.isTTY === true;
  }

  override _write(chunk: Buffer | string, _encoding: BufferEncoding, callback: (error?: Error | null) => void): void {
    if (!this.muted) this.target.write(chunk);
    callback();
  }
}

export class LineReader {
  readonly interface: readline.Interface;
  /** The history readline keeps (newest first), for saving. */
  readonly history: string[];
  private readonly output: NodeJS.WritableStream;
  private readonly mutable: MutableOutput | undefined;
  private readonly promptWhenPiped: boolean;
  private readonly queue: string[] = [];
  private waiting: ((line: string | undefined) => void) | undefined;
  private ended = false;

  constructor(
    input: NodeJS.ReadableStream = process.stdin,
    output: NodeJS.WritableStream = process.stdout,
    options: LineReaderOptions = {},
  ) {
    const terminal = (input as NodeJS.ReadStream).isTTY === true;
    this.output = output;
    this.mutable =
      terminal && (output as NodeJS.WriteStream).isTTY ? new MutableOutput(output as NodeJS.WriteStream) : undefined;
    this.promptWhenPiped = options.promptWhenPiped ?? true;
    this.history = options.history ?? [];
    const { completer } = options;
    this.interface = readline.createInterface({
      input,
      output: this.mutable ?? output,
      terminal,
      history: this.history,
      ...(options.historySize !== undefined ? { historySize: options.historySize } : {}),
      removeHistoryDuplicates: true,
      ...(completer
        ? {
            completer: (line: string, callback: CompleterCallback) =>
              void completer(line).then((found) => callback(null, found), callback),
          }
        : {}),
    });
    this.interface.on('line', (line) => {
      const waiting = this.waiting;
      this.waiting = undefined;
      if (waiting) waiting(line);
      else this.queue.push(line);
    });
    this.interface.on('close', () => this.end());
  }

  /** Input is a terminal: prompts, line editing, history and completion. */
  get terminal(): boolean {
    return this.interface.terminal;
  }

  /** Shows `prompt` and reads a line; undefined at the end of input, or when `signal` gives the question up. */
  async question(prompt: string, options: QuestionOptions = {}): Promise<string | undefined> {
    const { signal, hidden = false } = options;
    if (signal?.aborted || (this.ended && this.queue.length === 0)) return undefined;
    this.showPrompt(prompt, options.prefill);
    const mute = hidden && this.mutable !== undefined;
    if (mute && this.mutable) this.mutable.muted = true;
    try {
      const line = this.queue.length > 0 ? this.queue.shift() : await this.nextLine(signal);
      if (mute && line !== undefined && this.history[0] === line) this.history.shift();
      return line;
    } finally {
      if (mute && this.mutable) {
        this.mutable.muted = false;
        this.mutable.target.write('\n'); // the Enter the muted output did not show
      }
    }
  }

  /** Drops what is typed on the current line (readline's Ctrl-E, then Ctrl-U). */
  clearLine(): void {
    if (!this.terminal || this.ended) return;
    this.interface.write(null, { ctrl: true, name: 'e' });
    this.interface.write(null, { ctrl: true, name: 'u' });
  }

  close(): void {
    this.end();
    this.interface.close();
  }

  private showPrompt(prompt: string, prefill: string | undefined): void {
    if (!this.terminal) {
      if (this.promptWhenPiped && prompt) this.output.write(prompt);
      return;
    }
    if (this.ended) return;
    this.interface.setPrompt(prompt);
    this.interface.prompt();
    if (prefill) this.interface.write(prefill);
  }

  private nextLine(signal: AbortSignal | undefined): Promise<string | undefined> {
    if (this.ended) return Promise.resolve(undefined);
    return new Promise((resolve) => {
      const onAbort = () => {
        if (this.waiting === take) this.waiting = undefined;
        this.clearLine();
        // What follows (the code's error) starts on a line of its own; a muted question writes its own newline.
        if (this.terminal && !this.mutable?.muted) this.output.write('\n');
        resolve(undefined);
      };
      const take = (line: string | undefined) => {
        signal?.removeEventListener('abort', onAbort);
        resolve(line);
      };
      this.waiting = take;
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  private end(): void {
    this.ended = true;
    const waiting = this.waiting;
    this.waiting = undefined;
    waiting?.(undefined);
  }
}
