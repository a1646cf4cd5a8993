/**
 * One terminal in the sandbox, from `terminal-open` to `terminal-end`: a
 * program on a pseudo-terminal the supervisor opened (sandcell_terminals.py).
 *
 * Output is paced end to end. The supervisor sends at most its window of bytes
 * unacknowledged; this side acknowledges a chunk once every attached client
 * has taken it, so a client that holds (its socket is full) stops the reading
 * of the pty, the program blocks in its write, and neither the sandbox nor the
 * server gathers more than a window and the client's own buffer. With no
 * client attached, output is acknowledged at once and only the last
 * REPLAY_BYTES are kept, for the next client to attach (a program is never
 * held for want of a reader). Input is bytes; Ctrl-C is the byte 0x03.
 */
import { constants } from 'node:os';
import { SandboxCrashedError } from '../errors.js';
import type { CommandListener, KernelConnection } from './kernel-connection.js';
import type { TerminalSignal } from './kernel-protocol.js';

export type { TerminalSignal } from './kernel-protocol.js';

/** The most recent output kept for a client that attaches later. */
export const REPLAY_BYTES = 64 * 1024;
/** The most input one write takes (a paste); more is an InvalidInputError. */
export const TERMINAL_INPUT_BYTES = 64 * 1024;
/** Columns and rows, each from 1 to this (the supervisor's bound). */
export const MAX_TERMINAL_SIZE = 1000;

export interface TerminalOptions {
  /** @default 80 */
  cols?: number;
  /** @default 24 */
  rows?: number;
  /** Working directory, absolute or relative to /mnt/data. @default /mnt/data */
  cwd?: string;
  /** Environment variables on top of the session's; TERM=xterm-256color and a UTF-8 locale unless given. */
  env?: Record<string, string>;
  /** The program and its arguments. @default an interactive login bash */
  command?: string[];
}

/** How a terminal ended: its program's status, and, when sandcell ended it, why. */
export interface TerminalEnd {
  /** The program's exit status; null when it was ended by a signal or never ran. */
  exitCode: number | null;
  signal?: string;
  /** Set when the terminal ended because its session was paused, closed, reset or lost: in words, for a person. */
  reason?: string;
}

/** What a client attached to a terminal hears. */
export interface TerminalClient {
  data(chunk: Buffer): void;
  end(end: TerminalEnd): void;
}

/** A client's hold on a terminal: `hold()` while it cannot take more output, `release()` once it can. */
export interface TerminalAttachment {
  hold(): void;
  release(): void;
  detach(): void;
}

interface Attached {
  client: TerminalClient;
  held: boolean;
}

export class Terminal {
  readonly ended: Promise<TerminalEnd>;
  pid?: number;
  cols: number;
  rows: number;
  readonly started: Promise<number>;
  private readonly clients = new Set<Attached>();
  private readonly recent: Buffer[] = [];
  private recentBytes = 0;
  /** Bytes passed on while some client held: acknowledged once none holds. */
  private owed = 0;
  private end?: TerminalEnd;
  private resolveEnd: (end: TerminalEnd) => void = () => undefined;
  private markStarted: (pid: number) => void = () => undefined;
  private failStart: (error: Error) => void = () => undefined;
  private readonly unsubscribe: () => void;

  constructor(
    readonly id: string,
    readonly connection: KernelConnection,
    size: { cols: number; rows: number },
    private readonly onEnd: (terminal: Terminal) => void,
    private readonly startError: (error: { code: string; message: string }) => Error,
  ) {
    this.cols = size.cols;
    this.rows = size.rows;
    this.ended = new Promise((resolve) => {
      this.resolveEnd = resolve;
    });
    this.started = new Promise((resolve, reject) => {
      this.markStarted = resolve;
      this.failStart = reject;
    });
    this.started.catch(() => undefined);
    this.unsubscribe = connection.subscribeCommand(id, this.hear);
  }

  /** How many clients are attached now. */
  get attachedClients(): number {
    return this.clients.size;
  }

  /** Whether it has ended. */
  get closed(): boolean {
    return this.end !== undefined;
  }

