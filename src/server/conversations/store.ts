/**
 * The server's conversations, each owned by one API key like the sessions
 * they run on. A conversation whose session ended (idle timeout, deleted,
 * shutdown) stays readable as expired for a while, so its history can still
 * be read and exported; the oldest expired ones are dropped first. All of a
 * key's histories together stay within `limits.keyBytes`: the least recently
 * updated conversations lose their oldest outputs first, then their oldest
 * turns (history-limits.ts says why).
 *
 * A conversation whose session was paused (idle, or by a server that stopped)
 * is not expired: its next turn resumes the session. Paused ones count with
 * the expired ones against those bounds (a conversation dropped for them takes
 * its paused session with it).
 *
 * With a state directory, every history is also on disk (conversation-journal.ts
 * writes it as it happens) and is read back when the server starts: those whose
 * sessions the stopping server paused go on where they were at their next turn;
 * the others (a server killed, a session that had ended) are read-only until
 * the user continues one in a new conversation.
 */
import { readFile } from 'node:fs/promises';
import type { ConversationSummary } from '../../protocol/index.js';
import type { VolumeMount } from '../../session/options.js';
import type { Owner } from '../core/auth.js';
import { ConversationActiveError, ConversationNotFoundError } from '../core/errors.js';
import { type ConversationSettings, ServerConversation } from './conversation.js';
import { ConversationJournal } from './conversation-journal.js';
import type { ConversationHandover } from './handover.js';
import { DEFAULT_HISTORY_LIMITS, MAX_CONVERSATION_HISTORY_BYTES } from './history-limits.js';
import {
  historyFile,
  ownerDirectory,
  prepareStateDirectory,
  readStoredHistories,
  readStoredHistory,
  type StoredHistory,
  writeStoredHistory,
} from './state-directory.js';

/** Expired conversations kept per key, and for how long (in memory only). */
export const MAX_EXPIRED_PER_OWNER = 50;
export const EXPIRED_RETENTION_MS = 24 * 60 * 60_000;
/** With a state directory, expired conversations are history the user keeps: more of them, for as long as there is room. */
export const MAX_STORED_PER_OWNER = 200;
/**
 * A history file is at most about three times its history (conversation-journal.ts rewrites it then);
 * measured against the largest bound there is, so lowering the bound does not lose older files.
 */
export const MAX_HISTORY_FILE_BYTES = 4 * MAX_CONVERSATION_HISTORY_BYTES + 8 * 1024 * 1024;

export class ConversationStore {
  private readonly byId = new Map<string, ServerConversation>();
  private readonly takingUp = new Map<string, Promise<ServerConversation | undefined>>();
  private handover?: ConversationHandover;
  /** Where histories are kept across restarts; without one they live in memory only. */
  private stateDirectory?: string;

  constructor(readonly settings: ConversationSettings) {}

  /**
   * Keeps histories in `directory` from now on, and reads back those kept
   * there (before the server takes requests). Throws InvalidInputError when
   * the directory cannot be written.
   */
  async keepOnDisk(directory: string): Promise<void> {
    const { settings } = this;
    await prepareStateDirectory(directory);
    this.stateDirectory = directory;
    const owners = new Map<string, Owner>();
    for (const history of await readStoredHistories(directory, MAX_HISTORY_FILE_BYTES, settings.logger)) {
      const ownerId = history.header.ownerId;
      const owner = owners.get(ownerId) ?? { id: ownerId, label: `restored ${ownerId.slice(0, 12)}` };
      owners.set(ownerId, owner);
      await this.adopt(history, owner);
    }
    for (const owner of owners.values()) {
      this.keepOwnerWithinLimit(owner);
      this.prune(owner);
    }
    settings.logger.info({ stateDirectory: directory, conversations: this.byId.size }, 'conversations read back');
  }

  /** A history read from a file into a conversation of this store: the journal goes on writing that file. */
  private async adopt(history: StoredHistory, owner: Owner): Promise<ServerConversation> {
    const { settings } = this;
    const limits = settings.limits ?? DEFAULT_HISTORY_LIMITS;
    // Paused by the server that stopped (or idle before): its next turn resumes it.
    const paused = await settings.registry.pauses.find(owner, history.header.sessionId).catch((error: unknown) => {
      settings.logger.warn(
        { err: error, conversation: history.header.id },
        'cannot read the paused session of a conversation',
      );
      return undefined;
    });
    const conversation = ServerConversation.restore(history, owner, this.conversationSettings(), paused);
    conversation.journal = new ConversationJournal(history.file, conversation, settings.logger, {
      bytes: history.bytes,
      images: history.images.keys(),
    });
    // A torn or damaged file is written clean, so nothing is ever appended after a torn line.
    if (history.torn || history.skipped > 0) conversation.journal.rewrite();
    // The bound may have been lowered since it was written.
    if (conversation.historyBytes > limits.historyBytes) {
      conversation.dropOutputs(limits.historyBytes);
      conversation.dropTurns(limits.historyBytes);
    }
    this.byId.set(conversation.id, conversation);
    return conversation;
  }

