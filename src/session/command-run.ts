/**
 * One shell command in the sandbox, from `command-start` to `command-end`:
 * its output gathered within the host's caps (the supervisor caps too; what
 * it sends is untrusted), its stdin, its timeout and abort (SIGKILL to its
 * process group), and its end — by itself, or with its sandbox.
 */
import { constants } from 'node:os';
import { performance } from 'node:perf_hooks';
import { InvalidInputError, KernelRequestError, TimeoutError } from '../errors.js';
import type { CommandOptions, CommandResult, CommandSignal } from './command.js';
import type { KernelConnection } from './kernel-connection.js';
import type { CommandEvent, ReplyEvent, TerminalEvent } from './kernel-protocol.js';
import { headBytes } from './output-limits.js';

export interface CommandRunSettings {
  command: string;
  cwd?: string;
  env?: Record<string, string>;
  /** Undefined: no limit (a background command's default). */
  timeoutMs?: number;
  outputBytes: number;
  /** How long the sandbox may take to say the command started, and to end it after a SIGKILL. */
  answerTimeoutMs: number;
}

/** What a signal's end is reported as when the supervisor does not say. */
const SIGKILL_EXIT = { exitCode: 128 + constants.signals.SIGKILL, signal: 'SIGKILL' };

export class CommandRun {
  /** Resolves with the pid once the command runs; rejects when it could not start. */
  readonly started: Promise<number>;
  /** Resolves once the command has ended; rejects only when the sandbox failed under it. */
  readonly result: Promise<CommandResult>;
  pid?: number;
  private readonly begun = performance.now();
  private stdout = '';
  private stderr = '';
  private readonly used = { stdout: 0, stderr: 0 };
  private truncated = false;
  private timedOut = false;
  private ended = false;
  private stdinOpen: boolean;
  private readonly timers: NodeJS.Timeout[] = [];
  private markStarted: (pid: number) => void = () => undefined;
  private failStart: (error: Error) => void = () => undefined;
  private resolveResult: (result: CommandResult) => void = () => undefined;
  private rejectResult: (error: Error) => void = () => undefined;
  private readonly unsubscribe: () => void;

  constructor(
    readonly id: string,
    readonly connection: KernelConnection,
    private readonly settings: CommandRunSettings,
    private readonly options: CommandOptions,
    private readonly onEnd: (run: CommandRun) => void,
  ) {
    this.started = new Promise((resolve, reject) => {
      this.markStarted = resolve;
      this.failStart = reject;
    });
    this.result = new Promise((resolve, reject) => {
      this.resolveResult = resolve;
      this.rejectResult = reject;
    });
    // Whoever waits on one of them hears of a failure; the other must not go unhandled.
    this.started.catch(() => undefined);
    this.result.catch(() => undefined);
    this.stdinOpen = options.background === true;
    this.unsubscribe = connection.subscribeCommand(id, (event) => this.hear(event));
  }

  get command(): string {
    return this.settings.command;
  }

  get background(): boolean {
    return this.options.background === true;
  }

  /** Sends `command-start` (and the stdin text), and starts the clocks. */
  start(): void {
    const { command, cwd, env, timeoutMs } = this.settings;
    const stdin = this.options.stdin;
    this.connection.send({
      type: 'command-start',
      id: this.id,
      command,
      ...(cwd === undefined ? {} : { cwd }),
      ...(env === undefined ? {} : { env }),
      stdin: this.background || stdin !== undefined,
    });
    if (stdin !== undefined) {
      this.connection.send({ type: 'command-stdin', id: this.id, data: stdin, eof: !this.background });
    }
    this.later(this.settings.answerTimeoutMs, () => {
      if (this.pid !== undefined) return;
      this.failStart(
        new TimeoutError(`The sandbox did not start the command within ${this.settings.answerTimeoutMs} ms.`),
      );
      this.signal('SIGKILL');
    });
    if (timeoutMs !== undefined) {
      this.later(timeoutMs, () => {
        this.timedOut = true;
        this.signal('SIGKILL');
      });
    }
    this.options.signal?.addEventListener('abort', this.onAbort, { once: true });
  }

