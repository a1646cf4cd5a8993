/**
 * E2B's control plane driven by the unmodified SDKs (`e2b` 2.51 and 2.49,
 * whose create paths differ, and `@e2b/code-interpreter` 2.8.0's Sandbox) on
 * real bubblewrap sandboxes: create, info, list, timeouts, connect, kill, and
 * who may do each.
 */
import { Sandbox as InterpreterSandbox } from '@e2b/code-interpreter';
import { Sandbox, type SandboxInfo, SandboxNotFoundError } from 'e2b';
import { Sandbox as Sandbox249 } from 'e2b-2-49';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startE2bServer, type TestServer } from '../support/e2b.js';

let server: TestServer;

beforeAll(async () => {
  server = await startE2bServer();
});
afterAll(async () => {
  await server?.close();
});

describe('E2B lifecycle', () => {
  it('creates a sandbox with e2b 2.51 (POST /v2/sandboxes) and kills it', async () => {
    const sandbox = await Sandbox.create();
    expect(sandbox.sandboxId).toMatch(/^[a-z0-9]{20}$/);
    expect(await sandbox.isRunning()).toBe(true);
    await sandbox.kill();
    expect(await sandbox.isRunning()).toBe(false);
    expect(await Sandbox.kill(sandbox.sandboxId)).toBe(false);
    await expect(Sandbox.getInfo(sandbox.sandboxId)).rejects.toBeInstanceOf(SandboxNotFoundError);
  });

  it('creates with e2b 2.49 (POST /sandboxes) and with the code interpreter’s Sandbox', async () => {
    const older = await Sandbox249.create();
    const interpreter = await InterpreterSandbox.create();
    try {
      expect(await older.isRunning()).toBe(true);
      expect(await interpreter.isRunning()).toBe(true);
      expect(older.sandboxId).not.toBe(interpreter.sandboxId);
    } finally {
      await older.kill();
      await interpreter.kill();
    }
    expect(await Sandbox.kill(older.sandboxId)).toBe(false);
  });

  it('reports info with metadata, and moves the deadline with setTimeout and with connect', async () => {
    const sandbox = await Sandbox.create({ metadata: { purpose: 'info' }, timeoutMs: 120_000 });
    try {
      const info = await Sandbox.getInfo(sandbox.sandboxId);
      expect(info).toMatchObject({
        sandboxId: sandbox.sandboxId,
        templateId: 'base',
        metadata: { purpose: 'info' },
        state: 'running',
      });
      expect(info.endAt.getTime() - info.startedAt.getTime()).toBe(120_000);

      await sandbox.setTimeout(3_600_000);
      const extended = await sandbox.getInfo();
      expect(extended.endAt.getTime()).toBeGreaterThan(info.endAt.getTime() + 3_000_000);

      // Connecting with a shorter timeout never shortens a running sandbox's life; a longer one extends it.
      await Sandbox.connect(sandbox.sandboxId, { timeoutMs: 60_000 });
      expect((await sandbox.getInfo()).endAt).toEqual(extended.endAt);
      const connected = await Sandbox.connect(sandbox.sandboxId, { timeoutMs: 7_200_000 });
      expect((await connected.getInfo()).endAt.getTime()).toBeGreaterThan(extended.endAt.getTime());
      expect(await connected.isRunning()).toBe(true);
    } finally {
      await sandbox.kill();
    }
  });

  it('kills a sandbox when its timeout expires', async () => {
    const sandbox = await Sandbox.create({ timeoutMs: 2_000 });
    await expect.poll(() => sandbox.isRunning(), { timeout: 30_000, interval: 500 }).toBe(false);
    await expect(Sandbox.getInfo(sandbox.sandboxId)).rejects.toBeInstanceOf(SandboxNotFoundError);
    await expect(Sandbox.connect(sandbox.sandboxId)).rejects.toBeInstanceOf(SandboxNotFoundError);
  });

  it('lists by metadata, a page at a time, newest first unless asked oldest first', async () => {
    const created = [];
    for (const index of [1, 2, 3])
      created.push(await Sandbox.create({ metadata: { suite: 'list', index: String(index) } }));
    const other = await Sandbox.create({ metadata: { suite: 'other' } });
    try {
      const pagesOf = async (order?: 'asc' | 'desc') => {
        const paginator = Sandbox.list({
          query: { metadata: { suite: 'list' } },
          limit: 2,
          ...(order ? { order } : {}),
        });
        const pages: SandboxInfo[][] = [];
        while (paginator.hasNext) pages.push(await paginator.nextItems());
        return pages;
      };
      const newest = await pagesOf();
      expect(newest.map((page) => page.length)).toEqual([2, 1]);
      expect(newest.flat().map((info) => info.sandboxId)).toEqual(
        created.map((sandbox) => sandbox.sandboxId).reverse(),
      );
      const oldest = await pagesOf('asc');
      expect(oldest.flat().map((info) => info.metadata.index)).toEqual(['1', '2', '3']);
      const started = await Sandbox.list({
        query: { metadata: { suite: 'list' }, startedAfter: new Date(Date.now() + 60_000) },
      }).nextItems();
      expect(started).toEqual([]);

      const both = await Sandbox.list({ query: { metadata: { suite: 'other' } } }).nextItems();
      expect(both.map((info) => info.sandboxId)).toEqual([other.sandboxId]);
      const paused = await Sandbox.list({ query: { state: ['paused'] } }).nextItems();
      expect(paused).toEqual([]);
    } finally {
      await Promise.all([...created, other].map((sandbox) => sandbox.kill()));
    }
  });
});
