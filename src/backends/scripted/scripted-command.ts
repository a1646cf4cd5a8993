/**
 * One scripted command, as the supervisor runs `bash -c`: started (a pid),
 * its output, its stdin, ended by its script, by a signal, or with the sandbox.
 */
import type { CommandEvent, CommandListing } from '../../session/kernel-messages.js';
import type { ScriptedFileStore } from './file-store.js';
import type { CommandScript, ScriptedCommandStep } from './script.js';

export interface ScriptedCommandOptions {
  id: string;
  pid: number;
  command: string;
  cwd?: string;
  env?: Record<string, string>;
  script: CommandScript;
  files: ScriptedFileStore;
  send: (message: CommandEvent) => void;
  /** The whole sandbox ends. */
  crashSandbox: () => void;
  /** It ended (the supervisor forgets it). */
  ended: () => void;
}

export class ScriptedCommand {
  readonly startedMs = Date.now();
  private finished = false;
  private stdin = '';
  private stdinClosed = false;
  /** Wakes a step that waits (for a signal, or stdin). */
  private wake: () => void = () => undefined;
  private signalled?: string;

  constructor(private readonly options: ScriptedCommandOptions) {}

  get id(): string {
    return this.options.id;
  }

  listing(): CommandListing {
    const { id, pid, command, cwd } = this.options;
    return { id, pid, command, cwd: cwd ?? '/mnt/data', startedMs: this.startedMs };
  }

  async start(): Promise<void> {
    const { id, pid } = this.options;
    let exitCode = 0;
    try {
      const steps = await this.options.script({
        command: this.options.command,
        ...(this.options.cwd === undefined ? {} : { cwd: this.options.cwd }),
        ...(this.options.env === undefined ? {} : { env: this.options.env }),
        files: this.options.files,
      });
      const first = steps[0];
      if (first?.type === 'refuse-start') {
        this.finished = true;
        const error = { code: first.code, message: first.message };
        this.options.send({ type: 'command-end', id, exitCode: null, signal: null, outputTruncated: false, error });
        this.options.ended();
        return;
      }
      this.options.send({ type: 'command-started', id, pid });
      for (const step of steps) {
        if (this.signalled || this.finished) return;
        if (step.type === 'exit') {
          exitCode = step.code;
          break;
        }
        if (step.type === 'crash-sandbox') return this.options.crashSandbox();
        if (step.type === 'refuse-start') continue;
        await this.perform(step);
      }
    } catch (error) {
      this.output('stderr', `${(error as Error).message}\n`);
      exitCode = 1;
    }
    if (!this.signalled) this.end(exitCode, null);
  }

  writeStdin(data: string, eof: boolean): void {
    if (this.stdinClosed) return;
    this.stdin += data;
    if (eof) this.stdinClosed = true;
    this.wake();
  }

  signal(signal: string): void {
    if (this.finished) return;
    // Only SIGKILL cannot be ignored; a scripted command ends on any signal it is sent.
    this.signalled = signal;
    this.wake();
    this.end(null, signal);
  }

  /** The sandbox ended: nothing more is sent. */
  stop(): void {
    this.finished = true;
    this.wake();
  }

  private async perform(
    step: Exclude<ScriptedCommandStep, { type: 'exit' | 'crash-sandbox' | 'refuse-start' }>,
  ): Promise<void> {
    switch (step.type) {
      case 'stdout':
      case 'stderr':
        return this.output(step.type, step.text);
      case 'sleep':
      case 'hang':
        await new Promise<void>((resolve) => {
          const timer = step.type === 'sleep' ? setTimeout(resolve, step.ms) : undefined;
          this.wake = () => {
            if (!this.signalled && !this.finished) return;
            clearTimeout(timer);
            resolve();
          };
        });
        return;
      case 'echo-stdin':
        for (;;) {
          if (this.stdin) this.output('stdout', this.stdin);
          this.stdin = '';
          if (this.stdinClosed || this.signalled || this.finished) return;
          await new Promise<void>((resolve) => {
            this.wake = resolve;
          });
        }
    }
  }

  private output(name: 'stdout' | 'stderr', text: string): void {
    if (!this.finished) this.options.send({ type: 'command-output', id: this.options.id, name, text });
  }

  private end(exitCode: number | null, signal: string | null): void {
    if (this.finished) return;
    this.finished = true;
    this.options.send({ type: 'command-end', id: this.options.id, exitCode, signal, outputTruncated: false });
    this.options.ended();
  }
}
