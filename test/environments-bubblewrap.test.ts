/**
 * A custom environment on bubblewrap, built for real: the runtime root
 * filesystem plus a Debian package the runtime does not have (python3-toolz),
 * a wheel built here, a copied file, a warm import, a variable and a setup
 * command that appends to one of the runtime's files. Builds are slow (apt),
 * so one build serves every check; a second, offline one fails in its setup.
 */
import { createHash } from 'node:crypto';
import { chmod, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createBubblewrapBackend } from '../src/backends/bubblewrap/index.js';
import { buildEnvironment, type EnvironmentBuildResult } from '../src/environments/build.js';
import { loadDescription } from '../src/environments/description.js';
import { environmentHash } from '../src/environments/environment-version.js';
import { collectInputs } from '../src/environments/inputs.js';
import { buildDirectory, readRecord } from '../src/environments/store.js';
import { ImageBuildError } from '../src/errors.js';
import { runtimeRootfsDirectory } from '../src/image/recipe.js';
import { buildRuntimeRootfs } from '../src/image/rootfs.js';
import { createSession } from '../src/session/session.js';
import { withSession } from './contract/contract-support.js';
import { runSecurityContract } from './contract/security-contract.js';
import { describeWhenAvailable, unavailableReason } from './support/backends.js';
import { writeTinyWheel } from './support/tiny-wheel.js';

const BUILD_TIMEOUT_MS = 20 * 60_000;
const runtime = createBubblewrapBackend({ rootfs: 'runtime' });
const reason = process.getuid?.() === 0 ? await unavailableReason(runtime) : 'building an environment needs root';

// The description, its files and its store, set up before the suite so the build's root filesystem has a known path.
const directory = await mkdtemp(path.join(os.tmpdir(), 'sandcell-environment-'));
// The sandboxes' uids reach the environment's /usr through it, as they reach /var/lib/sandcell.
await chmod(directory, 0o755);
const store = path.join(directory, 'store');
const wheel = writeTinyWheel(directory, 'sandcell_tiny', '1.0', 'VALUE = 42\n');
await writeFile(path.join(directory, 'hello.txt'), 'hello from the environment\n');
const descriptionFile = path.join(directory, 'sandcell.env.json');
await writeFile(
  descriptionFile,
  JSON.stringify({
    name: 'tinytest',
    debianPackages: ['python3-toolz'],
    python: { wheels: [path.basename(wheel)] },
    files: [{ source: 'hello.txt', target: '/usr/share/tinytest/hello.txt' }],
    warmImports: ['sandcell_tiny'],
    env: { TINYTEST_MODE: 'on' },
    // Written in place: through a hard link this would change the runtime's own file.
    setup: [`echo 'SANDCELL_TINYTEST=appended' >> /usr/lib/os-release`],
  }),
);
const loaded = await loadDescription(descriptionFile);
const hash = await environmentHash(loaded.description, await collectInputs(loaded));
const rootfs = path.join(buildDirectory(store, 'tinytest', hash), 'rootfs');
const environmentBackend = createBubblewrapBackend({ rootfs });

const PROBE = `import os, sys
print('sandcell_tiny' in sys.modules, 'sandcell_tiny' in globals())
try:
    import sandcell_tiny, toolz
    print(sandcell_tiny.VALUE, toolz.__name__)
except ImportError as error:
    print('missing', error.name)
print(open('/usr/share/tinytest/hello.txt').read().strip() if os.path.exists('/usr/share/tinytest/hello.txt') else 'no file')
print(os.environ.get('TINYTEST_MODE'))`;

