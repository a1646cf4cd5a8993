/**
 * What a scripted kernel does when asked to execute code: a list of steps,
 * chosen per run by a function of the code or taken in order from a list
 * (vercel/ai's MockLanguageModelV3 takes its answers the same two ways).
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
  /** Waits until interrupted (then a KeyboardInterrupt ends the run); with `ignoreInterrupt`, forever. */
  | { type: 'hang'; ignoreInterrupt?: boolean }
  /**
   * Waits until `until()` holds, as code polling for a file the host writes
   * during the run; an interrupt cuts it short like `sleep`.
   */
  | { type: 'wait'; until: () => boolean }
  /** The whole sandbox ends, as a crash or an out-of-memory kill would end it. */
  | { type: 'exit'; reason?: SandboxExit['reason']; code?: number | null; signal?: NodeJS.Signals | null }
  /** Writes a raw line on the kernel's channel: a forged message (an object) or garbage (a string). */
  | { type: 'send'; line: string | Record<string, unknown> };

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
  /** Which kernel of the backend this is: 1 for the first one started, counting restarts. */
  kernelNumber: number;
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