  /** Sends `signal` to the command's process group; false when it had already ended. */
  signal(signal: CommandSignal): boolean {
    if (this.ended) return false;
    this.connection.send({ type: 'command-signal', id: this.id, signal });
    if (signal === 'SIGKILL') {
      // An honest sandbox ends it at once; one that does not answer is not waited on forever.
      this.later(this.settings.answerTimeoutMs, () => this.finish(SIGKILL_EXIT));
    }
    return true;
  }

  sendStdin(text: string): void {
    if (this.ended || !this.stdinOpen) return;
    this.connection.send({ type: 'command-stdin', id: this.id, data: text });
  }

  closeStdin(): void {
    if (this.ended || !this.stdinOpen) return;
    this.stdinOpen = false;
    this.connection.send({ type: 'command-stdin', id: this.id, data: '', eof: true });
  }

  /** The sandbox ended under the command: it ends as killed (`undefined`), or fails with `error`. */
  sandboxEnded(error?: Error): void {
    if (error) this.fail(error);
    else this.finish(SIGKILL_EXIT);
  }

  private readonly onAbort = (): void => {
    this.signal('SIGKILL');
  };

  private hear(event: CommandEvent | TerminalEvent | ReplyEvent): void {
    switch (event.type) {
      case 'command-started':
        this.pid ??= event.pid;
        this.markStarted(event.pid);
        return;
      case 'command-output':
        this.output(event.name, event.text);
        return;
      case 'command-end':
        if (event.error) {
          this.fail(commandStartError(event.error));
          return;
        }
        if (event.outputTruncated) this.truncated = true;
        this.finish({
          exitCode: event.exitCode ?? (event.signal ? 128 + (signalNumber(event.signal) ?? 0) : -1),
          ...(event.signal ? { signal: event.signal } : {}),
        });
        return;
      case 'reply':
        // Only a refusal of the start comes as a reply.
        if (!event.ok) this.fail(commandStartError(event.error));
    }
  }

  private output(name: 'stdout' | 'stderr', text: string): void {
    const room = this.settings.outputBytes - this.used[name];
    const size = Buffer.byteLength(text, 'utf8');
    const kept = size <= room ? text : headBytes(text, room);
    if (size > room) this.truncated = true;
    this.used[name] += size <= room ? size : Math.max(0, room);
    if (!kept) return;
    if (name === 'stdout') {
      this.stdout += kept;
      this.options.onStdout?.(kept);
    } else {
      this.stderr += kept;
      this.options.onStderr?.(kept);
    }
  }

  private finish(end: { exitCode: number; signal?: string }): void {
    if (!this.settle()) return;
    this.failStart(new KernelRequestError('command-start', 'ended', 'the command ended before it started'));
    this.resolveResult({
      exitCode: end.exitCode,
      stdout: this.stdout,
      stderr: this.stderr,
      durationMs: Math.round((performance.now() - this.begun) * 1000) / 1000,
      timedOut: this.timedOut,
      outputTruncated: this.truncated,
      ...(end.signal ? { signal: end.signal } : {}),
    });
  }

  private fail(error: Error): void {
    if (!this.settle()) return;
    this.failStart(error);
    this.rejectResult(error);
  }

  private settle(): boolean {
    if (this.ended) return false;
    this.ended = true;
    for (const timer of this.timers) clearTimeout(timer);
    this.unsubscribe();
    this.options.signal?.removeEventListener('abort', this.onAbort);
    this.onEnd(this);
    return true;
  }

  private later(ms: number, action: () => void): void {
    this.timers.push(setTimeout(action, ms));
  }
}

/** Why the sandbox could not start a command: what the caller gave (a directory that is not there), or the sandbox. */
function commandStartError(error: { code: string; message: string }): Error {
  if (error.code === 'invalid-cwd' || error.code === 'invalid-request') {
    return new InvalidInputError(`The command could not start: ${error.message}.`);
  }
  return new KernelRequestError('command-start', error.code, error.message);
}

function signalNumber(name: string): number | undefined {
  return (constants.signals as Record<string, number | undefined>)[name];
}
