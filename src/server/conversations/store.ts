/**
 * The server's conversations, each owned by one API key like the sessions
 * they run on. A conversation whose session ended (idle timeout, deleted,
 * shutdown) stays readable as expired for a while, so its history can still
 * be read and exported; the oldest expired ones are dropped first. All of a
 * key's histories together stay within `limits.keyBytes`: the least recently
 * updated conversations lose their oldest outputs first, then their oldest
 * turns (history-limits.ts says why).
 */
import type { Owner } from '../auth.js';
import { ConversationNotFoundError } from '../core-errors.js';
import { type ConversationSettings, ServerConversation } from './conversation.js';
import { DEFAULT_HISTORY_LIMITS } from './history-limits.js';

/** Expired conversations kept per key, and for how long. */
export const MAX_EXPIRED_PER_OWNER = 50;
export const EXPIRED_RETENTION_MS = 24 * 60 * 60_000;

export class ConversationStore {
  private readonly byId = new Map<string, ServerConversation>();

  constructor(readonly settings: ConversationSettings) {}

  async create(owner: Owner, title?: string): Promise<ServerConversation> {
    this.prune(owner);
    const entry = await this.settings.registry.create(owner, 'conversation');
    try {
      const conversation = await ServerConversation.create(
        entry,
        { ...this.settings, onHistoryGrew: (grown) => this.keepOwnerWithinLimit(grown.owner) },
        title,
      );
      this.byId.set(conversation.id, conversation);
      return conversation;
    } catch (error) {
      await this.settings.registry.remove(entry, 'failed');
      throw error;
    }
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

  /** Stops its turn, closes its session and forgets it. */
  async remove(conversation: ServerConversation): Promise<void> {
    conversation.cancel();
    this.byId.delete(conversation.id);
    if (!conversation.expired) await this.settings.registry.remove(conversation.entry, 'deleted');
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
    const cutoff = Date.now() - EXPIRED_RETENTION_MS;
    const expired = [...this.byId.values()]
      .filter((conversation) => conversation.owner.id === owner.id && conversation.expired && !conversation.busy)
      .sort((a, b) => b.updatedAt - a.updatedAt);
    expired.forEach((conversation, index) => {
      if (index >= MAX_EXPIRED_PER_OWNER || (conversation.expired?.at ?? 0) < cutoff) this.byId.delete(conversation.id);
    });
  }
}
