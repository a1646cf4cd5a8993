/**
 * E2B's code contexts as sandcell's: an E2B context is a context of the sandbox's session, its id
 * the session's context id. A run names a context (`context_id`) or a language (that language's
 * default context, made on first use), never both; neither is the default Python context. E2B's
 * working directory is `/home/user`, which the sandbox binds to the session's files: new contexts
 * start there, and sandcell's default contexts (started in `/mnt/data`, the same files) move there
 * on their first run.
 */
import { posix } from 'node:path';
import { InvalidInputError, UnknownContextError } from '../../errors.js';
import { isLanguage, LANGUAGES, type Language, parseLanguage } from '../../session/languages.js';
import type { ContextInfo } from '../../session/session-context.js';

/** A context as E2B's SDKs read it (`Context` in both). */
export interface E2bContext {
  id: string;
  language: Language;
  cwd: string;
}

/** Where an E2B sandbox's user works (its HOME and the default working directory). */
export const E2B_HOME = '/home/user';
const SANDCELL_DATA = '/mnt/data';

/** The names E2B's server accepts beside sandcell's: `js`, `ts`, any case, spaces around. */
export function e2bLanguage(value: unknown): Language {
  if (value === undefined || value === null || value === '') return 'python';
  if (typeof value !== 'string') throw new InvalidInputError('`language` must be a string.');
  const name = value.trim().toLowerCase();
  const aliases: Record<string, Language> = { js: 'javascript', ts: 'typescript' };
  try {
    return aliases[name] ?? parseLanguage(name);
  } catch {
    throw new InvalidInputError(
      `This sandbox runs ${LANGUAGES.join(', ')} (and js, ts); it has no ${JSON.stringify(value.slice(0, 40))} context.`,
    );
  }
}

/**
 * What `/execute` runs in, as `session.run` options. `contexts` are the session's now: an id it
 * does not have is refused here, before the answer starts streaming.
 */
export function executionTarget(
  request: { context_id?: unknown; language?: unknown },
  contexts: readonly ContextInfo[],
): { context: string; language: Language } | { language: Language } {
  const contextId = request.context_id ?? undefined;
  const language = request.language ?? undefined;
  if (contextId !== undefined && language !== undefined) {
    throw new InvalidInputError(
      'Give `context_id` or `language`, not both (E2B: "Only one of context_id or language can be provided").',
    );
  }
  if (contextId === undefined) return { language: e2bLanguage(language) };
  if (typeof contextId !== 'string') throw new InvalidInputError('`context_id` must be a string.');
  const context = contexts.find((candidate) => candidate.id === contextId);
  if (!context)
    throw new UnknownContextError(contextId, `Context ${JSON.stringify(contextId.slice(0, 80))} not found.`);
  return { context: context.id, language: context.language };
}

/** E2B's path for a sandcell one: `/mnt/data/x` is `/home/user/x`. */
export function e2bPath(path: string): string {
  if (path === SANDCELL_DATA || path.startsWith(`${SANDCELL_DATA}/`))
    return E2B_HOME + path.slice(SANDCELL_DATA.length);
  return path;
}

/** A new context's working directory: as given, a relative one under /home/user (the sandbox binds it to the session's files). */
export function contextDirectory(cwd: string): string {
  return posix.resolve(E2B_HOME, cwd);
}

export function presentContext(context: ContextInfo): E2bContext {
  return { id: context.id, language: context.language, cwd: e2bPath(context.cwd) };
}

/** Code that moves a kernel to /home/user, in its language, showing nothing. */
export function homeSnippet(language: Language): string {
  switch (language) {
    case 'python':
      return `__import__('os').chdir(${JSON.stringify(E2B_HOME)})`;
    case 'javascript':
    case 'typescript':
      return `process.chdir(${JSON.stringify(E2B_HOME)});\nvoid 0;`;
    case 'bash':
      return `cd ${E2B_HOME}`;
    case 'r':
      return `invisible(setwd(${JSON.stringify(E2B_HOME)}))`;
  }
}

/**
 * Which default contexts of each sandbox already work in /home/user. sandcell starts them in
 * /mnt/data (the python one before the sandbox is even created, in the warm pool); the first run
 * in each moves it, and a restart or a lost kernel puts it back in /mnt/data.
 */
export class DefaultContextHomes {
  private readonly moved = new WeakMap<object, Set<string>>();

  /** Whether `context` (a default context, named by its language) still has to move; it is counted as moved from now on. */
  claim(sandbox: object, context: string): boolean {
    if (!isLanguage(context)) return false;
    const moved = this.moved.get(sandbox) ?? new Set<string>();
    this.moved.set(sandbox, moved);
    if (moved.has(context)) return false;
    moved.add(context);
    return true;
  }

  forget(sandbox: object, context: string): void {
    this.moved.get(sandbox)?.delete(context);
  }
}
