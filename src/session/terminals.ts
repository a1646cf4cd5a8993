/**
 * session.terminals: interactive programs on pseudo-terminals in the session's
 * sandbox (terminal.ts), at most `maxTerminals` at once. A terminal's
 * processes are not kept by a pause, a snapshot's restore, a reset or a
 * restart: each ends then, saying why (`TerminalEnd.reason`), never a shell
 * that silently lost its history.
 */
import { InvalidInputError, KernelRequestError, TimeoutError, TooManyTerminalsError } from '../errors.js';
import type { KernelConnection } from './kernel-connection.js';
import { checkEnvironment, checkWorkingDirectory } from './sandbox-inputs.js';
import {
  MAX_TERMINAL_SIZE,
  TERMINAL_INPUT_BYTES,
  Terminal,
  type TerminalEnd,
  type TerminalOptions,
  type TerminalSignal,
} from './terminal.js';

export const TERMINAL_SIGNALS: readonly TerminalSignal[] = [
  'SIGINT',
  'SIGQUIT',
  'SIGTSTP',
  'SIGTERM',
  'SIGHUP',
  'SIGKILL',
];

/** What terminals need of their session. */
export interface TerminalHost {
  connection(): Promise<KernelConnection>;
  checkOpen(): void;
  touch(): void;
  maxTerminals: number;
  /** How long the sandbox may take to start a terminal, and to end one. */
  answerTimeoutMs: number;
}

/** A terminal as the session hands it out. */
export interface TerminalHandle {
  readonly id: string;
  /** The program's process id inside the sandbox. */
  readonly pid: number;
  readonly cols: number;
  readonly rows: number;
  /** Resolves once it has ended (never rejects). */
  readonly ended: Promise<TerminalEnd>;
  readonly closed: boolean;
  /** Bytes or text (UTF-8) for the program, at most 64 KiB a write. */
  write(data: string | Uint8Array): void;
  resize(cols: number, rows: number): void;
  signal(signal: TerminalSignal): boolean;
  /** Output as it comes (after the recent output, unless `replay: false`) until the returned attachment detaches. */
  attach: Terminal['attach'];
  /** Ends it: SIGKILL to every job in it. */
  close(): Promise<TerminalEnd>;
}

export class TerminalRegistry {
  private readonly open = new Map<string, Terminal>();
  private reserved = 0;
  private nextNumber = 1;

  constructor(readonly host: TerminalHost) {}

  all(): Terminal[] {
    return [...this.open.values()];
  }

  get(id: string): Terminal | undefined {
    return this.open.get(id);
  }

  async start(options: TerminalOptions): Promise<Terminal> {
    const host = this.host;
    host.checkOpen();
    if (typeof options !== 'object' || options === null)
      throw new InvalidInputError('Terminal options must be an object.');
    const cols = checkSize('cols', options.cols ?? 80);
    const rows = checkSize('rows', options.rows ?? 24);
    const cwd = checkWorkingDirectory(options.cwd);
    const env = checkEnvironment(options.env);
    const argv = options.command === undefined ? undefined : checkArgv(options.command);
    if (this.open.size + this.reserved >= host.maxTerminals) throw new TooManyTerminalsError(host.maxTerminals);
    this.reserved += 1;
    let connection: KernelConnection;
    try {
      connection = await host.connection();
    } finally {
      this.reserved -= 1;
    }
    if (this.open.size >= host.maxTerminals) throw new TooManyTerminalsError(host.maxTerminals);
    const id = `terminal-${this.nextNumber++}`;
    const terminal = new Terminal(
      id,
      connection,
      { cols, rows },
      (ended) => {
        this.open.delete(ended.id);
        host.touch();
      },
      startError,
    );
    this.open.set(id, terminal);
    host.touch();
    connection.send({
      type: 'terminal-open',
      id,
      cols,
      rows,
      ...(argv ? { argv } : {}),
      ...(cwd === undefined ? {} : { cwd }),
      ...(env === undefined ? {} : { env }),
    });
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      connection.send({ type: 'terminal-close', id });
      terminal.lost(`the sandbox did not start it within ${host.answerTimeoutMs} ms`);
    }, host.answerTimeoutMs);
    try {
      await terminal.started;
    } catch (error) {
      if (timedOut) throw new TimeoutError(`The sandbox did not start the terminal within ${host.answerTimeoutMs} ms.`);
      throw error;
    } finally {
      clearTimeout(timer);
    }
    return terminal;
  }

  /** Every terminal of `connection`'s sandbox (every one, without it) ends, saying `reason`. */
  endAll(reason: string, connection?: KernelConnection): void {
    for (const terminal of this.all()) {
      if (connection === undefined || terminal.connection === connection) {
        terminal.connection.send({ type: 'terminal-close', id: terminal.id });
        terminal.lost(reason);
      }
    }
  }
}