  /**
   * In a cluster: where a draining node hands its histories over (handover.ts), and where this one
   * takes up those of nodes that went. Needs a state directory (keepOnDisk) to take any up.
   */
  handOverThrough(handover: ConversationHandover): void {
    this.handover = handover;
  }

  /** Whether this store holds the conversation (in a cluster, a request for it is answered here). */
  holds(id: string): boolean {
    return this.byId.has(id);
  }

  /**
   * The owner's conversation, taken up from the store when a node that went handed it over; another
   * owner's is "not found" too.
   */
  async find(owner: Owner, id: string): Promise<ServerConversation> {
    if (this.byId.has(id)) return this.get(owner, id);
    let taking = this.takingUp.get(id);
    if (!taking) {
      taking = this.takeUp(owner, id).finally(() => this.takingUp.delete(id));
      this.takingUp.set(id, taking);
    }
    const taken = await taking;
    if (!taken) throw new ConversationNotFoundError(id);
    return this.get(owner, id);
  }

  private async takeUp(owner: Owner, id: string): Promise<ServerConversation | undefined> {
    const { handover, stateDirectory } = this;
    if (!handover || stateDirectory === undefined) return undefined;
    const bytes = await handover.take(owner.id, id);
    if (!bytes) return undefined;
    const file = await writeStoredHistory(stateDirectory, owner.id, id, bytes);
    const history = await readStoredHistory(file, MAX_HISTORY_FILE_BYTES, this.settings.logger);
    if (!history) return undefined;
    const conversation = await this.adopt(history, owner);
    await handover.remove(owner.id, id);
    this.keepOwnerWithinLimit(owner);
    this.settings.logger.info({ conversation: id, owner: owner.label }, 'conversation taken up from the store');
    return conversation;
  }

  /**
   * A drain's end, in a cluster: every history this store keeps goes to the store (handover.ts), and
   * its file and conversation here go; the node a request for one reaches next takes it up. One that
   * could not be handed over stays here, for this node's return, and is said.
   */
  async handOver(): Promise<void> {
    const { handover } = this;
    if (!handover) return;
    this.shutdown();
    for (const conversation of [...this.byId.values()]) {
      const journal = conversation.journal;
      if (!journal) continue;
      try {
        await journal.flushed();
        await handover.put(conversation.owner.id, conversation.summary(), await readFile(journal.file));
        this.byId.delete(conversation.id);
        await journal.delete();
      } catch (error) {
        this.settings.logger.warn(
          { conversation: conversation.id, error: (error as Error).message },
          'could not hand a conversation over to the store: it stays on this node until it comes back',
        );
      }
    }
  }

  /** The owner's conversations as summaries, those handed over by nodes that went and not taken up yet included. */
  async summaries(owner: Owner): Promise<ConversationSummary[]> {
    const held = this.list(owner).map((conversation) => conversation.summary());
    if (!this.handover) return held;
    const known = new Set(held.map((summary) => summary.id));
    const handedOver = await this.handover.summaries(owner.id).catch((error: Error) => {
      this.settings.logger.warn({ error: error.message }, 'could not list the conversations handed over to the store');
      return [];
    });
    return [...held, ...handedOver.filter((summary) => !known.has(summary.id))].sort((a, b) =>
      b.updatedAt.localeCompare(a.updatedAt),
    );
  }

  /** A new conversation on a new session, mounting `volumes` (a continuation: those of the one it continues). */
  async create(
    owner: Owner,
    title?: string,
    continues?: ServerConversation,
    volumes?: VolumeMount[],
  ): Promise<ServerConversation> {
    this.prune(owner);
    const mounts =
      volumes ??
      continues?.volumes.map(({ volumeId, path, readOnly, subPath }) => ({
        volume: volumeId,
        path,
        readOnly,
        ...(subPath !== undefined ? { subPath } : {}),
      }));
    const entry = await this.settings.registry.create(owner, 'conversation', mounts?.length ? { mounts } : {});
    try {
      const conversation = await ServerConversation.create(entry, this.conversationSettings(), title, continues);
      const directory = this.stateDirectory;
      if (directory !== undefined) {
        await ownerDirectory(directory, owner.id);
        conversation.journal = new ConversationJournal(
          historyFile(directory, owner.id, conversation.id),
          conversation,
          this.settings.logger,
        );
        conversation.journal.created();
      }
      this.byId.set(conversation.id, conversation);
      return conversation;
    } catch (error) {
      await this.settings.registry.remove(entry, 'failed');
      throw error;
    }
  }

