/**
 * Environments from images sandcell did not build, on real Docker: a
 * "foreign" image (the runtime with sandcell's kernel files removed) is
 * registered with `env add --image`'s function, and a session runs in it with
 * the kernel files mounted in; an image without IPython is refused, naming
 * the fix, with nothing registered; a Dockerfile environment (FROM the
 * runtime, plus a file under /usr/share) builds and a session sees its file.
 * Needs Docker Engine and the runtime image (`sandcell image build`).
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type Dockerode from 'dockerode';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { connectDocker, createDockerBackend } from '../src/backends/docker/index.js';
import { removeImages } from '../src/environments/build.js';
import { buildDockerfileEnvironment } from '../src/environments/build-dockerfile.js';
import { registerImageEnvironment } from '../src/environments/register-image.js';
import { listEnvironments, resolveEnvironment } from '../src/environments/store.js';
import type { Environment } from '../src/environments/types.js';
import { InvalidInputError, LanguageUnavailableError } from '../src/errors.js';
import { runtimeImageTag } from '../src/image/recipe.js';
import { createSession } from '../src/session/session.js';
import { withSession } from './contract/contract-support.js';
import { runSecurityContract } from './contract/security-contract.js';
import { describeWhenAvailable, unavailableReason } from './support/backends.js';
import { buildTestImage, removeTestImage } from './support/test-images.js';

const BUILD_TIMEOUT_MS = 10 * 60_000;
const runtime = createDockerBackend();
const reason = await unavailableReason(runtime);

const directory = await mkdtemp(path.join(os.tmpdir(), 'sandcell-environment-image-'));
const store = path.join(directory, 'store');
const FOREIGN = 'sandcell-test-foreign:1';
const NO_IPYTHON = 'sandcell-test-no-ipython:1';
const NO_NODE = 'sandcell-test-no-node:1';

/** The runtime without sandcell's files: what an image sandcell did not build looks like to it. */
const FOREIGN_DOCKERFILE = `FROM ${runtimeImageTag()}
USER 0:0
RUN rm -rf /opt/sandcell
USER 1000:1000
`;
const NO_IPYTHON_DOCKERFILE = `FROM ${FOREIGN}
USER 0:0
RUN rm -rf /usr/lib/python3/dist-packages/IPython
`;
const NO_NODE_DOCKERFILE = `FROM ${FOREIGN}
USER 0:0
RUN rm -f /usr/bin/node /usr/bin/nodejs
`;
const EXTRA_DOCKERFILE = `ARG SANDCELL_RUNTIME
FROM \${SANDCELL_RUNTIME}
USER 0:0
COPY note.txt /usr/share/sandcell-extra/note.txt
`;
const PROBE = `import os
print(os.path.exists('/opt/sandcell/sandcell_kernel.py'), open('/usr/share/sandcell-extra/note.txt').read().strip() if os.path.exists('/usr/share/sandcell-extra/note.txt') else 'no note')`;

// Built and registered before the suites are collected: the security contract needs its backend then.
const previousStore = process.env.SANDCELL_ENVIRONMENT_DIR;
let docker: Dockerode | undefined;
let foreign: Environment | undefined;
if (!reason) {
  docker = await connectDocker();
  await buildTestImage(docker, FOREIGN, FOREIGN_DOCKERFILE);
  await buildTestImage(docker, NO_IPYTHON, NO_IPYTHON_DOCKERFILE);
  await buildTestImage(docker, NO_NODE, NO_NODE_DOCKERFILE);
  await registerImageEnvironment({ name: 'foreign', image: FOREIGN, docker, storeDirectory: store });
  foreign = await resolveEnvironment('foreign', { backend: 'docker', storeDirectory: store });
}

