/** Histories handed over to a store by a draining node: taken back whole by their own key only, listed until taken. */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import type { ConversationSummary } from '../../protocol/index.js';
import { FsObjectStore } from '../../store/fs-object-store.js';
import { ConversationHandover } from './handover.js';

const directories: string[] = [];
afterEach(() => {
  for (const directory of directories.splice(0)) rmSync(directory, { recursive: true, force: true });
});

function handover(): { handover: ConversationHandover; objects: FsObjectStore } {
  const directory = mkdtempSync(path.join(os.tmpdir(), 'sandcell-handover-'));
  directories.push(directory);
  const objects = new FsObjectStore(directory);
  return {
    objects,
    handover: new ConversationHandover({
      objects: async () => objects,
      maxFileBytes: 1024,
      logger: pino({ level: 'silent' }),
    }),
  };
}

const summary = (id: string, updatedAt: string): ConversationSummary => ({
  id,
  title: `title of ${id.slice(0, 8)}`,
  sessionId: randomUUID(),
  status: 'active',
  busy: false,
  createdAt: '2026-12-01T00:00:00.000Z',
  updatedAt,
  turnCount: 1,
});

describe('ConversationHandover', () => {
  it('gives a history back to its own key only, lists it until it is taken, and forgets it once removed', async () => {
    const { handover: store } = handover();
    const id = randomUUID();
    await store.put('owner-a', summary(id, '2026-12-01T01:00:00.000Z'), Buffer.from('{"history":1}\n'));
    expect((await store.summaries('owner-a')).map((entry) => entry.id)).toEqual([id]);
    expect(await store.summaries('owner-b')).toEqual([]);
    expect(await store.take('owner-b', id)).toBeUndefined();
    expect(Buffer.from((await store.take('owner-a', id)) ?? []).toString()).toBe('{"history":1}\n');
    await store.remove('owner-a', id);
    expect(await store.take('owner-a', id)).toBeUndefined();
    expect(await store.summaries('owner-a')).toEqual([]);
  });

  it('takes nothing for an id that is not a conversation id, nor a history whose summary is missing or damaged', async () => {
    const { handover: store, objects } = handover();
    expect(await store.take('owner-a', '../../paused/x')).toBeUndefined();
    const id = randomUUID();
    await store.put('owner-a', summary(id, '2026-12-01T01:00:00.000Z'), Buffer.from('history'));
    for await (const object of objects.list('conversations/')) {
      if (object.key.endsWith('.json')) await objects.write(object.key, Buffer.from('{not json'));
    }
    expect(await store.summaries('owner-a')).toEqual([]);
    for await (const object of objects.list('conversations/')) {
      if (object.key.endsWith('.json')) await objects.delete(object.key);
    }
    expect(await store.take('owner-a', id)).toBeUndefined();
  });

  it('refuses a history over its bound rather than reading it whole', async () => {
    const { handover: store } = handover();
    const id = randomUUID();
    await store.put('owner-a', summary(id, '2026-12-01T01:00:00.000Z'), Buffer.alloc(2048, 'x'));
    await expect(store.take('owner-a', id)).rejects.toThrow(/over the 1024/);
  });
});
