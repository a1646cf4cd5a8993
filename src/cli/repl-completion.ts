/** Tab at `sandcell repl`'s prompt: the kernel's own completion (IPython's, bash's compgen, R's…) of what is typed. */
import { codePointLength } from '../session/assist-replies.js';
import type { Session } from '../session/session.js';

/** Past this Tab gives up and completes nothing: the prompt must not hang on a slow kernel. */
const COMPLETION_TIMEOUT_MS = 5_000;
/** Tab at the start of a line indents, as Python's own prompt does. */
const INDENT = '    ';

export interface ReplCompleterOptions {
  session: Session;
  context: string;
  /** The lines of the block typed so far, before the current one: the kernel completes in their light. */
  earlierLines: () => string[];
  /** Code is running: the kernel would answer only after it (an input() prompt waits on the user), so Tab does nothing. */
  busy: () => boolean;
}

/** A readline completer: the text before the cursor → the candidates and the text they replace. */
export function replCompleter(options: ReplCompleterOptions): (line: string) => Promise<[string[], string]> {
  const { session, context } = options;
  return async (line) => {
    if (line.trim() === '') return [[INDENT], ''];
    if (options.busy()) return [[], line];
    const before = options
      .earlierLines()
      .map((earlier) => `${earlier}\n`)
      .join('');
    const code = before + line;
    let timer: NodeJS.Timeout | undefined;
    const completion = await Promise.race([
      session.complete(code, codePointLength(code), { context }),
      new Promise<undefined>((resolve) => {
        timer = setTimeout(() => resolve(undefined), COMPLETION_TIMEOUT_MS);
      }),
    ])
      .catch(() => undefined)
      .finally(() => clearTimeout(timer));
    // Only a span of the current line can be replaced at the prompt.
    const start = completion ? completion.cursorStart - codePointLength(before) : -1;
    if (!completion || start < 0) return [[], line];
    return [completion.matches, Array.from(line).slice(start).join('')];
  };
}
