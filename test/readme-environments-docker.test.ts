/**
 * docs/environments.md's Docker part of "Add packages", run as written: a Dockerfile
 * environment FROM the runtime, and an existing image registered unmodified.
 * The image the README names (`my-python:3.12`) is the reader's own; here it
 * is made from the runtime with sandcell's kernel files removed, so the
 * session can only run with the files sandcell mounts in. Environments go to
 * a scratch store (SANDCELL_ENVIRONMENT_DIR); the images made are removed.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type Dockerode from 'dockerode';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { connectDocker, createDockerBackend } from '../src/backends/docker/index.js';
import { removeImages } from '../src/environments/build.js';
import { listEnvironments } from '../src/environments/store.js';
import { runtimeImageTag } from '../src/image/recipe.js';
import { describeWhenAvailable, unavailableReason } from './support/backends.js';
import { commandsOf, readmeBlock, runShell, scratchClone } from './support/readme.js';
import { buildTestImage, removeTestImage } from './support/test-images.js';

const reason = await unavailableReason(createDockerBackend());
const READER_IMAGE = 'my-python:3.12';

describeWhenAvailable('README: Add packages, Docker', 'docker', reason, () => {
  const clone = scratchClone();
  const store = mkdtempSync(path.join(os.tmpdir(), 'sandcell-readme-environments-docker-'));
  const env = { SANDCELL_ENVIRONMENT_DIR: store };
  let docker: Dockerode;

  beforeAll(async () => {
    docker = await connectDocker();
    await buildTestImage(
      docker,
      READER_IMAGE,
      `FROM ${runtimeImageTag()}\nUSER 0:0\nRUN rm -rf /opt/sandcell\nUSER 1000:1000\n`,
    );
  }, 600_000);

  afterAll(async () => {
    for (const record of await listEnvironments(store)) await removeImages(docker, record.name, [record.hash]);
    await removeTestImage(docker, READER_IMAGE);
    rmSync(clone, { recursive: true, force: true });
    rmSync(store, { recursive: true, force: true });
  });

  it('environment-dockerfile', async () => {
    const [build, run] = commandsOf(readmeBlock('environment-dockerfile').code);
    const built = await runShell(build as string, { cwd: clone, env });
    expect(built.code, built.stderr).toBe(0);
    expect(built.stdout).toMatch(/^Built in \d+ s: environment greeting \([0-9a-f]{12}\) for docker/);
    const ran = await runShell(run as string, { cwd: clone, env });
    expect(ran.code, ran.stderr).toBe(0);
    expect(ran.stdout).toBe('hello from a Dockerfile\n');
  }, 600_000);

  it('environment-image', async () => {
    const [add, run, list] = commandsOf(readmeBlock('environment-image').code);
    const added = await runShell(add as string, { cwd: clone, env });
    expect(added.code, added.stderr).toBe(0);
    expect(added.stdout).toMatch(/^Built in \d+ s: environment mypython \([0-9a-f]{12}\) for docker/);
    const ran = await runShell(run as string, { cwd: clone, env });
    expect(ran.code, ran.stderr).toBe(0);
    expect(ran.stdout).toMatch(/^Python 3\.\d+\.\d+ IPython \d+\.\d+/);
    const listed = await runShell(list as string, { cwd: clone, env: { ...env, NO_COLOR: '1' } });
    expect(listed.code, listed.stderr).toBe(0);
    expect(listed.stdout).toContain(
      'image my-python:3.12: Python 3.11.2, IPython 8.5.0; languages: python javascript typescript bash r',
    );
    expect(listed.stdout).toMatch(/^greeting {2}[0-9a-f]{12} {2}docker [\d.]+ [KMG]i?B\n/m);
    expect(listed.stdout).toMatch(/^mypython {2}[0-9a-f]{12} {2}docker [\d.]+ [KMG]i?B\n/m);
  }, 600_000);
});
