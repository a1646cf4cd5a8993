import { describe, expect, it } from 'vitest';
import { ConversationPool, PoolFullError } from './conversation-pool.js';

class Conversation {
  busy = false;
  closed = false;
  constructor(readonly channelId: string) {}
  async close(): Promise<void> {
    this.closed = true;
  }
}

function pool(maxConversations: number, clock: { now: number }, closed: string[] = []) {
  return new ConversationPool<Conversation>({
    maxConversations,
    idleTimeoutMs: 30 * 60_000,
    onClosed: (conversation, reason) => closed.push(`${conversation.channelId}:${reason}`),
    now: () => clock.now,
  });
}

describe('ConversationPool', () => {
  it('keeps one conversation per channel', async () => {
    const conversations = pool(5, { now: 0 });
    const first = await conversations.get('thread-1', () => new Conversation('thread-1'));
    expect(await conversations.get('thread-1', () => new Conversation('thread-1'))).toBe(first);
    expect(await conversations.get('thread-2', () => new Conversation('thread-2'))).not.toBe(first);
  });

  it('closes conversations idle past the timeout, not busy ones', async () => {
    const clock = { now: 0 };
    const closed: string[] = [];
    const conversations = pool(5, clock, closed);
    const idle = await conversations.get('a', () => new Conversation('a'));
    const busy = await conversations.get('b', () => new Conversation('b'));
    busy.busy = true;
    clock.now = 10 * 60_000;
    const recent = await conversations.get('c', () => new Conversation('c'));
    clock.now = 31 * 60_000;
    expect(await conversations.closeIdle()).toEqual(['a']);
    expect(idle.closed).toBe(true);
    expect(busy.closed).toBe(false);
    expect(recent.closed).toBe(false);
    expect(closed).toEqual(['a:idle']);
    // A new question in the closed channel starts a fresh conversation.
    expect(await conversations.get('a', () => new Conversation('a'))).not.toBe(idle);
  });

  it('makes room by closing the conversation idle longest, skipping busy ones', async () => {
    const clock = { now: 0 };
    const closed: string[] = [];
    const conversations = pool(2, clock, closed);
    const oldest = await conversations.get('a', () => new Conversation('a'));
    oldest.busy = true;
    clock.now = 1000;
    const second = await conversations.get('b', () => new Conversation('b'));
    clock.now = 2000;
    await conversations.get('c', () => new Conversation('c'));
    expect(second.closed).toBe(true);
    expect(oldest.closed).toBe(false);
    expect(closed).toEqual(['b:make-room']);
  });

  it('refuses a new conversation when every slot is busy', async () => {
    const conversations = pool(1, { now: 0 });
    (await conversations.get('a', () => new Conversation('a'))).busy = true;
    await expect(conversations.get('b', () => new Conversation('b'))).rejects.toBeInstanceOf(PoolFullError);
  });

  it('closes everything at shutdown', async () => {
    const conversations = pool(3, { now: 0 });
    const all = [
      await conversations.get('a', () => new Conversation('a')),
      await conversations.get('b', () => new Conversation('b')),
    ];
    await conversations.closeAll();
    expect(all.every((conversation) => conversation.closed)).toBe(true);
    expect(conversations.size).toBe(0);
  });
});
