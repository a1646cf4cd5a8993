/**
 * What a scripted kernel does when asked to execute code, and what a scripted
 * command does: a list of steps, chosen per run by a function of the code (or
 * command line) or, for runs, taken in order from a list (vercel/ai's
 * MockLanguageModelV3 takes its answers the same two ways).
 */
import type { SandboxExit } from '../spec.js';
import type { ScriptedFileStore } from './file-store.js';

/** One thing the kernel does during a run, in order. */
export type ScriptedStep =
  /** Writes to the run's stdout or stderr. */
  | { type: 'stdout' | 'stderr'; text: string }
  /** The value of the last expression (`result`) or a display() call (`display`), as a MIME bundle. */
  | { type: 'result' | 'display'; data: Record<string, unknown>; metadata?: Record<string, unknown> }
  /** An error in the user's code; the run ends with status `error`. */
  | { type: 'error'; name: string; value: string; traceback?: string[] }
  /** Waits; an interrupt cuts it short with a KeyboardInterrupt, like `time.sleep`. */
  | { type: 'sleep'; ms: number }
  /**
   * Waits until interrupted (then a KeyboardInterrupt ends the run); with `ignoreInterrupt`, until
   * its kernel is restarted; with `stallRestart` too, forever, and a restart of its context is
   * never answered (a stuck sandbox).
   */
  | { type: 'hang'; ignoreInterrupt?: boolean; stallRestart?: boolean }
  /**
   * Waits until `until()` holds, as code polling for a file the host writes
   * during the run; an interrupt cuts it short like `sleep`.
   */
  | { type: 'wait'; until: () => boolean }
  /**
   * The code asks its interpreter to exit with `status` (Python's sys.exit, bash's exit): the run
   * stops here and its end carries `exitStatus`; the kernel and its state stay. (Python's error for
   * a status other than 0 is an `error` step before it.)
   */
  | { type: 'exit-status'; status: number }
  /** The whole sandbox ends, as a crash or an out-of-memory kill of the supervisor would end it. */
  | { type: 'exit'; reason?: SandboxExit['reason']; code?: number | null; signal?: NodeJS.Signals | null }
  /**
   * This context's kernel alone ends (the supervisor reports `context-exit`); with `outOfMemory`,
   * the sandbox's OOM-kill counter counts it, as a memory cgroup would.
   */
  | { type: 'kernel-exit'; code?: number | null; signal?: NodeJS.Signals | null; outOfMemory?: boolean }
  /**
   * Writes a line: by default raw on the sandbox's channel (code that reached the supervisor's
   * channel: garbage as a string, or a forged message); `from: 'kernel'` sends an object as this
   * context's kernel would, the supervisor adding the context's id as its last key.
   */
  | { type: 'send'; line: string | Record<string, unknown>; from?: 'channel' | 'kernel' }
  /**
   * Asks the host for a line, as input() does when the run has `onInput` (`input-request`), and
   * writes the answer to stdout; a cancelled answer is an EOFError, an interrupt a KeyboardInterrupt.
   * Without `onInput` it is an EOFError at once, as reading an empty stdin is.
   */
  | { type: 'input'; prompt?: string; password?: boolean };

export interface ScriptedRunContext {
  code: string;
  /** The id the host gave this run: forged messages (`send` steps) carry it to reach the run. */
  executionId: unknown;
  /** This run's number (In [n]); it restarts at 1 in a new kernel and after a reset. */
  executionCount: number;
  /** The kernel's variables: empty in each new kernel, cleared by a reset. */
  state: Map<string, unknown>;
  /** The session's /mnt/data; it outlives kernel restarts. */
  files: ScriptedFileStore;
  /** Which kernel of the backend this is: 1 for the first one started, counting every context's and restarts. */
  kernelNumber: number;
  /** The id of the context the run is in (`python` by default). */
  contextId: string;
  /** That context's language. */
  language: string;
  /** That context's working directory (`/mnt/data` unless it was created with another). */
  cwd: string;
}

export type ScriptedRun = (context: ScriptedRunContext) => ScriptedStep[] | Promise<ScriptedStep[]>;

/**
 * A function answering each run, or the runs of the whole backend in order
 * (across sessions and restarts). A run past the end of the list ends with a
 * `ScriptExhausted` error, so an unexpected run cannot pass unnoticed.
 */
export type ExecuteScript = ScriptedRun | ScriptedStep[][];

/** By default every run succeeds and prints nothing. */
const SILENT_RUN: ScriptedRun = () => [];

export function scriptRunner(script: ExecuteScript | undefined): ScriptedRun {
  if (script === undefined) return SILENT_RUN;
  if (typeof script === 'function') return script;
  let next = 0;
  return () => {
    const steps = script[next++];
    if (steps) return steps;
    return [
      {
        type: 'error',
        name: 'ScriptExhausted',
        value: `The script has ${script.length} runs; run ${next} was not expected.`,
      },
    ];
  };
}

/** One thing a scripted command does, in order; with no `exit` step it ends with status 0. */
export type ScriptedCommandStep =
  | { type: 'stdout' | 'stderr'; text: string }
  | { type: 'sleep'; ms: number }
  /** Waits until a signal ends the command. */
  | { type: 'hang' }
  /** Copies everything written to its stdin to its stdout, until end of file. */
  | { type: 'echo-stdin' }
  | { type: 'exit'; code: number }
  /** The whole sandbox ends, as if the command had taken it down. */
  | { type: 'crash-sandbox' }
  /** As the first step: the command cannot start (a working directory that is not there: `invalid-cwd`). */
  | { type: 'refuse-start'; code: string; message: string };

export interface ScriptedCommandContext {
  command: string;
  cwd?: string;
  env?: Record<string, string>;
  /** The session's /mnt/data. */
  files: ScriptedFileStore;
}

/** What each command does. @default every command ends with status 0 and prints nothing */
export type CommandScript = (context: ScriptedCommandContext) => ScriptedCommandStep[] | Promise<ScriptedCommandStep[]>;