  /** Attaches a client: it gets the recent output first (`replay`), then what comes. */
  attach(client: TerminalClient, options: { replay?: boolean } = {}): TerminalAttachment {
    const attached: Attached = { client, held: false };
    if (this.end) {
      if (options.replay !== false && this.recentBytes > 0) client.data(Buffer.concat(this.recent));
      client.end(this.end);
      return { hold: () => undefined, release: () => undefined, detach: () => undefined };
    }
    if (options.replay !== false && this.recentBytes > 0) client.data(Buffer.concat(this.recent));
    this.clients.add(attached);
    return {
      hold: () => {
        attached.held = true;
      },
      release: () => {
        attached.held = false;
        this.settleOwed();
      },
      detach: () => {
        this.clients.delete(attached);
        this.settleOwed();
      },
    };
  }

  write(data: Buffer): void {
    if (this.end || data.length === 0) return;
    this.connection.send({ type: 'terminal-input', id: this.id, data: data.toString('base64') });
  }

  resize(cols: number, rows: number): void {
    if (this.end) return;
    this.cols = cols;
    this.rows = rows;
    this.connection.send({ type: 'terminal-resize', id: this.id, cols, rows });
  }

  /** SIGINT, SIGQUIT and SIGTSTP go to the foreground job; the others to every job of the terminal. */
  signal(signal: TerminalSignal): boolean {
    if (this.end) return false;
    this.connection.send({ type: 'terminal-signal', id: this.id, signal });
    return true;
  }

  /** Ends it (SIGKILL to its jobs); resolves once it has ended, or at once if the sandbox does not answer in `waitMs`. */
  async close(waitMs: number): Promise<TerminalEnd> {
    if (!this.end) {
      this.connection.send({ type: 'terminal-close', id: this.id });
      const timer = setTimeout(() => this.finish({ exitCode: null, signal: 'SIGKILL' }), waitMs);
      await this.ended;
      clearTimeout(timer);
    }
    return this.ended;
  }

  /** Its sandbox ended, was paused or closed: it ends with `reason`. */
  lost(reason: string): void {
    this.finish({ exitCode: null, reason });
  }

  private readonly hear: CommandListener = (event) => {
    switch (event.type) {
      case 'terminal-started':
        this.pid ??= event.pid;
        this.markStarted(event.pid);
        return;
      case 'terminal-output':
        this.output(event.data);
        return;
      case 'terminal-end':
        if (event.error) {
          this.failStart(this.startError(event.error));
          this.finish({ exitCode: null, reason: `it could not start: ${event.error.message}` });
          return;
        }
        this.finish({
          exitCode: event.exitCode,
          ...(event.signal ? { signal: event.signal } : {}),
        });
    }
  };

  private output(data: Buffer): void {
    if (this.end || data.length === 0) return;
    this.recent.push(data);
    this.recentBytes += data.length;
    while (this.recentBytes - this.recent[0]!.length >= REPLAY_BYTES) this.recentBytes -= this.recent.shift()!.length;
    for (const { client } of this.clients) client.data(data);
    this.owed += data.length;
    this.settleOwed();
  }

  private settleOwed(): void {
    if (this.owed === 0 || this.end) return;
    for (const attached of this.clients) if (attached.held) return;
    this.connection.send({ type: 'terminal-ack', id: this.id, bytes: this.owed });
    this.owed = 0;
  }

  private finish(end: TerminalEnd): void {
    if (this.end) return;
    this.end = end;
    this.unsubscribe();
    this.failStart(
      new SandboxCrashedError(`The terminal ended before it started: ${end.reason ?? 'it exited at once'}.`),
    );
    for (const { client } of this.clients) client.end(end);
    this.clients.clear();
    this.onEnd(this);
    this.resolveEnd(end);
  }
}

/** The exit status a shell would report for `end`: its code, or 128 + the signal's number. */
export function terminalExitCode(end: TerminalEnd): number {
  if (end.exitCode !== null) return end.exitCode;
  const number = end.signal ? (constants.signals as Record<string, number | undefined>)[end.signal] : undefined;
  return number === undefined ? -1 : 128 + number;
}
