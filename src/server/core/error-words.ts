/**
 * The words each front door gives sandcell's errors. What a wire answers (an
 * HTTP status, a Connect code) is the wire's business, kept in one table keyed
 * by the error code (http/error-statuses.ts); what a message tells its reader
 * to do is the door's: its routes, tools, calls or flags. A door brings its own
 * `DoorWords`, and `messageFor` says any of sandcell's errors in them.
 */
import {
  type SandcellError,
  type SandcellErrorCode,
  TooManyCommandsError,
  TooManyContextsError,
  UnknownContextError,
} from '../../errors.js';
import { LimitExceededError, type LimitName } from './errors.js';

export interface DoorWords {
  /** What lifts each of the server's limits, said after the limit's own message; every door words every limit. */
  readonly limitHints: Readonly<Record<LimitName, string>>;
  /** A hint said after an error's own message, by its code: the way on that this door offers. */
  readonly hints?: Readonly<Partial<Record<SandcellErrorCode, string>>>;
  /** Said instead of a closed session's message, which names the library's createSession(). */
  readonly sessionClosed?: string;
  /**
   * Said instead of the session layer's refusals of contexts and commands, whose
   * messages name library calls (session.createContext(), `maxContexts`).
   */
  readonly unknownContext?: (context: string) => string;
  readonly tooManyContexts?: (maxContexts: number) => string;
  readonly tooManyCommands?: (maxCommands: number) => string;
}

/** The message a door's reader sees for `error`: the door's own words where it has them, else the error's. */
export function messageFor(error: SandcellError, words: DoorWords): string {
  if (error instanceof LimitExceededError) return `${error.message} ${words.limitHints[error.limit]}`;
  if (error instanceof UnknownContextError && words.unknownContext) return words.unknownContext(error.context);
  if (error instanceof TooManyContextsError && words.tooManyContexts) return words.tooManyContexts(error.maxContexts);
  if (error instanceof TooManyCommandsError && words.tooManyCommands) return words.tooManyCommands(error.maxCommands);
  if (error.code === 'session-closed' && words.sessionClosed !== undefined) return words.sessionClosed;
  const hint = words.hints?.[error.code];
  return hint ? `${error.message} ${hint}` : error.message;
}
