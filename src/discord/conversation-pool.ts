/**
 * The conversations the bot holds, one per thread or DM channel, each with its
 * own sandbox. A conversation idle past the timeout is closed; when the pool
 * is full, the conversation idle longest makes room. One that is busy (a
 * question running) is never closed for either reason.
 */

/** What the pool needs of a conversation. */
export interface PooledConversation {
  /** A question is running or queued. */
  readonly busy: boolean;
  close(): Promise<void>;
}

/** Every conversation slot is taken by one that is busy. */
export class PoolFullError extends Error {
  constructor(readonly size: number) {
    super(`All ${size} conversations are busy; ask again in a moment.`);
    this.name = 'PoolFullError';
  }
}

interface Entry<C> {
  conversation: C;
  lastActiveAt: number;
}

export class ConversationPool<C extends PooledConversation> {
  private readonly entries = new Map<string, Entry<C>>();

  constructor(
    private readonly options: {
      maxConversations: number;
      idleTimeoutMs: number;
      /** Told when a conversation closes for idleness or to make room (e.g. to say so in its channel). */
      onClosed?: (conversation: C, reason: 'idle' | 'make-room') => void;
      now?: () => number;
    },
  ) {}

  private now(): number {
    return (this.options.now ?? Date.now)();
  }

  get size(): number {
    return this.entries.size;
  }

  has(channelId: string): boolean {
    return this.entries.has(channelId);
  }

  /** The channel's conversation, made by `create` (closing the longest idle one if the pool is full) when there is none. */
  async get(channelId: string, create: () => C): Promise<C> {
    const existing = this.entries.get(channelId);
    if (existing) {
      existing.lastActiveAt = this.now();
      return existing.conversation;
    }
    if (this.entries.size >= this.options.maxConversations) {
      const idlest = [...this.entries]
        .filter(([, entry]) => !entry.conversation.busy)
        .sort(([, a], [, b]) => a.lastActiveAt - b.lastActiveAt)[0];
      if (!idlest) throw new PoolFullError(this.entries.size);
      await this.remove(idlest[0], 'make-room');
    }
    const conversation = create();
    this.entries.set(channelId, { conversation, lastActiveAt: this.now() });
    return conversation;
  }

  /** Marks the channel's conversation active now (e.g. when its question ends). */
  touch(channelId: string): void {
    const entry = this.entries.get(channelId);
    if (entry) entry.lastActiveAt = this.now();
  }

  /** Closes the conversations idle past the timeout; returns their channels. */
  async closeIdle(): Promise<string[]> {
    const cutoff = this.now() - this.options.idleTimeoutMs;
    const idle = [...this.entries]
      .filter(([, entry]) => !entry.conversation.busy && entry.lastActiveAt <= cutoff)
      .map(([channelId]) => channelId);
    for (const channelId of idle) await this.remove(channelId, 'idle');
    return idle;
  }

  private async remove(channelId: string, reason: 'idle' | 'make-room'): Promise<void> {
    const entry = this.entries.get(channelId);
    if (!entry) return;
    this.entries.delete(channelId);
    this.options.onClosed?.(entry.conversation, reason);
    await entry.conversation.close();
  }

  /** Closes every conversation (at shutdown). */
  async closeAll(): Promise<void> {
    const all = [...this.entries.values()];
    this.entries.clear();
    await Promise.allSettled(all.map((entry) => entry.conversation.close()));
  }
}
