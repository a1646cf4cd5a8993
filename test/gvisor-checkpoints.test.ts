/**
 * Snapshots on the gVisor backend keep the whole sandbox (runsc's checkpoint), on real runsc sandboxes:
 * a resume brings back what no kernel's own save can (a generator mid-iteration, a thread and what it
 * counted, an open file, a running background process, another language's closure), a snapshot goes
 * on where it was, a restore rolls a used session back, a pause too large for its bound leaves the
 * session running, and a checkpoint is refused, typed, where it cannot be restored.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { createBubblewrapBackend } from '../src/backends/bubblewrap/index.js';
import { createGvisorBackend } from '../src/backends/gvisor/index.js';
import { Session } from '../src/session/session.js';
import { SnapshotIncompatibleError, SnapshotTooLargeError } from '../src/snapshots/snapshot-errors.js';
import { SnapshotStore } from '../src/snapshots/snapshot-store.js';
import { FsObjectStore } from '../src/store/fs-object-store.js';
import { exchange } from './contract/ports-contract.js';
import { describeWhenAvailable, unavailableReason } from './support/backends.js';

const reason = await unavailableReason(createGvisorBackend());
const scratch = mkdtempSync(path.join(os.tmpdir(), 'sandcell-gvisor-checkpoints-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

const snapshots = new SnapshotStore(new FsObjectStore(scratch), Buffer.alloc(32, 9));

/** A generator half way, a thread counting, a file open for appending, a background process. */
const LIVE_STATE = [
  'import subprocess, threading, time',
  'def numbers():',
  '    n = 0',
  '    while True:',
  '        n += 1',
  '        yield n',
  'counter = numbers()',
  'print(next(counter), next(counter))',
  'ticks = [0]',
  'def tick():',
  '    while True:',
  '        ticks[0] += 1',
  '        time.sleep(0.02)',
  'threading.Thread(target=tick, daemon=True).start()',
  'log = open("/mnt/data/log.txt", "a")',
  'log.write("before ")',
  'log.flush()',
  'sleeper = subprocess.Popen(["sleep", "600"])',
].join('\n');

/** A server on port 8000 that answers what it is sent with `pong:`, each connection on a thread. */
const PONG_SERVER = [
  'import socket, threading',
  'listener = socket.create_server(("127.0.0.1", 8000))',
  'def answer(connection):',
  '    data = b""',
  '    while chunk := connection.recv(65536):',
  '        data += chunk',
  '    connection.sendall(b"pong:" + data)',
  '    connection.close()',
  'def accept():',
  '    while True:',
  '        threading.Thread(target=answer, args=(listener.accept()[0],), daemon=True).start()',
  'threading.Thread(target=accept, daemon=True).start()',
].join('\n');

