/**
 * The processes started through envd in one sandbox, by pid: each is a
 * background command of the session whose output fans out to every stream
 * listening (the Start stream, and any Process.Connect), so a client can
 * disconnect and connect again while the process runs; or a PTY, a terminal of
 * the session, whose streams attach to it (envd-pty.ts). A process leaves the
 * table when it ends.
 */
import type { CommandHandle, CommandResult } from '../../session/command.js';
import type { TerminalHandle } from '../../session/terminals.js';
import { ConnectError } from './errors.js';

export interface ProcessConfig {
  cmd: string;
  args: string[];
  envs: Record<string, string>;
  cwd?: string;
}

/** What a stream hears: output as it comes, then the end (or the failure that ended it). */
export type ProcessEvent =
  | { kind: 'stdout' | 'stderr'; text: string }
  | { kind: 'end'; result: CommandResult }
  | { kind: 'failed'; error: unknown };

export type ProcessListener = (event: ProcessEvent) => void;

export class E2bProcess {
  private readonly listeners = new Set<ProcessListener>();
  private handle?: CommandHandle;
  /** Set for a PTY. */
  terminal?: TerminalHandle;

  constructor(
    readonly config: ProcessConfig,
    readonly tag: string | undefined,
  ) {}

  get pid(): number {
    const pid = this.handle?.pid ?? this.terminal?.pid;
    if (pid === undefined) throw new Error('The process has not started.');
    return pid;
  }

  /** The command it is; a PTY is refused in envd's words. */
  get command(): CommandHandle {
    if (this.terminal)
      throw new ConnectError('invalid_argument', `Process ${this.pid} is a PTY: send it input as \`pty\`.`);
    if (!this.handle) throw new Error('The process has not started.');
    return this.handle;
  }

  started(handle: CommandHandle): void {
    this.handle = handle;
  }

  /** Listens until the returned function is called, or the process ends. */
  subscribe(listener: ProcessListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  emit(event: ProcessEvent): void {
    for (const listener of [...this.listeners]) listener(event);
    if (event.kind !== 'stdout' && event.kind !== 'stderr') this.listeners.clear();
  }
}

export class ProcessTable {
  private readonly byPid = new Map<number, E2bProcess>();

  add(process: E2bProcess): void {
    const pid = process.pid;
    this.byPid.set(pid, process);
    const leave = () => {
      if (this.byPid.get(pid) === process) this.byPid.delete(pid);
    };
    if (process.terminal) {
      void process.terminal.ended.finally(leave);
      return;
    }
    process.command
      .wait()
      .then((result) => process.emit({ kind: 'end', result }))
      .catch((error: unknown) => process.emit({ kind: 'failed', error }))
      .finally(leave);
  }

  /** The running process chosen by pid or by tag, as envd's ProcessSelector does. */
  find(selector: { pid?: number; tag?: string }): E2bProcess | undefined {
    if (selector.pid !== undefined) return this.byPid.get(selector.pid);
    if (selector.tag !== undefined) return [...this.byPid.values()].find((process) => process.tag === selector.tag);
    return undefined;
  }

  list(): E2bProcess[] {
    return [...this.byPid.values()];
  }
}
