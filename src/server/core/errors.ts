/**
 * What the server's core refuses: the registry, the rate limiter, the
 * conversation store and the conversation throw these. They say what happened
 * and nothing about the protocol that asked: their HTTP status and
 * `Retry-After` are in one table keyed by the code (http/error-statuses.ts),
 * and each front door says them in its own words (core/error-words.ts: the
 * flag, route or tool that is the way on).
 */
import { SandcellError } from '../../errors.js';

/**
 * The server's limits, by the name an operator knows them by: each front door
 * says which flag, variable or action lifts them.
 */
export type LimitName =
  /** Live sessions one key (or the single local user) may hold. */
  | 'sessions-per-key'
  /** Live sessions on the whole server. */
  | 'server-sessions'
  /** Executions that may wait in one session behind the running one. */
  | 'queued-executions'
  /** Executions and uploads one key may start per minute. */
  | 'executions-per-minute'
  /** The size of one execution's code. */
  | 'code-bytes'
  /** What one key's snapshots (paused sessions' included) may take in the store. */
  | 'snapshot-bytes'
  /** Terminals one key may hold open across its sessions. */
  | 'terminals-per-key';

/** A limit refused the request; `retryAfterMs` says when trying again may work (absent: not by waiting). */
export class LimitExceededError extends SandcellError {
  constructor(
    readonly limit: LimitName,
    message: string,
    readonly retryAfterMs?: number,
  ) {
    super('limit-exceeded', message);
  }
}

/** The server is shutting down: it takes no new work, and work cut short by it ends with this. */
export class ShuttingDownError extends SandcellError {
  constructor(message = 'The server is shutting down.') {
    super('shutting-down', message);
  }
}

/** What a client asked for does not exist for it (another key's is "not found" too). */
export class NotFoundError extends SandcellError {
  constructor(
    readonly what: 'session' | 'conversation' | 'approval',
    message: string,
  ) {
    super('not-found', message);
  }
}

export class SessionNotFoundError extends NotFoundError {
  constructor(id: string) {
    super('session', `No session ${JSON.stringify(id)} (it may have been closed after idling).`);
  }
}

export class ConversationNotFoundError extends NotFoundError {
  constructor(id: string) {
    super('conversation', `No conversation ${JSON.stringify(id)} (it may have been deleted, or the server restarted).`);
  }
}

export class ApprovalNotFoundError extends NotFoundError {
  constructor(id: string) {
    super('approval', `No pending approval ${JSON.stringify(id)} here.`);
  }
}

/** The approval was answered already (or declined when its turn was stopped). */
export class ApprovalDecidedError extends SandcellError {
  constructor(id: string) {
    super('approval-decided', `The approval ${id} was already answered.`);
  }
}

/**
 * The session is another server's: one sharing this server's store claimed it first to resume
 * it, or it is live there (its marker names that server). Requests for it go to that server.
 */
export class SessionElsewhereError extends SandcellError {
  constructor(id: string, node?: string) {
    super(
      'session-elsewhere',
      node === undefined
        ? `The paused session ${JSON.stringify(id)} is being resumed by another server that shares this server's store; it lives there now.`
        : `The session ${JSON.stringify(id)} was last live on the server ${JSON.stringify(node)}, which shares this server's store: send its requests there (if that server stopped without pausing it, its state is gone).`,
    );
  }
}

/** A turn is still running in the conversation: one runs at a time. */
export class ConversationBusyError extends SandcellError {
  constructor() {
    super('conversation-busy', 'A turn is still running in this conversation; wait for it to end or cancel it.');
  }
}

/** The conversation's session ended: its history stays readable, its variables and files are gone. */
export class ConversationExpiredError extends SandcellError {
  constructor(howItEnded: string) {
    super(
      'conversation-expired',
      `This conversation's session ${howItEnded}; its variables and files are gone. Start a new conversation (the history can still be read and exported).`,
    );
  }
}

/** The conversation's session was paused between its resume and the turn (an upload's body outlasted the idle timeout). */
export class ConversationPausedError extends SandcellError {
  constructor() {
    super(
      'conversation-paused',
      "This conversation's session was paused just now; send the request again to resume it.",
    );
  }
}

/** Only a conversation whose session is gone is continued in a new one. */
export class ConversationActiveError extends SandcellError {
  constructor() {
    super('conversation-active', 'This conversation still has its session: send your question or cell to it.');
  }
}

/** A question for the model, on a server started without one. */
export class ModelNotConfiguredError extends SandcellError {
  constructor() {
    super('model-not-configured', 'This server has no model; notebook cells work without one.');
  }
}
