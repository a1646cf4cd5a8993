/**
 * A custom environment on Docker, built for real: the environment's root
 * filesystem (runtime + python3-toolz + a wheel built here, less two of the
 * runtime's files its setup removes) as `sandcell-env-<name>:<hash>`, the
 * runtime image plus a layer of the environment's changes. Needs root and
 * Docker Engine, and the runtime image imported from this machine's runtime
 * root filesystem (what `npm run setup:docker` does offline).
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { connectDocker, createDockerBackend } from '../src/backends/docker/index.js';
import { buildEnvironment, type EnvironmentBuildResult, removeImages } from '../src/environments/build.js';
import { loadDescription } from '../src/environments/description.js';
import { environmentHash } from '../src/environments/environment-version.js';
import { collectInputs } from '../src/environments/inputs.js';
import { buildDirectory, environmentImageTag } from '../src/environments/store.js';
import { runtimeImageTag } from '../src/image/recipe.js';
import { createSession } from '../src/session/session.js';
import { withSession } from './contract/contract-support.js';
import { runSecurityContract } from './contract/security-contract.js';
import { describeWhenAvailable, unavailableReason } from './support/backends.js';
import { runProcess } from './support/process.js';
import { writeTinyWheel } from './support/tiny-wheel.js';

const BUILD_TIMEOUT_MS = 30 * 60_000;
const runtime = createDockerBackend();
const reason = process.getuid?.() === 0 ? await unavailableReason(runtime) : 'building an environment needs root';

const directory = await mkdtemp(path.join(os.tmpdir(), 'sandcell-environment-docker-'));
const store = path.join(directory, 'store');
const wheel = writeTinyWheel(directory, 'sandcell_tiny', '1.0', 'VALUE = 42\n');
const descriptionFile = path.join(directory, 'sandcell.env.json');
await writeFile(
  descriptionFile,
  JSON.stringify({
    name: 'tinydocker',
    debianPackages: ['python3-toolz'],
    python: { wheels: [path.basename(wheel)] },
    warmImports: ['sandcell_tiny'],
    // Removals of the runtime's own files: a layer has to carry them as well as additions.
    setup: ['rm -r /usr/share/doc/bash', 'rm /etc/issue.net'],
  }),
);
const loaded = await loadDescription(descriptionFile);
const hash = await environmentHash(loaded.description, await collectInputs(loaded));
const imageTag = environmentImageTag('tinydocker', hash);
let built: EnvironmentBuildResult | undefined;

const PROBE = `import sys
try:
    import sandcell_tiny, toolz
    print(sandcell_tiny.VALUE, toolz.__name__, 'sandcell_tiny' in sys.modules)
except ImportError as error:
    print('missing', error.name)`;

describeWhenAvailable('a custom environment on Docker', 'docker', reason, () => {
  const previousStore = process.env.SANDCELL_ENVIRONMENT_DIR;

  beforeAll(async () => {
    process.env.SANDCELL_ENVIRONMENT_DIR = store;
    built = await buildEnvironment({ file: descriptionFile, backend: 'docker', docker: await connectDocker() });
  }, BUILD_TIMEOUT_MS);

  afterAll(async () => {
    if (previousStore === undefined) delete process.env.SANDCELL_ENVIRONMENT_DIR;
    else process.env.SANDCELL_ENVIRONMENT_DIR = previousStore;
    if (built) await removeImages(await connectDocker(), built.name, [built.hash]);
    // The store holds a 1.9 GB root filesystem: removing it outlasts the default hook timeout on a busy machine.
    await rm(directory, { recursive: true, force: true });
  }, 600_000);

  it('builds an image named by the content', () => {
    expect(built).toMatchObject({ hash, backendRef: imageTag, reused: false });
  });

  it('a session in it has the Debian package and the wheel, imported warm; the default has neither', async () => {
    const session = await createSession({ backend: 'docker', environmentName: 'tinydocker', preloadModules: [] });
    try {
      expect((await session.run(PROBE)).stdout).toBe('42 toolz True\n');
    } finally {
      await session.close();
    }
    await withSession(runtime, { preloadModules: [] }, async (plain) => {
      expect((await plain.run(PROBE)).stdout).toBe('missing sandcell_tiny\n');
    });
  });

  it('the image is the runtime image plus a layer, and holds exactly the environment root filesystem', async () => {
    const docker = await connectDocker();
    const [environment, runtimeImage] = await Promise.all([
      docker.getImage(imageTag).inspect(),
      docker.getImage(runtimeImageTag()).inspect(),
    ]);
    const runtimeLayers = runtimeImage.RootFS.Layers ?? [];
    const layers = environment.RootFS.Layers ?? [];
    expect(layers.slice(0, runtimeLayers.length)).toEqual(runtimeLayers);
    expect(layers.length - runtimeLayers.length).toBeGreaterThan(0);
    expect(layers.length - runtimeLayers.length).toBeLessThanOrEqual(3);
    // Every path with its kind, owner, mode, size (of a file) and link target, in the image and in the tree.
    const format = '%P\t%y\t%U\t%G\t%m\t%s\t%l\n';
    const inImage = await runProcess('docker', [
      'run',
      '--rm',
      '--network',
      'none',
      '--user',
      '0:0',
      '--entrypoint',
      'find',
      imageTag,
      '/',
      '-xdev',
      '-printf',
      format,
    ]);
    expect(inImage.stderr).toBe('');
    const rootfs = path.join(buildDirectory(store, 'tinydocker', hash), 'rootfs');
    const onHost = await runProcess('find', [rootfs, '-xdev', '-printf', format]);
    expect(onHost.code).toBe(0);
    // What the engine itself puts in every container (its init layer), and the mount points it mounts over.
    const engines = /^(\.dockerenv|etc\/(hosts|hostname|resolv\.conf|mtab)|(proc|sys|dev)(\/.*)?)$/;
    const entries = (listing: string) =>
      new Set(
        listing
          .split('\n')
          .filter((line) => line !== '' && !engines.test(line.split('\t')[0] as string))
          .map((line) => {
            const [name, kind, uid, gid, mode, size, target] = line.split('\t');
            return [name, kind, uid, gid, mode, kind === 'd' ? '' : size, target].join('\t');
          }),
      );
    const image = entries(inImage.stdout);
    const tree = entries(onHost.stdout);
    expect(tree.size).toBeGreaterThan(10_000);
    expect([...image].filter((entry) => !tree.has(entry))).toEqual([]);
    expect([...tree].filter((entry) => !image.has(entry))).toEqual([]);
    expect([...tree].some((entry) => entry.startsWith('usr/share/doc/bash\t'))).toBe(false);
    expect([...tree].some((entry) => entry.startsWith('usr/lib/python3/dist-packages/toolz\t'))).toBe(true);
  });

  it('building it again unchanged is a no-op', async () => {
    const again = await buildEnvironment({ file: descriptionFile, backend: 'docker', docker: await connectDocker() });
    expect(again).toMatchObject({ hash, reused: true });
  });

  runSecurityContract({
    name: 'Docker in a custom environment',
    createBackend: () => runtime.withRoot(imageTag),
  });
});
