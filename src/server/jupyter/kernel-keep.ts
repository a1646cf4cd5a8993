/**
 * What a Jupyter kernel keeps with its session across a pause
 * (ManagedSession.keep, written into the paused record): its kernelspec, the
 * context it runs in, its execution count and `header.session`, the newest of
 * its history (`history_request`), and the notebook sessions (`/api/sessions`)
 * bound to it. So a kernel whose session
 * the server paused (idle, or a shutdown) is listed and found by its id, also
 * by a server started after a restart, and resumed at its next use with the
 * same count and the same notebook sessions. Read back through a schema: a
 * record that does not hold this shape is not a kernel this door can answer for.
 *
 * And what a resumed kernel says on its first execution: the names of its
 * context that did not come back (a socket, a generator), so nobody goes on
 * believing in a variable that is gone.
 */
import { z } from 'zod';
import type { RestoreReport } from '../../session/session-state.js';
import { KEPT_ENTRIES, KEPT_INPUT_CHARS } from './kernel-history.js';

/** Notebook sessions a kernel keeps at most (more are forgotten by a restart); the record stays small. */
export const MAX_KEPT_SESSIONS = 50;
const Text = z.string().max(1024);

export const KeptNotebookSession = z.object({
  id: z.string().min(1).max(64),
  path: Text,
  name: Text,
  type: z.string().max(64),
});
export type KeptNotebookSession = z.output<typeof KeptNotebookSession>;

export const KernelKeep = z.object({
  jupyter: z.literal(1),
  /** The kernelspec's name (`python3`, `javascript`, `python3-<environment>`). */
  spec: z.string().min(1).max(256),
  /** The session's context the kernel runs in. */
  context: z.string().min(1).max(256),
  executionCount: z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER),
  incarnation: z.number().int().positive().max(Number.MAX_SAFE_INTEGER),
  /** The kernel's `header.session`: the same kernel, to its clients, after a resume. */
  senderSession: z.string().min(1).max(256),
  /** ms since the epoch. */
  lastActivity: z.number().int().nonnegative().max(8.64e15),
  sessions: z.array(KeptNotebookSession).max(MAX_KEPT_SESSIONS),
  /** The newest of its history (`[session, line, input]`); absent in records of older versions. */
  history: z
    .array(
      z.tuple([
        z.number().int().positive().max(Number.MAX_SAFE_INTEGER),
        z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER),
        z.string().max(KEPT_INPUT_CHARS),
      ]),
    )
    .max(KEPT_ENTRIES)
    .optional(),
});
export type KernelKeep = z.output<typeof KernelKeep>;

/** The keep of a record or of a resumed session, if it is a Jupyter kernel's. */
export function readKernelKeep(keep: Record<string, unknown> | undefined): KernelKeep | undefined {
  const parsed = KernelKeep.safeParse(keep);
  return parsed.success ? parsed.data : undefined;
}

/** Names listed at most (the count says how many there were); the sandbox chose them, so they are bounded too. */
const MAX_NAMED = 10;
const MAX_NAME_CHARS = 200;

/**
 * What the first execution after a resume says on stderr, or undefined when everything of the
 * kernel's context came back (other contexts of the session are not the kernel's to report).
 */
export function resumeNotice(report: RestoreReport | undefined, contextId: string): string | undefined {
  if (!report) return undefined;
  const skipped = report.contexts
    .filter((context) => context.id === contextId)
    .flatMap((context) => context.skipped.map((skip) => `${bounded(skip.name)} (${bounded(skip.reason)})`));
  const notKept = report.notKept.map((item) => `${bounded(item.name)} (${bounded(item.reason)})`);
  if (skipped.length === 0 && notKept.length === 0) return undefined;
  const sentences = ['This kernel was paused and has resumed; its variables and files came back, except:'];
  if (skipped.length > 0) {
    const count = skipped.length === 1 ? '1 variable' : `${skipped.length} variables`;
    sentences.push(`${count} could not be restored: ${listed(skipped)}. Run the cells that made them again.`);
  }
  if (notKept.length > 0) sentences.push(`Not kept from when it was paused: ${listed(notKept)}.`);
  return `${sentences.join(' ')}\n`;
}

function listed(items: string[]): string {
  const shown = items.slice(0, MAX_NAMED).join(', ');
  return items.length > MAX_NAMED ? `${shown} and ${items.length - MAX_NAMED} more` : shown;
}

function bounded(text: string): string {
  const single = text.replace(/\s+/g, ' ').trim();
  return single.length > MAX_NAME_CHARS ? `${single.slice(0, MAX_NAME_CHARS)}…` : single;
}
