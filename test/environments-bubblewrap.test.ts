/**
 * A custom environment on bubblewrap, built for real: the runtime root
 * filesystem plus a Debian package the runtime does not have (python3-toolz),
 * a wheel built here, a copied file, a warm import and a variable. Builds are
 * slow (a copy of the runtime, apt), so one build serves every check.
 */
import { chmod, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createBubblewrapBackend } from '../src/backends/bubblewrap/index.js';
import { buildEnvironment, type EnvironmentBuildResult } from '../src/environments/build.js';
import { loadDescription } from '../src/environments/description.js';
import { environmentHash } from '../src/environments/environment-version.js';
import { collectInputs } from '../src/environments/inputs.js';
import { buildDirectory } from '../src/environments/store.js';
import { ImageBuildError } from '../src/errors.js';
import { createSession } from '../src/session/session.js';
import { withSession } from './contract/backend-contract.js';
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
  }),
);
const loaded = await loadDescription(descriptionFile);
const hash = await environmentHash(loaded.description, await collectInputs(loaded));
const rootfs = path.join(buildDirectory(store, 'tinytest', hash), 'rootfs');
const environmentBackend = createBubblewrapBackend({ rootfs });

const PROBE = `import os, sys
print('sandcell_tiny' in sys.modules)
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

  beforeAll(async () => {
    process.env.SANDCELL_ENVIRONMENT_DIR = store;
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
      expect(execution.stdout).toBe('True\n42 toolz\nhello from the environment\non\n');
    } finally {
      await session.close();
    }
  });

  it('a session in the default environment has none of it', async () => {
    await withSession(runtime, { preloadModules: [] }, async (session) => {
      const execution = await session.run(PROBE);
      expect(execution.stdout).toBe('False\nmissing sandcell_tiny\nno file\nNone\n');
    });
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

  runSecurityContract({ name: 'bubblewrap in a custom environment', createBackend: () => environmentBackend });
});
