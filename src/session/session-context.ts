/**
 * One context as the host keeps it: a stateful kernel of one language inside
 * the session's sandbox, with its own run queue, execution count and the note
 * of a state loss its next run reports. The kernel itself lives in the
 * sandbox; this record outlives it (a crashed sandbox's contexts are made
 * again, empty, on their next use).
 */
import type { KernelConnection } from './kernel-connection.js';
import type { Language } from './languages.js';

/** A context as a user sees it. */
export interface ContextInfo {
  id: string;
  language: Language;
  /** The kernel's working directory. */
  cwd: string;
  /** Runs so far in this context's current kernel. */
  executionCount: number;
}

export interface CreateContextOptions {
  language: Language;
  /** Working directory, absolute or relative to /mnt/data. @default /mnt/data */
  cwd?: string;
  /** Environment variables of the kernel, on top of the session's `environment`. @default {} */
  env?: Record<string, string>;
  signal?: AbortSignal;
}

/** The execution in flight in a context: what restarts, removals and sandbox ends act on. */
export interface RunningExecution {
  /** Sends the interrupt (once); the run ends when the code stops, or its kernel is replaced. */
  interrupt(): void;
  /** Its kernel is gone: the run ends now with its state lost, saying why. */
  lose(loss: StateLoss): void;
  /** The session closed under it: the run rejects with `error`. */
  abandon(error: Error): void;
}

export interface StateLoss {
  /** The error name the run reports (`KernelDied`, `KernelRestarted`, `ContextRemoved`). */
  name: string;
  /** What ended the kernel and which state went with it, in words a user can act on. */
  reason: string;
}

export const DATA_DIRECTORY = '/mnt/data';

export class SessionContext {
  executionCount = 0;
  /** Runs queue here, one at a time; other contexts' runs go on beside them. */
  queue: Promise<unknown> = Promise.resolve();
  running?: RunningExecution;
  /** The sandbox its kernel was started in; undefined until it has been. */
  connection?: KernelConnection;
  /** Its kernel ended on its own (context-exit): it is restarted before the next run. */
  exited = false;
  /** A start or restart of its kernel in flight. */
  starting?: Promise<void>;
  /** Why the state was lost since the last run; the next run reports it. */
  stateLossNote?: string;
  /** Gone from the session: what its queued runs fail with. */
  removal?: Error;

  constructor(
    readonly id: string,
    readonly language: Language,
    readonly cwd: string = DATA_DIRECTORY,
    readonly env?: Record<string, string>,
  ) {}

  info(): ContextInfo {
    return { id: this.id, language: this.language, cwd: this.cwd, executionCount: this.executionCount };
  }

  /** Whether its kernel runs in `connection`'s sandbox now. */
  liveIn(connection: KernelConnection): boolean {
    return this.connection === connection && !this.exited && connection.alive;
  }

  /** A fresh kernel was started for it in `connection`'s sandbox. */
  started(connection: KernelConnection): void {
    this.connection = connection;
    this.exited = false;
    this.executionCount = 0;
  }

  takeStateLossNote(): string | undefined {
    const note = this.stateLossNote;
    this.stateLossNote = undefined;
    return note;
  }
}
