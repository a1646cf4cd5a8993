/**
 * E2B's named snapshots through the unmodified JS SDK on real bubblewrap sandboxes: `createSnapshot({ name })`
 * answers the name, a later snapshot of the same name takes it over (the newest wins), `Sandbox.create(name)`
 * starts from it, `listSnapshots({ name })` finds it, another key cannot, and `deleteSnapshot(name)` deletes it.
 */
import { Sandbox } from 'e2b';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { asKey, OTHER_KEY, startE2bServer, type TestServer } from '../support/e2b.js';

let server: TestServer;

beforeAll(async () => {
  server = await startE2bServer();
});
afterAll(async () => {
  await server?.close();
});

async function all<T>(paginator: { hasNext: boolean; nextItems(): Promise<T[]> }): Promise<T[]> {
  const items: T[] = [];
  while (paginator.hasNext) items.push(...(await paginator.nextItems()));
  return items;
}

describe('E2B named snapshots', () => {
  it('a name per key, taken over by the newest snapshot under it, started from, listed and deleted by name', async () => {
    const source = await Sandbox.create();
    try {
      await source.files.write('/home/user/state.txt', 'first');
      const first = await source.createSnapshot({ name: 'prepared' });
      expect(first.names).toEqual(['prepared']);
      await source.files.write('/home/user/state.txt', 'second');
      const second = await source.createSnapshot({ name: 'prepared' });
      expect(second.snapshotId).not.toBe(first.snapshotId);
      // The newest holds the name; the first is still there by its id.
      const listed = await all(Sandbox.listSnapshots({ name: 'prepared' }));
      expect(listed).toEqual([{ snapshotId: second.snapshotId, names: ['prepared'] }]);
      const everything = await all(Sandbox.listSnapshots());
      expect(everything.find((snapshot) => snapshot.snapshotId === first.snapshotId)?.names).toEqual([]);

      const started = await Sandbox.create('prepared');
      try {
        expect(await started.files.read('/home/user/state.txt')).toBe('second');
      } finally {
        await started.kill();
      }
      const byId = await Sandbox.create(first.snapshotId);
      try {
        expect(await byId.files.read('/home/user/state.txt')).toBe('first');
      } finally {
        await byId.kill();
      }
      await asKey(OTHER_KEY, async () => {
        expect(await all(Sandbox.listSnapshots({ name: 'prepared' }))).toEqual([]);
        await expect(Sandbox.create('prepared')).rejects.toThrow();
        expect(await Sandbox.deleteSnapshot('prepared')).toBe(false);
      });
      await expect(source.createSnapshot({ name: 'base' })).rejects.toThrow(/not a template/);
      await expect(source.createSnapshot({ name: 'Bad Name' })).rejects.toThrow(/lower-case/);

      expect(await Sandbox.deleteSnapshot('prepared')).toBe(true);
      expect(await all(Sandbox.listSnapshots({ name: 'prepared' }))).toEqual([]);
      await expect(Sandbox.create('prepared')).rejects.toThrow();
      // Both snapshots taken under the name went with it: no older one takes the name back.
      expect((await all(Sandbox.listSnapshots())).map((snapshot) => snapshot.snapshotId)).not.toContain(
        first.snapshotId,
      );
    } finally {
      await source.kill();
    }
  });
});
