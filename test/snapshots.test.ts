/**
 * Snapshots in real sandboxes (bubblewrap, and Docker through the same cases):
 * what each language's kernel keeps and gives back (docs/kernel-protocol.md,
 * "Snapshots" and the "State" bullet under "Kernels"), files of /mnt/data and
 * the user site, fork, restore, pause, and refusals of a tampered snapshot or
 * another owner's. The host logic alone is in src/session/session-snapshots.test.ts.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, expect, it } from 'vitest';
import { createBubblewrapBackend } from '../src/backends/bubblewrap/index.js';
import { createDockerBackend } from '../src/backends/docker/index.js';
import type { SandboxBackend } from '../src/backends/spec.js';
import { SessionClosedError } from '../src/errors.js';
import type { RunOptions } from '../src/session/execution.js';
import { resumeSession, Session } from '../src/session/session.js';
import type { SnapshotInfo } from '../src/session/session-state.js';
import { openSnapshotStore } from '../src/snapshots/local-snapshots.js';
import {
  SnapshotInvalidError,
  SnapshotNotFoundError,
  SnapshotTooLargeError,
} from '../src/snapshots/snapshot-errors.js';
import { type SnapshotStore, snapshotOwner } from '../src/snapshots/snapshot-store.js';
import { describeWhenAvailable, unavailableReason } from './support/backends.js';

const stateDirectory = mkdtempSync(path.join(os.tmpdir(), 'sandcell-snapshots-it-'));
const store: SnapshotStore = await openSnapshotStore(stateDirectory);
afterAll(() => rmSync(stateDirectory, { recursive: true, force: true }));

/** Runs `code` and gives its stdout; an error in the code fails the test with it. */
async function run(session: Session, code: string, options: RunOptions = {}): Promise<string> {
  const execution = await session.run(code, options);
  if (execution.error) {
    throw new Error(`${execution.error.name}: ${execution.error.value}\n${execution.error.traceback.join('\n')}`);
  }
  return execution.stdout;
}

/** The error name a run ends with (undefined when it succeeds). */
async function errorOf(session: Session, code: string): Promise<string | undefined> {
  return (await session.run(code)).error?.name;
}

function archiveOf(owner: string, snapshotId: string): string {
  return path.join(stateDirectory, 'store', 'snapshots', snapshotOwner(owner), snapshotId, 'sandbox.tar');
}

// Python's state: a value of every kind, and two that cannot be pickled.
const PYTHON_STATE = `
import os, socket
import numpy as np
import pandas as pd
n = 41
s = 'text'
d = {'k': [1, 2], 'nested': {'a': 1}}
items = [1, 'two', 3.0]
df = pd.DataFrame({'a': range(200), 'b': [i * 0.5 for i in range(200)], 'c': [f'r{i}' for i in range(200)]})
arr = np.arange(12, dtype=np.int64).reshape(3, 4) * 3
factor = 3
def scale(v):
    return v * factor
square = lambda v: v * v
class Counter:
    def __init__(self, start):
        self.count = start
    def bump(self):
        self.count += 1
        return self.count
counter = Counter(5)
os.makedirs('/mnt/data/work/deeper', exist_ok=True)
os.chdir('/mnt/data/work/deeper')
os.environ['SNAP_MARK'] = 'kept'
sock = socket.socket()
gen = (i for i in range(3))
`;

const PYTHON_CHECKSUM = 'print(int(pd.util.hash_pandas_object(df).sum() % 1000003), int(arr.sum()))';

// Files in /mnt/data, in /home/user (the same directory), and a package written
// into the user site as `pip install --user` would (pip cannot reach an index here).
const FILES_STATE = `
import site, importlib
open('/mnt/data/in-data.txt', 'w').write('data file')
open('/home/user/in-home.txt', 'w').write('home file')
user_site = site.getusersitepackages()
os.makedirs(os.path.join(user_site, 'mypkg'), exist_ok=True)
open(os.path.join(user_site, 'mypkg', '__init__.py'), 'w').write('VALUE = 7\\n')
importlib.invalidate_caches()
import mypkg
print(mypkg.VALUE, user_site)
`;

