/**
 * Snapshots' host logic on the scripted backend: what is written to the store
 * and loaded back, the report of what was left out, fork, restore, pause, the
 * wait for running code, and refusals (another owner's snapshot, a tampered
 * one). What real kernels keep is in test/snapshots.test.ts.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { createScriptedBackend, type ScriptedRunContext, type ScriptedStep } from '../backends/scripted/index.js';
import { SessionClosedError, TimeoutError } from '../errors.js';
import { SnapshotInvalidError, SnapshotNotFoundError } from '../snapshots/snapshot-errors.js';
import { SnapshotStore } from '../snapshots/snapshot-store.js';
import { FsObjectStore } from '../store/fs-object-store.js';
import type { SessionOptions } from './options.js';
import { resumeSession, Session } from './session.js';

/** `name = value` binds (a value `fn` binds a function, which JSON cannot keep), a bare name shows it, `sleep` waits. */
function toy({ code, state, files }: ScriptedRunContext): ScriptedStep[] {
  const assignment = /^(\w+) = (.*)$/.exec(code);
  if (assignment) {
    state.set(assignment[1] ?? '', assignment[2] === 'fn' ? () => undefined : assignment[2]);
    return [];
  }
  const write = /^write (\S+) (.*)$/.exec(code);
  if (write) {
    files.write(write[1] ?? '', write[2] ?? '');
    return [];
  }
  if (code === 'sleep') return [{ type: 'sleep', ms: 400 }];
  if (/^\w+$/.test(code)) {
    if (!state.has(code)) return [{ type: 'error', name: 'NameError', value: `name '${code}' is not defined` }];
    return [{ type: 'result', data: { 'text/plain': String(state.get(code)) } }];
  }
  return [];
}

const root = mkdtempSync(path.join(os.tmpdir(), 'sandcell-snapshots-'));
const store = new SnapshotStore(new FsObjectStore(root), randomBytes(32));
const sessions: Session[] = [];
const backend = createScriptedBackend({ execute: toy, command: () => [{ type: 'hang' }] });

async function session(options: SessionOptions = {}): Promise<Session> {
  const created = await Session.create({ backend, snapshots: store, ...options });
  sessions.push(created);
  return created;
}

async function value(target: Session, name: string): Promise<string | undefined> {
  const execution = await target.run(name);
  return execution.error ? undefined : (execution.results[0]?.data['text/plain'] as string);
}