describeWhenAvailable('environments from existing Docker images', 'docker', reason, () => {
  const engine = docker as Dockerode;
  beforeAll(() => {
    process.env.SANDCELL_ENVIRONMENT_DIR = store;
  });

  afterAll(async () => {
    if (previousStore === undefined) delete process.env.SANDCELL_ENVIRONMENT_DIR;
    else process.env.SANDCELL_ENVIRONMENT_DIR = previousStore;
    for (const record of await listEnvironments(store)) await removeImages(engine, record.name, [record.hash]);
    await removeTestImage(engine, NO_IPYTHON);
    await removeTestImage(engine, NO_NODE);
    await removeTestImage(engine, FOREIGN);
    await rm(directory, { recursive: true, force: true });
  });

  it('registers the image by its content id, unmodified, and registering it again is a no-op', async () => {
    const image = await engine.getImage(FOREIGN).inspect();
    const environment = await resolveEnvironment('foreign', { backend: 'docker' });
    expect(environment.hash).toBe(image.Id.replace('sha256:', '').slice(0, 12));
    expect(environment.rootOptions?.mountedKernel?.python).toBe('/usr/bin/python3');
    expect((await engine.getImage(environment.backendRef as string).inspect()).Id).toBe(image.Id);
    const again = await registerImageEnvironment({ name: 'foreign', image: FOREIGN, docker: engine });
    expect(again).toMatchObject({ hash: environment.hash, reused: true });
    const [record] = await listEnvironments(store);
    expect(record?.image).toMatchObject({ source: FOREIGN, kind: 'image', id: image.Id });
    expect(record?.image?.languages).toEqual(['python', 'javascript', 'typescript', 'bash', 'r']);
  });

  it('a session in it runs code with the kernel mounted in, keeps state and writes /mnt/data', async () => {
    const session = await createSession({ backend: 'docker', environmentName: 'foreign', preloadModules: [] });
    try {
      expect((await session.run('x = 6 * 7')).status).toBe('ok');
      expect((await session.run('print(x)')).stdout).toBe('42\n');
      await session.run("open('/mnt/data/out.txt', 'w').write('kept')");
      expect((await session.files.read('out.txt')).toString()).toBe('kept');
      expect((await session.run(PROBE)).stdout).toBe('True no note\n');
      expect(
        (
          await session.run(
            "import subprocess; print(subprocess.run(['ls', '/opt/sandcell'], capture_output=True, text=True).stdout.count('sandcell_kernel.py'))",
          )
        ).stdout,
      ).toBe('1\n');
      expect((await session.run("print(open('/opt/sandcell/x', 'w'))")).error?.name).toBe('OSError');
    } finally {
      await session.close();
    }
  });

  it('an image without node runs python, and asking it for javascript says to add node to the image', async () => {
    await registerImageEnvironment({ name: 'no-node', image: NO_NODE, docker: engine });
    const [record] = (await listEnvironments(store)).filter((candidate) => candidate.name === 'no-node');
    expect(record?.image?.languages).toEqual(['python', 'bash', 'r']);
    const session = await createSession({ backend: 'docker', environmentName: 'no-node', preloadModules: [] });
    try {
      expect((await session.run('print(1 + 1)')).stdout).toBe('2\n');
      const attempt = session.createContext({ language: 'javascript' });
      await expect(attempt).rejects.toThrow(LanguageUnavailableError);
      await expect(attempt).rejects.toThrow(
        /The environment no-node is an image without javascript \(it has python, bash, r\)\. javascript needs Node\.js .* add it to the image's Dockerfile/,
      );
    } finally {
      await session.close();
    }
  });

  it('an image without IPython is refused with the fix, and nothing is registered', async () => {
    const refused = registerImageEnvironment({ name: 'no-ipython', image: NO_IPYTHON, docker: engine });
    await expect(refused).rejects.toThrow(InvalidInputError);
    await expect(refused).rejects.toThrow(
      /the image has no IPython \(ModuleNotFoundError: No module named 'IPython'\): add `pip install ipython` or `apt-get install python3-ipython`/,
    );
    expect((await listEnvironments(store)).map((record) => record.name)).not.toContain('no-ipython');
    const tags = (await engine.listImages()).flatMap((image) => image.RepoTags ?? []);
    expect(tags.filter((tag) => tag.startsWith('sandcell-env-no-ipython:'))).toEqual([]);
  });

  it(
    'a Dockerfile environment FROM the runtime builds, and a session sees its file; the default does not',
    async () => {
      const context = path.join(directory, 'extra');
      await rm(context, { recursive: true, force: true });
      await mkdir(context, { recursive: true });
      await writeFile(path.join(context, 'Dockerfile'), EXTRA_DOCKERFILE);
      await writeFile(path.join(context, 'note.txt'), 'from the Dockerfile\n');
      const built = await buildDockerfileEnvironment({
        file: path.join(context, 'Dockerfile'),
        name: 'extra',
        docker: engine,
      });
      expect(built).toMatchObject({ name: 'extra', reused: false });
      const session = await createSession({ backend: 'docker', environmentName: 'extra', preloadModules: [] });
      try {
        expect((await session.run(PROBE)).stdout).toBe('True from the Dockerfile\n');
      } finally {
        await session.close();
      }
      await withSession(runtime, { preloadModules: [] }, async (plain) => {
        expect((await plain.run(PROBE)).stdout).toBe('True no note\n');
      });
    },
    BUILD_TIMEOUT_MS,
  );

  runSecurityContract({
    name: 'Docker in an existing image',
    createBackend: () => runtime.withRoot(foreign?.backendRef as string, foreign?.rootOptions),
  });
});
