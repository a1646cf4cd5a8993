/**
 * How a lost state is worded: which state was lost (one context's, or every
 * context's when the whole sandbox was replaced) and what ended the kernel,
 * in words a user can act on.
 */
import type { SandboxExit } from '../backends/spec.js';
import type { ContextExitEvent } from './kernel-protocol.js';
import { DEFAULT_CONTEXT } from './languages.js';

/** The default context's loss, worded as it always was. */
const PYTHON_STATE_LOST = "the session's state (variables, imports) was lost. Files in /mnt/data were kept.";

export const EVERY_CONTEXT_LOST =
  'the state of every context (variables, imports) was lost. Files in /mnt/data were kept.';

/** What a sandbox's end takes with it, said after what ended it. */
export const SANDBOX_CONTENTS_ENDED = 'and every kernel and command in it with it';

/** "the state … was lost", for one context. */
export function stateLostIn(context: string): string {
  if (context === DEFAULT_CONTEXT) return PYTHON_STATE_LOST;
  return `the state of context ${JSON.stringify(context)} (variables, functions) was lost. Files in /mnt/data were kept.`;
}

export function describeExit(exit: SandboxExit): string {
  switch (exit.reason) {
    case 'out-of-memory':
      return 'killed for using more memory than its limit';
    case 'cpu-limit':
      return 'killed for using more CPU time than its limit';
    case 'killed':
      return 'killed';
    default:
      return exit.signal ? `killed by ${exit.signal}` : `exit code ${exit.code}`;
  }
}

/** A context's kernel's own end, as describeExit words a sandbox's. */
export function describeContextExit(event: ContextExitEvent, outOfMemory: boolean): string {
  if (outOfMemory) return describeExit({ code: event.code, signal: null, reason: 'out-of-memory' });
  if (event.signal === 'SIGXCPU') return describeExit({ code: event.code, signal: null, reason: 'cpu-limit' });
  return event.signal ? `killed by ${event.signal}` : `exit code ${event.code}`;
}

export function capitalize(text: string): string {
  return text.charAt(0).toUpperCase() + text.slice(1);
}
