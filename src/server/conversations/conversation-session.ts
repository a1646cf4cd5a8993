/**
 * A conversation's session over its lifetime. Bound to it (session-binding.ts: the chat, the file
 * agent, the cell's file watcher); paused (idle, or by a server that stops) and resumed under the
 * same id before the next turn, bound anew, with what did not come back kept to be said (to the
 * model at once, to the user at the start of that turn); gone for good (deleted, closed, its state
 * not kept), which expires the conversation; and let go of when the conversation is deleted.
 */
import type { Logger } from 'pino';
import type { DataChat } from '../../agents/data-chat.js';
import type { AgentEventListener } from '../../agents/events.js';
import type { FileAccessAgent } from '../../agents/file-access-agent.js';
import type { ChatModel } from '../../agents/model.js';
import type { ApprovalDecision, ApprovalRequest } from '../../agents/python-exec-agent.js';
import type { SessionResumed, Turn } from '../../protocol/index.js';
import type { FileChanges } from '../../session/file-changes.js';
import type { Session } from '../../session/session.js';
import type { Owner } from '../core/auth.js';
import { ConversationExpiredError, ConversationPausedError } from '../core/errors.js';
import type { ManagedSession, PausedRecord } from '../core/managed-session.js';
import type { PublishedFile } from '../core/output-publisher.js';
import type { SessionRegistry } from '../core/registry.js';
import { resumeNoteForModel, resumeNotice } from './resume-notice.js';
import {
  type BoundSession,
  bindSession,
  describeExpiry,
  type Expiry,
  goneBecause,
  resumable,
} from './session-binding.js';

export interface ConversationSessionOptions {
  registry: SessionRegistry;
  logger: Logger;
  /** The server's model; without one no chat is bound. */
  model?: ChatModel | undefined;
  conversationId: string;
  owner: Owner;
  /** The id of its session: the same across pauses and resumes (and restarts, from the journal). */
  sessionId: string;
  /** Gone already: a conversation read back whose session did not survive (restoredExpiry). */
  expiry?: Expiry | undefined;
  /** The conversation's history: told to a model with no chat before it (read back after a restart). */
  turns: () => readonly Turn[];
  approve: (request: ApprovalRequest) => Promise<ApprovalDecision>;
  onEvent: AgentEventListener;
  onPublished: (files: PublishedFile[]) => void;
  /** The session is gone: a turn waiting for an approval would otherwise wait forever. */
  onExpired: () => void;
}

/**
 * Why the session of a conversation read back from disk is gone, or undefined when it is not: a
 * record with a snapshot (the server that stopped paused it) is resumed at the next turn; one that
 * says the session was lost (its pause failed, the server was killed), or none (it had ended), is not.
 */
export function restoredExpiry(paused: PausedRecord | undefined): Expiry | undefined {
  if (paused?.snapshotId !== undefined) return undefined;
  return paused?.lost
    ? { at: Date.parse(paused.pausedAt) || Date.now(), reason: 'lost', detail: paused.lost }
    : { at: Date.now(), reason: 'restart' };
}

export class ConversationSession {
  readonly id: string;
  /** The session it runs on now (closed when it was paused); none for one read back until it resumes. */
  private current?: ManagedSession;
  /** What is bound to `current`. */
  private bound?: BoundSession;
  private expiry?: Expiry;
  /** The resume under way: two requests at once share it. */
  private resuming?: Promise<void>;
  /** What the last resume did not bring back, said at the start of the next turn. */
  private notice?: SessionResumed;

  constructor(private readonly options: ConversationSessionOptions) {
    this.id = options.sessionId;
    if (options.expiry) this.expiry = options.expiry;
  }

  /** The session it runs on now, if it has one bound (closed when it was paused: its next turn resumes it). */
  get entry(): ManagedSession | undefined {
    return this.current;
  }

  /** The chat on the session, with a model. */
  get chat(): DataChat | undefined {
    return this.bound?.chat;
  }

  get fileAgent(): FileAccessAgent | undefined {
    return this.bound?.fileAgent;
  }

  /** The watcher of the files a cell writes. */
  get cellFiles(): FileChanges | undefined {
    return this.bound?.cellFiles;
  }

  /** Its session while it is live (not paused, not gone). */
  get live(): Session | undefined {
    const entry = this.current;
    return entry && !this.expired && !entry.session.closed && !entry.pausing ? entry.session : undefined;
  }

