/**
 * Pause and resume, lifecycles, snapshots and fork through the unmodified SDKs (`e2b` 2.51 and
 * `@e2b/code-interpreter` 2.8.0) on real bubblewrap sandboxes: a paused sandbox keeps its variables
 * and files and comes back under its id and tokens with connect, also on a server restarted on the
 * same state directory; its deadline pauses it with `onTimeout: 'pause'`; snapshots start new
 * sandboxes; forks diverge; and another key finds none of it. The wire details (statuses, fields,
 * traffic to a paused sandbox) are in src/server/e2b/pause.test.ts.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Sandbox } from '@e2b/code-interpreter';
import { Sandbox as BaseSandbox, SandboxError, SandboxNotFoundError } from 'e2b';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { asKey, OTHER_KEY, startE2bServer, type TestServer } from '../support/e2b.js';

const stateDirectory = mkdtempSync(path.join(os.tmpdir(), 'sandcell-e2b-pause-'));
let server: TestServer;

beforeAll(async () => {
  server = await startE2bServer({ stateDirectory });
});
afterAll(async () => {
  await server?.close();
  rmSync(stateDirectory, { recursive: true, force: true });
});

const stateOf = async (id: string) => (await Sandbox.getInfo(id)).state;

describe('E2B pause and resume', () => {
  it('pauses a sandbox, lists it paused, and connect brings back its variables and files', async () => {
    const sandbox = await Sandbox.create();
    try {
      await sandbox.runCode('x = 41');
      await sandbox.files.write('/home/user/kept.txt', 'written before the pause');
      expect(await sandbox.pause()).toBe(true);
      // Already paused: the SDK's false (409).
      expect(await sandbox.betaPause()).toBe(false);
      expect(await stateOf(sandbox.sandboxId)).toBe('paused');
      const paused = await Sandbox.list({ query: { state: ['paused'] } }).nextItems();
      expect(paused.map((info) => [info.sandboxId, info.state])).toEqual([[sandbox.sandboxId, 'paused']]);
      expect(
        (await Sandbox.list({ query: { state: ['running'] } }).nextItems()).map((info) => info.sandboxId),
      ).not.toContain(sandbox.sandboxId);
      // Its traffic is refused until it is resumed (it was not created with autoResume).
      await expect(sandbox.runCode('x')).rejects.toBeInstanceOf(SandboxError);

      const resumed = await Sandbox.connect(sandbox.sandboxId);
      expect((await resumed.runCode('x + 1')).text).toBe('42');
      expect(await resumed.files.read('/home/user/kept.txt')).toBe('written before the pause');
      // The tokens it had still open it.
      expect((await sandbox.runCode('x')).text).toBe('41');
      expect(await stateOf(sandbox.sandboxId)).toBe('running');
    } finally {
      await sandbox.kill();
    }
  });

  it("pauses at its deadline with lifecycle onTimeout 'pause'; connect resumes it, autoResume traffic too", async () => {
    const sandbox = await Sandbox.create({ timeoutMs: 6_000, lifecycle: { onTimeout: 'pause' } });
    await sandbox.runCode('kept = "through the deadline"');
    const resuming = await Sandbox.create({ timeoutMs: 4_000, lifecycle: { onTimeout: 'pause', autoResume: true } });
    try {
      await resuming.runCode('kept = "by its own traffic"');
      expect((await Sandbox.getInfo(resuming.sandboxId)).lifecycle).toEqual({ onTimeout: 'pause', autoResume: true });
      await expect.poll(() => stateOf(sandbox.sandboxId), { timeout: 20_000, interval: 500 }).toBe('paused');
      await expect.poll(() => stateOf(resuming.sandboxId), { timeout: 20_000, interval: 500 }).toBe('paused');
      const connected = await Sandbox.connect(sandbox.sandboxId, { timeoutMs: 60_000 });
      expect((await connected.runCode('kept')).text).toBe('through the deadline');
      expect((await resuming.runCode('kept')).text).toBe('by its own traffic');
      expect(await stateOf(resuming.sandboxId)).toBe('running');
    } finally {
      await Promise.all([sandbox.kill(), resuming.kill()]);
    }
  });

  it('kills a paused sandbox: it is gone', async () => {
    const sandbox = await BaseSandbox.create();
    await sandbox.pause();
    expect(await BaseSandbox.kill(sandbox.sandboxId)).toBe(true);
    await expect(BaseSandbox.getInfo(sandbox.sandboxId)).rejects.toBeInstanceOf(SandboxNotFoundError);
    await expect(BaseSandbox.connect(sandbox.sandboxId)).rejects.toBeInstanceOf(SandboxNotFoundError);
    expect(await BaseSandbox.kill(sandbox.sandboxId)).toBe(false);
  });
});

describe('E2B snapshots and fork', () => {
  it('creates, lists and deletes snapshots, and starts a sandbox from one', async () => {
    const sandbox = await Sandbox.create();
    let started: Sandbox | undefined;
    try {
      await sandbox.runCode('step = 1');
      const snapshot = await sandbox.createSnapshot();
      expect(snapshot.names).toEqual([]);
      // The sandbox runs on, and goes its own way.
      await sandbox.runCode('step = 2');
      const listed = await sandbox.listSnapshots().nextItems();
      expect(listed.map((each) => each.snapshotId)).toEqual([snapshot.snapshotId]);
      await asKey(OTHER_KEY, async () => expect(await Sandbox.listSnapshots().nextItems()).toEqual([]));

      started = await Sandbox.create(snapshot.snapshotId);
      expect((await started.runCode('step')).text).toBe('1');
      expect((await sandbox.runCode('step')).text).toBe('2');

      expect(await Sandbox.deleteSnapshot(snapshot.snapshotId)).toBe(true);
      expect(await Sandbox.deleteSnapshot(snapshot.snapshotId)).toBe(false);
      expect(await Sandbox.listSnapshots({ sandboxId: sandbox.sandboxId }).nextItems()).toEqual([]);
    } finally {
      await Promise.all([sandbox.kill(), started?.kill()]);
    }
  });

  it('forks a running sandbox: the fork starts with its state and diverges', async () => {
    const sandbox = await Sandbox.create();
    const forks: Sandbox[] = [];
    try {
      await sandbox.runCode('shared = "before the fork"');
      const [fork] = await sandbox.fork({ timeoutMs: 60_000 });
      if (!(fork instanceof Sandbox)) throw fork ?? new Error('no fork');
      forks.push(fork);
      expect(fork.sandboxId).not.toBe(sandbox.sandboxId);
      expect((await fork.runCode('shared')).text).toBe('before the fork');
      await fork.runCode('shared = "the fork alone"');
      expect((await fork.runCode('shared')).text).toBe('the fork alone');
      expect((await sandbox.runCode('shared')).text).toBe('before the fork');
    } finally {
      await Promise.all([sandbox.kill(), ...forks.map((fork) => fork.kill())]);
    }
  });
});

describe('E2B pause across a restart', () => {
  it('resumes a paused sandbox on a new server with the same state directory; another key finds none', async () => {
    const sandbox = await Sandbox.create();
    await sandbox.runCode('x = "before the restart"');
    await sandbox.pause();
    await server.close();
    server = await startE2bServer({ stateDirectory });

    await asKey(OTHER_KEY, async () => {
      await expect(Sandbox.connect(sandbox.sandboxId)).rejects.toBeInstanceOf(SandboxNotFoundError);
      expect(await Sandbox.kill(sandbox.sandboxId)).toBe(false);
    });
    expect(await stateOf(sandbox.sandboxId)).toBe('paused');
    const resumed = await Sandbox.connect(sandbox.sandboxId);
    try {
      expect((await resumed.runCode('x')).text).toBe('before the restart');
    } finally {
      await resumed.kill();
    }
  });
});
