/**
 * Python packages from the index this machine's pip is configured for, locked, on real bubblewrap
 * through the build's real gate: examples/environment-python (yaspin, which Debian does not ship,
 * and termcolor, which it needs) built from a copy without its lock. The first build resolves,
 * writes the lock and keeps the files in the wheel cache; a second is a no-op; "another machine"
 * (another store, the same cache, the CLI with pip's index pointed at a closed port) builds the same
 * environment without a connection; an offline description builds from the lock and the cache, and
 * says what is missing without the cache; a changed requirement resolves again; a lock pinning a
 * hash the index has no file for fails, naming the package.
 */
import { chmod, copyFile, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { createBubblewrapBackend } from '../src/backends/bubblewrap/index.js';
import { buildEnvironment, type EnvironmentBuildResult } from '../src/environments/build.js';
import { lockFilePath, type PythonLock, readLock } from '../src/environments/python-lock.js';
import { cachedFile } from '../src/environments/wheel-cache.js';
import { ImageBuildError, InvalidInputError } from '../src/errors.js';
import { withSession } from './contract/contract-support.js';
import { describeWhenAvailable, unavailableReason } from './support/backends.js';
import { runProcess } from './support/process.js';
import { freePort, root } from './support/readme.js';

const BUILD_TIMEOUT_MS = 10 * 60_000;
const runtime = createBubblewrapBackend({ rootfs: 'runtime' });
const reason = process.getuid?.() === 0 ? await unavailableReason(runtime) : 'building an environment needs root';

const directory = await mkdtemp(path.join(os.tmpdir(), 'sandcell-python-lock-'));
// The sandboxes' uids reach the environment's /usr through it, as they reach /var/lib/sandcell.
await chmod(directory, 0o755);
const cache = path.join(directory, 'wheels');

/** A copy of the example's description and requirements (not its lock) in `name`, with `change` applied. */
async function project(name: string, change: Record<string, unknown> = {}): Promise<string> {
  const target = path.join(directory, name);
  await mkdir(target, { recursive: true });
  const example = path.join(root, 'examples', 'environment-python');
  const description = JSON.parse(await readFile(path.join(example, 'sandcell.env.json'), 'utf8'));
  await writeFile(path.join(target, 'sandcell.env.json'), JSON.stringify({ ...description, ...change }));
  await copyFile(path.join(example, 'requirements.txt'), path.join(target, 'requirements.txt'));
  return path.join(target, 'sandcell.env.json');
}

const CHECK = `from importlib.metadata import version
import termcolor, yaspin
print(yaspin.__name__, version("yaspin"), termcolor.__name__, version("termcolor"))`;

describeWhenAvailable("an environment's Python lock and wheel cache", 'bubblewrap-rootfs', reason, () => {
  let file: string;
  let first: EnvironmentBuildResult;
  let lock: PythonLock;
  afterAll(() => rm(directory, { recursive: true, force: true }), 600_000);

  it(
    'the first build resolves, writes the lock and keeps its files; the environment has what it pins',
    async () => {
      file = await project('first');
      const progress: string[] = [];
      first = await buildEnvironment({
        file,
        backend: 'bubblewrap',
        storeDirectory: path.join(directory, 'store-a'),
        wheelCache: cache,
        onProgress: (entry) => progress.push(`${entry.stage} ${entry.detail ?? ''}`),
      });
      expect(first.pythonLock).toEqual({ file: lockFilePath(file), files: 2, written: true });
      lock = (await readLock(file)) as PythonLock;
      expect(lock.files.map((entry) => entry.name)).toEqual(['termcolor', 'yaspin']);
      for (const entry of lock.files) {
        expect(entry.filename).toMatch(new RegExp(`^${entry.name}-${entry.version.replace(/\./g, '\\.')}-.*\\.whl$`));
        expect(await cachedFile(cache, entry)).toBeDefined();
      }
      // Through the gate, to the index pip names.
      expect(progress).toContainEqual(expect.stringMatching(/^network gate: tunnel to /));
      const [termcolor, yaspin] = lock.files;
      await withSession(createBubblewrapBackend({ rootfs: first.backendRef }), {}, async (session) => {
        const execution = await session.run(CHECK);
        expect(execution.error).toBeUndefined();
        expect(execution.stdout).toBe(`yaspin ${yaspin?.version} termcolor ${termcolor?.version}\n`);
      });
      // The runtime itself has neither.
      await withSession(runtime, {}, async (session) => {
        expect((await session.run('print(1 + 1)')).stdout).toBe('2\n');
        expect((await session.run('import yaspin')).error?.name).toBe('ModuleNotFoundError');
      });
      const written = await readFile(lockFilePath(file), 'utf8');
      const again = await buildEnvironment({
        file,
        backend: 'bubblewrap',
        storeDirectory: path.join(directory, 'store-a'),
        wheelCache: cache,
      });
      expect(again).toMatchObject({ hash: first.hash, reused: true, pythonLock: { written: false } });
      expect(await readFile(lockFilePath(file), 'utf8')).toBe(written);
    },
    BUILD_TIMEOUT_MS,
  );

  it(
    'another machine with the lock and the cache builds the same environment with no index to reach',
    async () => {
      const closed = await freePort();
      const built = await runProcess(
        process.execPath,
        [path.join(root, 'bin', 'sandcell.js'), 'env', 'build', '--wheel-cache', cache, file],
        {
          env: {
            SANDCELL_ENVIRONMENT_DIR: path.join(directory, 'store-b'),
            PIP_INDEX_URL: `https://127.0.0.1:${closed}/simple/`,
            PIP_EXTRA_INDEX_URL: '',
          },
        },
      );
      expect(built.code, built.stderr).toBe(0);
      expect(built.stdout).toMatch(
        new RegExp(`^Built in \\d+ s: environment spinner \\(${first.hash}\\) for bubblewrap`),
      );
      expect(built.stdout).toContain(`Installed as ${lockFilePath(file)} pins: 2 Python package files from the index.`);
      // The gate was open (for apt and the index), and nothing went through it.
      expect(built.stderr).toContain(`host.sandcell.internal:${closed}`);
      expect(built.stderr).not.toMatch(/network gate: (tunnel|request) to/);
    },
    BUILD_TIMEOUT_MS,
  );

  it(
    'offline, a lock and its cache are enough; without the cache the build says what is missing',
    async () => {
      const offline = await project('offline', { network: 'none' });
      await copyFile(lockFilePath(file), lockFilePath(offline));
      const built = await buildEnvironment({
        file: offline,
        backend: 'bubblewrap',
        storeDirectory: path.join(directory, 'store-c'),
        wheelCache: cache,
      });
      expect(built.pythonLock).toEqual({ file: lockFilePath(offline), files: 2, written: false });
      await withSession(createBubblewrapBackend({ rootfs: built.backendRef }), {}, async (session) => {
        expect((await session.run(CHECK)).stdout).toMatch(/^yaspin \S+ termcolor \S+\n$/);
      });
      const refused = buildEnvironment({
        file: offline,
        backend: 'bubblewrap',
        storeDirectory: path.join(directory, 'store-d'),
        wheelCache: path.join(directory, 'empty-cache'),
      });
      await expect(refused).rejects.toThrow(InvalidInputError);
      await expect(refused).rejects.toThrow(/lacks 2 of the files .*sandcell\.env\.lock pins .*--wheel-cache DIR/);
    },
    BUILD_TIMEOUT_MS,
  );

  it(
    'a changed requirement resolves again; a lock pinning a file the index does not have fails, naming it',
    async () => {
      const changed = await project('changed');
      await writeFile(path.join(path.dirname(changed), 'requirements.txt'), 'yaspin>=3\ntermcolor<3\n');
      await copyFile(lockFilePath(file), lockFilePath(changed));
      const built = await buildEnvironment({
        file: changed,
        backend: 'bubblewrap',
        storeDirectory: path.join(directory, 'store-e'),
        wheelCache: cache,
      });
      expect(built.pythonLock?.written).toBe(true);
      expect(built.hash).not.toBe(first.hash);
      const relocked = (await readLock(changed)) as PythonLock;
      expect(relocked.inputs).not.toBe(lock.inputs);
      expect(relocked.files.find((entry) => entry.name === 'termcolor')?.version).toMatch(/^2\./);
      // --relock resolves the unchanged description again, whatever its lock says.
      const again = await buildEnvironment({
        file: changed,
        backend: 'bubblewrap',
        storeDirectory: path.join(directory, 'store-e'),
        wheelCache: cache,
        relock: true,
      });
      expect(again.pythonLock?.written).toBe(true);
      expect(await readLock(changed)).toEqual(relocked);

      // The same inputs, one hash changed: the lock holds, the cache has no such file, the index neither.
      const forged = await project('forged');
      const text = await readFile(lockFilePath(file), 'utf8');
      const termcolor = lock.files[0]?.sha256 as string;
      await writeFile(lockFilePath(forged), text.replace(termcolor, 'f'.repeat(64)));
      const failed = buildEnvironment({
        file: forged,
        backend: 'bubblewrap',
        storeDirectory: path.join(directory, 'store-f'),
        wheelCache: cache,
      });
      await expect(failed).rejects.toThrow(ImageBuildError);
      await expect(failed).rejects.toThrow(/downloading locked Python packages[\s\S]*termcolor/);
    },
    BUILD_TIMEOUT_MS,
  );
});