  /**
   * A new conversation, on a new session, that continues one whose session is
   * gone: the model is given the earlier history; nothing of it is re-run.
   */
  async continue(owner: Owner, earlier: ServerConversation): Promise<ServerConversation> {
    if (!earlier.expired) throw new ConversationActiveError(); // a paused session resumes: nothing to continue
    const continued = await this.create(owner, earlier.title, earlier);
    continued.mode = earlier.mode;
    return continued;
  }

  /** Resolves when every history write asked for so far is on disk. */
  async flushed(): Promise<void> {
    await Promise.all([...this.byId.values()].map((conversation) => conversation.journal?.flushed()));
  }

  private conversationSettings(): ConversationSettings {
    return { ...this.settings, onHistoryGrew: (grown) => this.keepOwnerWithinLimit(grown.owner) };
  }

  /** The owner's conversation; another owner's is "not found" too. */
  get(owner: Owner, id: string): ServerConversation {
    const conversation = this.byId.get(id);
    if (!conversation || conversation.owner.id !== owner.id) {
      throw new ConversationNotFoundError(id);
    }
    return conversation;
  }

  /** The owner's conversations, the most recently updated first. */
  list(owner: Owner): ServerConversation[] {
    this.prune(owner);
    return [...this.byId.values()]
      .filter((conversation) => conversation.owner.id === owner.id)
      .sort((a, b) => b.updatedAt - a.updatedAt);
  }

  /** Stops its turn, closes its session (or deletes it, paused) and forgets it. */
  async remove(conversation: ServerConversation): Promise<void> {
    conversation.cancel();
    this.byId.delete(conversation.id);
    await conversation.journal?.delete();
    await conversation.closeSession();
  }

  /** Stops every running turn (after the registry let running executions finish). */
  shutdown(): void {
    for (const conversation of this.byId.values()) conversation.cancel();
  }

  /** The bytes of every history the owner keeps. */
  ownerHistoryBytes(owner: Owner): number {
    let total = 0;
    for (const conversation of this.byId.values()) {
      if (conversation.owner.id === owner.id) total += conversation.historyBytes;
    }
    return total;
  }

  /** Outputs first, across the owner's conversations from the least recently updated; then turns. */
  private keepOwnerWithinLimit(owner: Owner): void {
    const limit = (this.settings.limits ?? DEFAULT_HISTORY_LIMITS).keyBytes;
    let total = this.ownerHistoryBytes(owner);
    if (total <= limit) return;
    const oldestFirst = [...this.byId.values()]
      .filter((conversation) => conversation.owner.id === owner.id)
      .sort((a, b) => a.updatedAt - b.updatedAt);
    for (const drop of ['outputs', 'turns'] as const) {
      for (const conversation of oldestFirst) {
        if (total <= limit) return;
        const before = conversation.historyBytes;
        const target = Math.max(0, before - (total - limit));
        if (drop === 'outputs') conversation.dropOutputs(target);
        else conversation.dropTurns(target);
        total -= before - conversation.historyBytes;
      }
    }
  }

  private prune(owner: Owner): void {
    const stored = this.stateDirectory !== undefined;
    const cutoff = stored ? 0 : Date.now() - EXPIRED_RETENTION_MS;
    const keep = stored ? MAX_STORED_PER_OWNER : MAX_EXPIRED_PER_OWNER;
    // Expired, or paused: not live. A paused one's time is when it was last used.
    const dormant = [...this.byId.values()]
      .filter((conversation) => conversation.owner.id === owner.id && conversation.dormant && !conversation.busy)
      .sort((a, b) => b.updatedAt - a.updatedAt);
    dormant.forEach((conversation, index) => {
      if (index >= keep || (conversation.expired?.at ?? conversation.updatedAt) < cutoff) {
        this.byId.delete(conversation.id);
        void conversation.journal?.delete().catch((error) => {
          this.settings.logger.warn({ err: error, conversation: conversation.id }, 'cannot delete a history file');
        });
        void conversation.closeSession().catch((error: unknown) => {
          this.settings.logger.warn({ err: error, conversation: conversation.id }, 'cannot delete a paused session');
        });
      }
    });
  }
}