afterEach(async () => {
  await Promise.all(sessions.splice(0).map((each) => each.close()));
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe('snapshots of a session (scripted backend)', () => {
  it('resumes a snapshot in a new session: names, files, execution count, and what was left out, said', async () => {
    const original = await session();
    await original.run('x = 41');
    await original.run('callback = fn');
    await original.run('write notes/a.txt hello');
    const info = await original.snapshot();
    expect(info.contexts).toEqual([
      {
        id: 'python',
        language: 'python',
        cwd: '/mnt/data',
        saved: ['x'],
        skipped: [{ name: 'callback', reason: 'function' }],
        executionCount: 3,
      },
    ]);
    expect(info.sessionId).toBe(original.id);
    expect(info.bytes).toBeGreaterThan(0);
    // The snapshot kept running: it still answers.
    expect(await value(original, 'x')).toBe('41');

    const resumed = await resumeSession(info.id, { backend, snapshots: store, id: 'resumed-one' });
    sessions.push(resumed);
    expect(resumed.restored).toEqual({
      snapshotId: info.id,
      kind: 'kernel-state',
      contexts: [
        { id: 'python', language: 'python', restored: ['x'], skipped: [{ name: 'callback', reason: 'function' }] },
      ],
      notKept: [],
    });
    expect(await value(resumed, 'x')).toBe('41');
    expect((await resumed.files.read('notes/a.txt')).toString()).toBe('hello');
    // Its next execution counts on from the snapshot's.
    const next = await resumed.run('y = 1');
    expect(next.executionCount).toBe(5);
  });

  it('keeps every context, made again with its id and language', async () => {
    const original = await session({
      backend: createScriptedBackend({ execute: toy, languages: { python: '3', r: '4' } }),
    });
    await original.run('a = in-r', { language: 'r' });
    const info = await original.snapshot();
    expect(info.contexts.map((context) => [context.id, context.language, context.saved])).toEqual([
      ['python', 'python', []],
      ['r', 'r', ['a']],
    ]);
    const resumed = await resumeSession(info.id, {
      backend: createScriptedBackend({ execute: toy, languages: { python: '3', r: '4' } }),
      snapshots: store,
    });
    sessions.push(resumed);
    expect(resumed.id).toBe(original.id);
    expect(resumed.listContexts().map((context) => context.id)).toEqual(['python', 'r']);
    const run = await resumed.run('a', { context: 'r' });
    expect(run.results[0]?.data['text/plain']).toBe('in-r');
  });

  it('names the commands that ran, which a snapshot cannot keep', async () => {
    const original = await session();
    await original.commands.run('sleep 100', { background: true });
    const info = await original.snapshot();
    expect(info.notKept).toEqual([
      { name: expect.stringMatching(/sleep 100$/), reason: 'a running process is not kept' },
    ]);
  });

  it('forks: two sessions from then on independent, files included', async () => {
    const original = await session();
    await original.run('x = before');
    await original.run('write f.txt one');
    const fork = await original.fork();
    sessions.push(fork);
    expect(fork.id).not.toBe(original.id);
    expect(fork.restored?.contexts[0]?.restored).toEqual(['x']);
    await fork.run('x = forked');
    await fork.run('write f.txt two');
    expect(await value(original, 'x')).toBe('before');
    expect(await value(fork, 'x')).toBe('forked');
    expect((await original.files.read('f.txt')).toString()).toBe('one');
    expect((await fork.files.read('f.txt')).toString()).toBe('two');
  });

  it('restores the same session to a snapshot: names and files made since are gone', async () => {
    const target = await session();
    await target.run('x = checkpoint');
    await target.run('write kept.txt yes');
    const checkpoint = await target.snapshot();
    await target.run('x = risky');
    await target.run('z = new');
    await target.run('write later.txt no');
    const report = await target.restore(checkpoint.id);
    expect(report.contexts[0]?.restored).toEqual(['x']);
    expect(await value(target, 'x')).toBe('checkpoint');
    expect(await value(target, 'z')).toBeUndefined();
    const names = (await target.files.list('')).map((entry) => entry.path);
    expect(names).toEqual(['kept.txt']);
  });

  it('pauses: the snapshot is written, then the session ends', async () => {
    const target = await session();
    await target.run('x = paused');
    const info = await target.pause();
    expect(target.closed).toBe(true);
    await expect(target.run('x')).rejects.toBeInstanceOf(SessionClosedError);
    const resumed = await resumeSession(info.id, { backend, snapshots: store });
    sessions.push(resumed);
    expect(resumed.id).toBe(target.id);
    expect(await value(resumed, 'x')).toBe('paused');
  });

  it('waits for running code before it snapshots, and refuses after snapshotWaitMs', async () => {
    const target = await session({ snapshotWaitMs: 100 });
    await target.run('x = 1');
    const running = target.run('sleep');
    await expect(target.snapshot()).rejects.toBeInstanceOf(TimeoutError);
    await running;
    const patient = await session({ snapshotWaitMs: 5_000 });
    const slow = patient.run('sleep');
    const snapshot = patient.snapshot();
    const queuedAssignment = patient.run('y = after');
    const info = await snapshot;
    await slow;
    await queuedAssignment;
    // The snapshot took its place in the queue: the run before it is in it, the one after is not.
    expect(info.contexts[0]?.executionCount).toBe(1);
  });

  it("refuses another owner's snapshot, a tampered one, and one that does not exist, loading nothing", async () => {
    const mine = await session({ owner: 'alice' });
    await mine.run('x = secret');
    const info = await mine.snapshot();
    await expect(resumeSession(info.id, { backend, snapshots: store, owner: 'bob' })).rejects.toBeInstanceOf(
      SnapshotNotFoundError,
    );
    await expect(resumeSession('0'.repeat(32), { backend, snapshots: store, owner: 'alice' })).rejects.toBeInstanceOf(
      SnapshotNotFoundError,
    );
    // One byte of the archive changed in the store.
    const directory = findSnapshotDirectory(root, info.id);
    const archive = path.join(directory, 'sandbox.tar');
    const bytes = readFileSync(archive);
    bytes[bytes.length - 3] = (bytes[bytes.length - 3] ?? 0) ^ 1;
    writeFileSync(archive, bytes);
    const other = await session({ owner: 'alice' });
    await other.run('x = mine');
    await expect(other.restore(info.id)).rejects.toBeInstanceOf(SnapshotInvalidError);
    // Checked whole before anything was touched: the session is as it was.
    expect(await value(other, 'x')).toBe('mine');
    await expect(resumeSession(info.id, { backend, snapshots: store, owner: 'alice' })).rejects.toBeInstanceOf(
      SnapshotInvalidError,
    );
  });
});

function findSnapshotDirectory(directory: string, id: string): string {
  for (const entry of readdirSync(directory, { withFileTypes: true, recursive: true })) {
    if (entry.isDirectory() && entry.name === id) return path.join(entry.parentPath, entry.name);
  }
  throw new Error(`no snapshot ${id} under ${directory}`);
}