describeWhenAvailable('a custom environment on bubblewrap', 'bubblewrap-rootfs', reason, () => {
  let built: EnvironmentBuildResult;
  const progress: string[] = [];
  const previousStore = process.env.SANDCELL_ENVIRONMENT_DIR;
  /** Files of the runtime the layer writes to, in place or by apt, and their bytes before the build. */
  const RUNTIME_FILES = ['usr/lib/os-release', 'var/lib/dpkg/status', 'var/log/dpkg.log'];
  const runtimeBefore = new Map<string, string>();
  const digest = async (file: string) =>
    createHash('sha256')
      .update(await readFile(file))
      .digest('hex');

  beforeAll(async () => {
    process.env.SANDCELL_ENVIRONMENT_DIR = store;
    if (!reason) {
      // The runtime first (built if missing, as the build would), to know its files before the layer runs.
      await buildRuntimeRootfs({});
      for (const file of RUNTIME_FILES)
        runtimeBefore.set(file, await digest(path.join(runtimeRootfsDirectory(), file)));
    }
    built = await buildEnvironment({
      file: descriptionFile,
      backend: 'bubblewrap',
      onProgress: (entry) => progress.push(entry.stage),
    });
  }, BUILD_TIMEOUT_MS);

  afterAll(async () => {
    if (previousStore === undefined) delete process.env.SANDCELL_ENVIRONMENT_DIR;
    else process.env.SANDCELL_ENVIRONMENT_DIR = previousStore;
    await rm(directory, { recursive: true, force: true });
  }, 600_000);

  it('builds the description into a root filesystem named by its content', () => {
    expect(built).toMatchObject({ name: 'tinytest', hash, backend: 'bubblewrap', backendRef: rootfs, reused: false });
  });

  it("reaches the apt archive through the build's network gate", () => {
    expect(progress).toContainEqual(expect.stringMatching(/^network gate: request to deb\.debian\.org:80 /));
  });

  it('a session in it has the Debian package, the wheel (imported warm), the file and the variable', async () => {
    const session = await createSession({ backend: 'bubblewrap', environmentName: 'tinytest', preloadModules: [] });
    try {
      expect(session.environment).toMatchObject({ name: 'tinytest', hash, backendRef: rootfs });
      const execution = await session.run(PROBE);
      expect(execution.error).toBeUndefined();
      expect(execution.stdout).toBe('True True\n42 toolz\nhello from the environment\non\n');
    } finally {
      await session.close();
    }
  });

  it('a session in the default environment has none of it', async () => {
    await withSession(runtime, { preloadModules: [] }, async (session) => {
      const execution = await session.run(PROBE);
      expect(execution.stdout).toBe('False False\nmissing sandcell_tiny\nno file\nNone\n');
    });
  });

  it("shares the runtime's unchanged files, never writes to them, and costs about its own size", async () => {
    const runtime = runtimeRootfsDirectory();
    // The runtime's files are as they were, though the layer appended to one and apt rewrote two.
    for (const file of RUNTIME_FILES)
      expect(await digest(path.join(runtime, file)), file).toBe(runtimeBefore.get(file));
    expect(await readFile(path.join(rootfs, 'usr/lib/os-release'), 'utf8')).toMatch(/SANDCELL_TINYTEST=appended\n$/);
    expect(await readFile(path.join(rootfs, 'var/lib/dpkg/status'), 'utf8')).toContain('Package: python3-toolz');
    // An unchanged file is the runtime's own, not a copy.
    const numpy = 'usr/lib/python3/dist-packages/numpy/__init__.py';
    expect((await stat(path.join(rootfs, numpy))).ino).toBe((await stat(path.join(runtime, numpy))).ino);
    const record = await readRecord(store, 'tinytest', hash);
    expect(record?.builds.bubblewrap?.sizeBytes).toBeLessThan(200 * 2 ** 20);
  });

  it('building the unchanged description again is a no-op', async () => {
    const again = await buildEnvironment({ file: descriptionFile, backend: 'bubblewrap' });
    expect(again).toMatchObject({ hash, reused: true });
  });

  it(
    "a package that does not exist fails the build with apt's message and leaves nothing behind",
    async () => {
      const broken = path.join(directory, 'broken.env.json');
      await writeFile(broken, JSON.stringify({ name: 'brokentest', debianPackages: ['sandcell-no-such-package'] }));
      const attempt = buildEnvironment({ file: broken, backend: 'bubblewrap' });
      await expect(attempt).rejects.toThrow(ImageBuildError);
      await expect(attempt).rejects.toThrow(/Unable to locate package sandcell-no-such-package/);
      expect(await readdir(path.join(store, 'brokentest')).catch(() => [])).toEqual([]);
    },
    BUILD_TIMEOUT_MS,
  );

  it(
    'a failing setup command fails the build naming it, its exit status and its last lines, shown as they came',
    async () => {
      const file = path.join(directory, 'failing.env.json');
      const lines = Array.from({ length: 30 }, (_, index) => `line ${index + 1}`);
      await writeFile(
        file,
        JSON.stringify({
          name: 'failingsetup',
          network: 'none',
          setup: ['echo first', `printf '%s\\n' ${lines.map((line) => `'${line}'`).join(' ')}; exit 7`],
        }),
      );
      const shown: string[] = [];
      const attempt = buildEnvironment({
        file,
        backend: 'bubblewrap',
        onProgress: (entry) => {
          if (entry.output !== undefined) shown.push(entry.output);
        },
      });
      await expect(attempt).rejects.toThrow(ImageBuildError);
      const message = await attempt.catch((error: Error) => error.message);
      expect(message).toMatch(
        /^The environment build failed: setup command 2 of 2 exited with status 7:\n {2}printf '%s\\n' 'line 1' 'line 2'/,
      );
      expect(message).toContain('Its last lines of output:\n  line 11\n');
      expect(message).toMatch(/line 30$/);
      expect(message).not.toContain('line 10\n');
      expect(shown).toEqual(['first', ...lines]);
      expect(await readdir(path.join(store, 'failingsetup')).catch(() => [])).toEqual([]);
    },
    BUILD_TIMEOUT_MS,
  );

  runSecurityContract({ name: 'bubblewrap in a custom environment', createBackend: () => environmentBackend });
});
