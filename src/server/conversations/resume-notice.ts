/**
 * What a conversation says when its session comes back from a pause: the
 * names the resume could not restore (a socket, a generator: what a snapshot
 * cannot keep) and what ran that was not kept (commands). Said to the user on
 * the next turn (`session-resumed`), and to the model in its context, so
 * neither goes on believing in a variable that is gone. Nothing is said when
 * everything came back.
 */
import type { NotRestoredName, SessionResumed } from '../../protocol/index.js';
import type { RestoreReport } from '../../session/session-state.js';

/** Names listed at most (the count says how many there were); the sandbox chose them, so they are bounded too. */
const MAX_LISTED = 50;
const MAX_NAMED_IN_MESSAGE = 10;
const MAX_TEXT_CHARS = 200;
/** The context python cells and the model's code run in. */
const DEFAULT_CONTEXT = 'python';

/** What did not come back, or undefined when everything did. */
export function resumeNotice(report: RestoreReport | undefined): SessionResumed | undefined {
  if (!report) return undefined;
  const skipped = report.contexts.flatMap((context) =>
    context.skipped.map(
      (skip): NotRestoredName => ({
        name: bounded(skip.name),
        reason: bounded(skip.reason),
        ...(context.id === DEFAULT_CONTEXT ? {} : { context: bounded(context.id) }),
      }),
    ),
  );
  const notKept = report.notKept.map((item) => ({ name: bounded(item.name), reason: bounded(item.reason) }));
  if (skipped.length === 0 && notKept.length === 0) return undefined;
  const sentences: string[] = [];
  if (skipped.length > 0) {
    const count = skipped.length === 1 ? '1 variable' : `${skipped.length} variables`;
    sentences.push(`${count} could not be restored: ${listed(skipped.map(describeName))}.`);
  }
  if (notKept.length > 0) {
    sentences.push(
      `Not kept from when it was paused: ${listed(notKept.map((item) => `${item.name} (${item.reason})`))}.`,
    );
  }
  return { skipped: skipped.slice(0, MAX_LISTED), notKept: notKept.slice(0, MAX_LISTED), message: sentences.join(' ') };
}

/** What the model is told after a resume that did not bring everything back. */
export function resumeNoteForModel(notice: SessionResumed): string {
  return (
    'Note: the session was paused and has resumed; its variables, imports and files came back, except: ' +
    `${notice.message} Those names no longer exist in the session: create them again before using them.`
  );
}

function describeName(name: NotRestoredName): string {
  return name.context ? `${name.name} (${name.reason}, in ${name.context})` : `${name.name} (${name.reason})`;
}

function listed(items: string[]): string {
  const shown = items.slice(0, MAX_NAMED_IN_MESSAGE).join(', ');
  return items.length > MAX_NAMED_IN_MESSAGE ? `${shown} and ${items.length - MAX_NAMED_IN_MESSAGE} more` : shown;
}

function bounded(text: string): string {
  const single = text.replace(/\s+/g, ' ').trim();
  return single.length > MAX_TEXT_CHARS ? `${single.slice(0, MAX_TEXT_CHARS)}…` : single;
}