/** `session.terminals`. */
export class SessionTerminals {
  constructor(private readonly registry: TerminalRegistry) {}

  /** Opens a terminal: an interactive login bash unless `command` says otherwise. */
  async open(options: TerminalOptions = {}): Promise<TerminalHandle> {
    return handleOf(await this.registry.start(options), this.registry.host);
  }

  /** The terminals open now. */
  list(): TerminalHandle[] {
    return this.registry.all().map((terminal) => handleOf(terminal, this.registry.host));
  }

  /** The open terminal `id`, or undefined. */
  get(id: string): TerminalHandle | undefined {
    const terminal = this.registry.get(id);
    return terminal && handleOf(terminal, this.registry.host);
  }
}

function handleOf(terminal: Terminal, host: TerminalHost): TerminalHandle {
  return {
    id: terminal.id,
    get pid() {
      return terminal.pid ?? 0;
    },
    get cols() {
      return terminal.cols;
    },
    get rows() {
      return terminal.rows;
    },
    ended: terminal.ended,
    get closed() {
      return terminal.closed;
    },
    write: (data) => {
      const bytes = typeof data === 'string' ? Buffer.from(data, 'utf8') : Buffer.from(data);
      if (bytes.length > TERMINAL_INPUT_BYTES) {
        throw new InvalidInputError(
          `A terminal takes at most ${TERMINAL_INPUT_BYTES} bytes a write; got ${bytes.length}.`,
        );
      }
      host.touch();
      terminal.write(bytes);
    },
    resize: (cols, rows) => terminal.resize(checkSize('cols', cols), checkSize('rows', rows)),
    signal: (signal) => terminal.signal(checkTerminalSignal(signal)),
    attach: (client, options) => terminal.attach(client, options),
    close: () => terminal.close(host.answerTimeoutMs),
  };
}

export function checkSize(name: 'cols' | 'rows', value: unknown): number {
  if (!Number.isInteger(value) || (value as number) < 1 || (value as number) > MAX_TERMINAL_SIZE) {
    throw new InvalidInputError(
      `\`${name}\` must be a whole number from 1 to ${MAX_TERMINAL_SIZE}; got ${String(value).slice(0, 40)}.`,
    );
  }
  return value as number;
}

export function checkTerminalSignal(signal: unknown): TerminalSignal {
  if (TERMINAL_SIGNALS.includes(signal as TerminalSignal)) return signal as TerminalSignal;
  throw new InvalidInputError(`A terminal can be sent ${TERMINAL_SIGNALS.join(', ')}; got ${JSON.stringify(signal)}.`);
}

function checkArgv(command: unknown): string[] {
  if (
    !Array.isArray(command) ||
    command.length === 0 ||
    command.length > 4096 ||
    !command.every((word) => typeof word === 'string' && !word.includes('\0') && word.length <= 64 * 1024)
  ) {
    throw new InvalidInputError('`command` must be a list of 1 to 4096 strings without NUL bytes (the program first).');
  }
  return command as string[];
}

function startError(error: { code: string; message: string }): Error {
  if (error.code === 'invalid-cwd' || error.code === 'invalid-request' || error.code === 'spawn-failed') {
    return new InvalidInputError(`The terminal could not start: ${error.message}.`);
  }
  return new KernelRequestError('terminal-open', error.code, error.message);
}