  /**
   * Set once the session is gone: the history stays, the state does not. A session paused (idle, or
   * by a server that stopped) is not gone: the next turn resumes it.
   */
  get expired(): Expiry | undefined {
    const entry = this.current;
    if (!this.expiry && entry?.session.closed && !resumable(entry)) {
      const at = entry.closedAt ?? Date.now();
      if (entry.closedReason === 'pause-failed') {
        this.expire({ at, reason: 'lost' });
        // The record says why; the next read of the conversation says it too.
        void this.options.registry.pauses
          .find(this.options.owner, this.id)
          .then((record) => {
            if (record?.lost && this.expiry?.reason === 'lost') this.expiry.detail ??= record.lost;
          })
          .catch(() => undefined);
      } else {
        this.expire({ at, reason: entry.closedReason ?? 'closed' });
      }
    }
    return this.expiry;
  }

  private expire(expiry: Expiry): void {
    this.expiry ??= expiry;
    this.options.onExpired();
  }

  /**
   * The session, while it is live: refused when it is gone, or paused (between `ensure` and a turn,
   * an upload's body took longer than the idle timeout).
   */
  available(): ManagedSession {
    const expired = this.expired;
    if (expired) throw new ConversationExpiredError(describeExpiry(expired));
    const entry = this.current;
    if (!entry || entry.session.closed || entry.pausing) throw new ConversationPausedError();
    return entry;
  }

  /** What the last resume did not bring back, once: the turn that takes it says it. */
  takeNotice(): SessionResumed | undefined {
    const notice = this.notice;
    this.notice = undefined;
    return notice;
  }

  /**
   * Makes sure there is a live session: a paused one is resumed (in this process, or after a restart
   * from the id the journal keeps) and everything bound to the old session is bound to the new one.
   * A session that is gone expires the conversation. Any other failure (a limit, a sandbox that does
   * not start) is thrown, and the session stays resumable.
   */
  async ensure(): Promise<void> {
    if (this.expired) return;
    const entry = this.current;
    if (entry && !entry.session.closed && !entry.pausing) return;
    this.resuming ??= this.resume().finally(() => {
      this.resuming = undefined;
    });
    await this.resuming;
  }

  private async resume(): Promise<void> {
    const { registry, logger, owner, conversationId } = this.options;
    let entry: ManagedSession;
    try {
      entry = await registry.open(owner, this.id);
    } catch (error) {
      const gone = goneBecause(error, this.current !== undefined);
      if (!gone) throw error;
      logger.info(
        { conversation: conversationId, session: this.id, reason: gone.reason, detail: gone.detail },
        'the session of a conversation is gone',
      );
      this.expire(gone);
      return;
    }
    if (entry === this.current) return; // its pause was refused (code still running): it is live as it was
    await this.bind(entry);
    const notice = resumeNotice(entry.restored);
    logger.info(
      { conversation: conversationId, session: entry.id, notRestored: notice?.skipped.length ?? 0 },
      'the session of a conversation resumed',
    );
    if (notice) {
      this.notice = notice;
      this.chat?.pythonAgent.addContext(resumeNoteForModel(notice));
    }
  }

  /** Binds the conversation to `entry` (session-binding.ts): the chat, the file agent, the cell's file watcher. */
  async bind(entry: ManagedSession): Promise<void> {
    const { options } = this;
    const bound = await bindSession(entry, {
      registry: options.registry,
      logger: options.logger,
      model: options.model,
      conversationId: options.conversationId,
      previous: this.chat,
      turns: options.turns(),
      approve: options.approve,
      onEvent: options.onEvent,
      onPublished: options.onPublished,
    });
    this.current = entry;
    this.bound = bound;
  }

  /** Lets go of the session, the conversation being deleted: a live one closes, a paused one is deleted. */
  async close(): Promise<void> {
    if (this.expired) return;
    const { registry, logger, owner, conversationId } = this.options;
    const entry = this.current;
    if (entry?.pausing) await entry.pausing.catch(() => undefined);
    if (entry && !entry.session.closed) {
      await registry.remove(entry, 'deleted');
      return;
    }
    // Paused, or resumed meanwhile by another request (/v1/sessions/{id}/files).
    const live = registry.find(owner, this.id);
    if (live) {
      await registry.remove(live, 'deleted');
      return;
    }
    await registry.pauses.remove(owner, this.id).catch((error: unknown) => {
      logger.warn({ err: error, conversation: conversationId, session: this.id }, 'cannot delete a paused session');
    });
  }
}