const OTHER_LANGUAGES = [
  {
    language: 'r',
    state: 'rv <- c(1, 2, 3)\nrdouble <- function(a) a * 2',
    check: 'cat(sum(rdouble(rv)), "\\n")',
    expected: '12',
    names: ['rv', 'rdouble'],
  },
  {
    language: 'bash',
    state: 'greeting=hello\nshout() { echo "$1!" | tr a-z A-Z; }',
    check: 'shout "$greeting"',
    expected: 'HELLO!',
    names: ['greeting', 'shout'],
  },
  {
    language: 'javascript',
    state: 'const jsmap = new Map([[1, "one"], [2, "two"]]);\nfunction twice(k) { return k * 2; }',
    check: 'console.log(twice(jsmap.size), jsmap.get(2))',
    expected: '4 two',
    names: ['jsmap', 'twice'],
  },
] as const;

const backends: { name: string; backend: SandboxBackend }[] = [
  { name: 'bubblewrap', backend: createBubblewrapBackend() },
  { name: 'docker', backend: createDockerBackend() },
];

for (const { name, backend } of backends) {
  const reason = await unavailableReason(backend);
  describeWhenAvailable(`snapshots on ${name}`, name, reason, () => {
    snapshotCases(name, backend);
  });
}

function snapshotCases(name: string, backend: SandboxBackend): void {
  const sessions: Session[] = [];
  const shared: Session[] = [];

  async function session(options: { owner?: string } = {}): Promise<Session> {
    const created = await Session.create({ backend, snapshots: store, ...options });
    sessions.push(created);
    return created;
  }

  async function resumed(snapshotId: string, options: { owner?: string; id?: string } = {}): Promise<Session> {
    const made = await resumeSession(snapshotId, { backend, snapshots: store, ...options });
    sessions.push(made);
    return made;
  }

  afterEach(async () => {
    await Promise.all(sessions.splice(0).map((each) => each.close()));
  });
  afterAll(async () => {
    await Promise.all(shared.splice(0).map((each) => each.close()));
  });

  /**
   * One session holding Python's values, files, a user-site package and R, bash
   * and JavaScript contexts; one snapshot of it; one session resumed from it.
   * Made once, for the first three cases.
   */
  let prepared:
    | Promise<{
        original: Session;
        info: SnapshotInfo;
        copy: Session;
        checksum: string;
        userSite: string;
        lastCount: number;
      }>
    | undefined;
  function prepare() {
    prepared ??= (async () => {
      const original = await Session.create({ backend, snapshots: store });
      shared.push(original);
      await run(original, PYTHON_STATE);
      const checksum = await run(original, PYTHON_CHECKSUM);
      const [, userSite = ''] = (await run(original, FILES_STATE)).trim().split(' ');
      for (const { language, state } of OTHER_LANGUAGES) await run(original, state, { language });
      const last = await original.run('pass');
      const info = await original.snapshot();
      const copy = await resumeSession(info.id, { backend, snapshots: store, id: `${original.id}-copy` });
      shared.push(copy);
      return { original, info, copy, checksum, userSite, lastCount: last.executionCount ?? 0 };
    })();
    return prepared;
  }

  it(`python: values of every kind come back in a resumed session; a socket and a generator are named as skipped (${name})`, async () => {
    const { original, info, copy, checksum, lastCount } = await prepare();
    const python = info.contexts.find((context) => context.id === 'python');
    expect(python?.executionCount).toBe(lastCount);
    expect(python?.skipped).toEqual(
      expect.arrayContaining([
        { name: 'sock', reason: 'socket' },
        { name: 'gen', reason: 'generator' },
      ]),
    );
    // The original kept running through its snapshot.
    expect((await run(original, 'print(n)')).trim()).toBe('41');

    const report = copy.restored?.contexts.find((context) => context.id === 'python');
    const names = ['os', 'socket', 'np', 'pd', 'n', 's', 'd', 'items', 'df', 'arr', 'factor', 'scale', 'square'];
    expect(report?.restored).toEqual(expect.arrayContaining([...names, 'Counter', 'counter']));
    expect(report?.restored).not.toContain('sock');
    expect(report?.restored).not.toContain('gen');
    expect(report?.skipped).toEqual(
      expect.arrayContaining([
        { name: 'sock', reason: 'socket' },
        { name: 'gen', reason: 'generator' },
      ]),
    );
    expect(copy.restored?.snapshotId).toBe(info.id);

    // The execution count goes on from the snapshot's.
    const first = await copy.run('print(n + 1, s, d["nested"]["a"], items[1])');
    expect(first.error).toBeUndefined();
    expect(first.executionCount).toBe(lastCount + 1);
    expect(first.stdout.trim()).toBe('42 text 1 two');

    expect(await run(copy, PYTHON_CHECKSUM)).toBe(checksum);
    const recomputed =
      "pd.DataFrame({'a': range(200), 'b': [i * 0.5 for i in range(200)], 'c': [f'r{i}' for i in range(200)]})";
    expect((await run(copy, `print(df.equals(${recomputed}), type(df).__module__.split('.')[0])`)).trim()).toBe(
      'True pandas',
    );
    expect(
      (await run(copy, 'print(type(arr).__name__, arr.dtype, arr.shape, arr[2, 3], np.__name__, pd.__name__)')).trim(),
    ).toBe('ndarray int64 (3, 4) 33 numpy pandas');
    // The function reads the global as it is now, not a copy taken at the snapshot.
    expect((await run(copy, 'print(scale(2), square(9))')).trim()).toBe('6 81');
    expect((await run(copy, 'factor = 10\nprint(scale(2))')).trim()).toBe('20');
    expect((await run(copy, 'print(isinstance(counter, Counter), counter.bump(), Counter(1).bump())')).trim()).toBe(
      'True 6 2',
    );
    expect((await run(copy, "print(os.getcwd(), os.environ.get('SNAP_MARK'))")).trim()).toBe(
      '/mnt/data/work/deeper kept',
    );
    expect(await errorOf(copy, 'sock')).toBe('NameError');
    expect(await errorOf(copy, 'gen')).toBe('NameError');
  });

  it(`files: /mnt/data, /home/user and a package in the user site come back (${name})`, async () => {
    const { copy, userSite } = await prepare();
    expect(userSite).not.toBe('');
    expect(copy.restored?.contexts.find((context) => context.id === 'python')?.restored).toContain('mypkg');
    // Restored as a name: no import needed.
    expect((await run(copy, 'print(mypkg.VALUE, mypkg.__file__)')).trim()).toBe(`7 ${userSite}/mypkg/__init__.py`);
    expect((await run(copy, 'import mypkg as again\nprint(again.VALUE)')).trim()).toBe('7');
    expect(
      (
        await run(
          copy,
          "print(open('/mnt/data/in-data.txt').read(), open('/home/user/in-home.txt').read(), open('/mnt/data/in-home.txt').read(), sep='|')",
        )
      ).trim(),
    ).toBe('data file|home file|home file');
    expect((await copy.files.read('in-data.txt')).toString()).toBe('data file');
    // A fresh Python process (not the restored kernel) finds the package too: it is on disk, not only in memory.
    expect(
      (
        await run(
          copy,
          'import subprocess, sys\nprint(subprocess.run([sys.executable, "-c", "import mypkg; print(mypkg.VALUE)"], capture_output=True, text=True).stdout)',
        )
      ).trim(),
    ).toBe('7');
  });

  it(`R, bash and JavaScript contexts come back with a variable and a function each (${name})`, async () => {
    const { info, copy } = await prepare();
    expect(info.contexts.map((context) => [context.id, context.language])).toEqual(
      expect.arrayContaining([
        ['python', 'python'],
        ['r', 'r'],
        ['bash', 'bash'],
        ['javascript', 'javascript'],
      ]),
    );
    const reported = copy.restored?.contexts ?? [];
    expect(reported.map((context) => context.id).sort()).toEqual(['bash', 'javascript', 'python', 'r']);
    expect(
      copy
        .listContexts()
        .map((context) => context.id)
        .sort(),
    ).toEqual(['bash', 'javascript', 'python', 'r']);
    for (const { language, check, expected, names } of OTHER_LANGUAGES) {
      const context = reported.find((each) => each.id === language);
      expect(context?.language, language).toBe(language);
      expect(context?.restored, language).toEqual(expect.arrayContaining([...names]));
      expect((await run(copy, check, { language })).trim(), language).toBe(expected);
    }
  });

  it(`fork: Python's state streams through a pipe beside the archive of the files and the other languages' state (${name})`, async () => {
    const { original, checksum, userSite } = await prepare();
    const counted = (await original.run('pass')).executionCount ?? 0;
    const fork = await original.fork();
    sessions.push(fork);
    const reported = fork.restored?.contexts ?? [];
    expect(reported.map((context) => context.id).sort()).toEqual(['bash', 'javascript', 'python', 'r']);
    const python = reported.find((context) => context.id === 'python');
    expect(python?.restored).toEqual(expect.arrayContaining(['df', 'arr', 'scale', 'Counter', 'counter', 'mypkg']));
    expect(python?.skipped).toEqual(
      expect.arrayContaining([
        { name: 'sock', reason: 'socket' },
        { name: 'gen', reason: 'generator' },
      ]),
    );
    expect(await run(fork, PYTHON_CHECKSUM)).toBe(checksum);
    expect((await run(fork, "import os\nprint(os.getcwd(), os.environ['SNAP_MARK'], counter.bump())")).trim()).toBe(
      '/mnt/data/work/deeper kept 6',
    );
    expect((await run(fork, 'print(mypkg.VALUE, mypkg.__file__)')).trim()).toBe(`7 ${userSite}/mypkg/__init__.py`);
    // Its execution count goes on from the original's (three runs above).
    expect((await fork.run('pass')).executionCount).toBe(counted + 4);
    for (const { language, check, expected } of OTHER_LANGUAGES) {
      expect((await run(fork, check, { language })).trim(), language).toBe(expected);
    }
    expect((await fork.files.read('in-data.txt')).toString()).toBe('data file');
  });

  it(`fork: the fork and the original change the same variable and file independently (${name})`, async () => {
    const original = await session();
    await run(original, "x = 'before'\nopen('/mnt/data/shared.txt', 'w').write('one')");
    const fork = await original.fork();
    sessions.push(fork);
    expect(fork.id).not.toBe(original.id);
    expect(fork.restored?.snapshotId).toBeUndefined();
    expect(fork.restored?.contexts[0]?.restored).toContain('x');
    await run(fork, "x = 'forked'\nopen('/mnt/data/shared.txt', 'w').write('two')");
    await run(original, "x = 'original'\nopen('/mnt/data/shared.txt', 'w').write('three')");
    const read = "print(x, open('/mnt/data/shared.txt').read())";
    expect((await run(original, read)).trim()).toBe('original three');
    expect((await run(fork, read)).trim()).toBe('forked two');
    expect((await fork.files.read('shared.txt')).toString()).toBe('two');
    expect((await original.files.read('shared.txt')).toString()).toBe('three');
  });

  it(`restore rolls back: what was made after the snapshot goes, what was before comes back (${name})`, async () => {
    const target = await session();
    await run(target, "x = 1\nopen('/mnt/data/kept.txt', 'w').write('checkpoint')");
    const checkpoint = await target.snapshot();
    await run(
      target,
      "x = 2\ny = 3\nopen('/mnt/data/kept.txt', 'w').write('changed')\nopen('/mnt/data/later.txt', 'w').write('later')",
    );
    await target.run('a <- 5', { language: 'r' });
    const report = await target.restore(checkpoint.id);
    expect(report.snapshotId).toBe(checkpoint.id);
    expect(report.contexts.map((context) => context.id)).toEqual(['python']);
    expect(target.listContexts().map((context) => context.id)).toEqual(['python']);
    expect(
      (
        await run(
          target,
          "import os\nprint(x, open('/mnt/data/kept.txt').read(), os.path.exists('/mnt/data/later.txt'))",
        )
      ).trim(),
    ).toBe('1 checkpoint False');
    expect(await errorOf(target, 'y')).toBe('NameError');
    expect((await target.files.list('')).map((entry) => entry.path)).not.toContain('later.txt');
  });

  it(`pause ends the session; resumeSession brings it back under the same id (${name})`, async () => {
    const target = await session();
    await run(target, "x = 'paused'\nopen('/mnt/data/paused.txt', 'w').write('file')");
    const info = await target.pause();
    expect(target.closed).toBe(true);
    await expect(target.run('x')).rejects.toBeInstanceOf(SessionClosedError);
    // At once, as a caller would: pause() has resolved, so the session is gone.
    const back = await resumed(info.id);
    expect(back.id).toBe(target.id);
    expect((await run(back, "print(x, open('/mnt/data/paused.txt').read())")).trim()).toBe('paused file');
  });

  it(`a snapshot or pause past maxBytes fails, keeps nothing and leaves the session running (${name})`, async () => {
    const owner = `bounded-${name}`;
    const target = await session({ owner });
    await run(target, "import os\nx = 'still here'\nopen('/mnt/data/big.bin', 'wb').write(os.urandom(3 << 20))");
    // Canary: within a bound it fits, the same session snapshots.
    const fits = await target.snapshot({ maxBytes: 8 << 20 });
    expect(fits.bytes).toBeGreaterThan(3 << 20);
    await expect(target.snapshot({ maxBytes: 1 << 20 })).rejects.toBeInstanceOf(SnapshotTooLargeError);
    await expect(target.pause({ maxBytes: 1 << 20 })).rejects.toBeInstanceOf(SnapshotTooLargeError);
    expect(target.closed).toBe(false);
    expect((await run(target, 'print(x)')).trim()).toBe('still here');
    // Only the snapshot that fitted is in the store, nothing of the refused ones.
    expect((await store.list(owner)).map((manifest) => manifest.id)).toEqual([fits.id]);
    const ownerDirectory = path.join(stateDirectory, 'store', 'snapshots', snapshotOwner(owner));
    expect(readdirSync(ownerDirectory)).toEqual([fits.id]);
  });

  it(`refuses a tampered snapshot (leaving the session as it was) and another owner's, after the untampered one resumes (${name})`, async () => {
    const mine = await session({ owner: 'alice' });
    await run(mine, "x = 'secret'");
    const info = await mine.snapshot();
    await mine.close();

    // Canary: the snapshot as written resumes for its owner, so a refusal below is the tampering's.
    const canary = await resumed(info.id, { owner: 'alice', id: 'alice-canary' });
    expect((await run(canary, 'print(x)')).trim()).toBe('secret');

    // Another owner is told it does not exist, by resume and by restore.
    await expect(
      resumeSession(info.id, { backend, snapshots: store, owner: 'bob', id: 'bob-resume' }),
    ).rejects.toBeInstanceOf(SnapshotNotFoundError);
    const bobs = await session({ owner: 'bob' });
    await run(bobs, "x = 'bob'");
    await expect(bobs.restore(info.id)).rejects.toBeInstanceOf(SnapshotNotFoundError);
    expect((await run(bobs, 'print(x)')).trim()).toBe('bob');

    // One byte of the stored archive changed: `secret` in the pickle becomes `Secret`.
    const archive = archiveOf('alice', info.id);
    const bytes = readFileSync(archive);
    const at = bytes.indexOf('secret');
    expect(at).toBeGreaterThan(0);
    bytes[at] = (bytes[at] ?? 0) ^ 0x20;
    writeFileSync(archive, bytes);

    const other = await session({ owner: 'alice' });
    await run(other, "import os\nx = 'mine'\nopen('/mnt/data/mine.txt', 'w').write('untouched')\npid = os.getpid()");
    await expect(other.restore(info.id)).rejects.toBeInstanceOf(SnapshotInvalidError);
    // Nothing touched: the same kernel process, its names and its files.
    expect((await run(other, "print(x, open('/mnt/data/mine.txt').read(), os.getpid() == pid)")).trim()).toBe(
      'mine untouched True',
    );
    await expect(
      resumeSession(info.id, { backend, snapshots: store, owner: 'alice', id: 'alice-tampered' }),
    ).rejects.toBeInstanceOf(SnapshotInvalidError);
  });
}
