/**
 * E2B's code contexts as sandcell's: an E2B context is a context of the sandbox's session, its id
 * the session's context id. A run names a context (`context_id`) or a language (that language's
 * default context, made on first use), never both; neither is the default Python context. E2B's
 * working directory is `/home/user`, which the sandbox binds to the session's files: sandcell's
 * default contexts work in `/mnt/data`, the same directory, and are listed as in `/home/user`.
 */
import { posix } from 'node:path';
import { InvalidInputError, UnknownContextError } from '../../errors.js';
import { LANGUAGES, type Language, parseLanguage } from '../../session/languages.js';
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