describeWhenAvailable('gvisor backend: snapshots keep the whole sandbox', 'gvisor', reason, () => {
  it('a pause and a resume bring back a generator mid-iteration, a thread, an open file, a background process and a JavaScript closure', async () => {
    const backend = createGvisorBackend();
    const session = await Session.create({ backend, snapshots });
    expect((await session.run(LIVE_STATE)).stdout).toBe('1 2\n');
    expect((await session.run(PONG_SERVER)).error).toBeUndefined();
    const js = await session.createContext({ language: 'javascript' });
    await session.run('let calls = 0; const bump = () => ++calls; bump(); bump();', { context: js.id });
    const paused = await session.pause();
    expect(paused.kind).toBe('checkpoint');
    expect(paused.contexts.map((context) => context.id).sort()).toEqual([js.id, 'python'].sort());
    await session.close();

    const resumed = await Session.resume(paused.id, { backend, snapshots });
    try {
      expect(resumed.restored).toMatchObject({ snapshotId: paused.id, kind: 'checkpoint', notKept: [] });
      expect(resumed.restored?.contexts.every((context) => context.whole)).toBe(true);
      const before = Number((await resumed.run('print(ticks[0])')).stdout);
      expect(before).toBeGreaterThan(0);
      await new Promise((resolve) => setTimeout(resolve, 300));
      const after = await resumed.run(
        [
          'log.write("after")',
          'log.flush()',
          `print(next(counter), ticks[0] > ${before}, sleeper.poll() is None, open("/mnt/data/log.txt").read())`,
        ].join('\n'),
      );
      expect(after.error).toBeUndefined();
      expect(after.stdout).toBe('3 True True before after\n');
      expect((await resumed.run('bump()', { context: js.id })).results[0]?.data['text/plain']).toBe('3');
      // The sandbox is a working one: new files, commands and contexts, as its uid.
      expect((await resumed.commands.run('echo made > /mnt/data/new.txt && cat /mnt/data/new.txt')).stdout).toBe(
        'made\n',
      );
      expect((await resumed.files.read('/mnt/data/new.txt')).toString()).toBe('made\n');
      // The server code started before the pause still listens, reached through the resumed session's ingress.
      expect(await resumed.ports.waitFor(8000, { timeoutMs: 10_000 })).toEqual({ port: 8000, address: '127.0.0.1' });
      expect((await exchange(await resumed.ports.connect(8000), 'ping')).toString()).toBe('pong:ping');
    } finally {
      await resumed.close();
    }
  });

  it('a snapshot goes on where it was, and a restore rolls the used session back to it whole', async () => {
    const session = await Session.create({ backend: createGvisorBackend(), snapshots });
    try {
      await session.run(LIVE_STATE);
      const taken = await session.snapshot();
      expect(taken.kind).toBe('checkpoint');
      expect((await session.run('print(next(counter))')).stdout).toBe('3\n');
      await session.run('print(next(counter)); marker = "later"');
      const report = await session.restore(taken.id);
      expect(report.kind).toBe('checkpoint');
      const back = await session.run('print(next(counter), "marker" in globals(), sleeper.poll() is None)');
      expect(back.stdout).toBe('3 False True\n');
    } finally {
      await session.close();
    }
  });

  it('a fork starts where its source was, whole; the two share nothing, and the source goes on', async () => {
    const backend = createGvisorBackend();
    const source = await Session.create({ backend, snapshots });
    const fork = await Session.create({ backend, snapshots });
    try {
      await source.run(LIVE_STATE);
      const report = await source.forkInto(fork);
      expect(report).toMatchObject({ kind: 'checkpoint', notKept: [] });
      expect((await fork.run('print(next(counter), sleeper.poll() is None)')).stdout).toBe('3 True\n');
      expect((await source.run('print(next(counter))')).stdout).toBe('3\n');
      // Each its own: a file, a variable and a process of one are not the other's.
      await fork.run('log.write("fork"); log.flush(); mine = "fork"; sleeper.kill()');
      const seen = await source.run(
        'print(open("/mnt/data/log.txt").read(), "mine" in globals(), sleeper.poll() is None)',
      );
      expect(seen.stdout).toBe('before  False True\n');
    } finally {
      await Promise.all([source.close(), fork.close()]);
    }
  });

  it("a snapshot beside a running command keeps the kernels' state, and the command runs on, followed", async () => {
    const session = await Session.create({ backend: createGvisorBackend(), snapshots });
    try {
      await session.run('x = 41');
      const command = await session.commands.run('sleep 1; echo still here', { background: true });
      const taken = await session.snapshot();
      expect(taken.kind).toBe('kernel-state');
      expect((await command.wait()).stdout).toBe('still here\n');
    } finally {
      await session.close();
    }
  });

  it('a pause past its bound keeps nothing and leaves the session running as it was', async () => {
    const session = await Session.create({ backend: createGvisorBackend(), snapshots });
    try {
      await session.run(LIVE_STATE);
      // Room for the files, not for the sandbox's memory.
      await expect(session.pause({ maxBytes: 2 * 1024 * 1024 })).rejects.toThrow(SnapshotTooLargeError);
      expect((await session.run('print(next(counter), sleeper.poll() is None)')).stdout).toBe('3 True\n');
    } finally {
      await session.close();
    }
  });

  it('a checkpoint resumed on bubblewrap is refused, typed, and nothing of it is loaded', async () => {
    const session = await Session.create({ backend: createGvisorBackend(), snapshots });
    await session.run('kept = 1');
    const paused = await session.pause();
    await session.close();
    const bubblewrap = createBubblewrapBackend();
    const attempt = Session.resume(paused.id, { backend: bubblewrap, snapshots });
    await expect(attempt).rejects.toThrow(SnapshotIncompatibleError);
    await expect(attempt).rejects.toThrow(/whole gvisor sandbox/);
  });
});
