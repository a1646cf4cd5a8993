import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { EnvironmentNotFoundError } from '../errors.js';
import { isDockerfile } from './build-dockerfile.js';
import { parseDescription } from './description.js';
import { makeCurrent, resolveEnvironment, writeRecord } from './store.js';

describe('environments from existing images', () => {
  const directory = mkdtemp(path.join(os.tmpdir(), 'sandcell-image-environment-'));
  afterAll(async () => rm(await directory, { recursive: true, force: true }));

  it('resolve on docker with the kernel mounted, and are refused on bubblewrap naming the backend', async () => {
    const store = await directory;
    await writeRecord(store, {
      name: 'mine',
      hash: '0123456789ab',
      runtimeVersion: 'ffffffffffff',
      description: parseDescription({ name: 'mine' }),
      builds: { docker: { backendRef: 'sandcell-env-mine:0123456789ab', builtAt: '2026-01-01T00:00:00Z' } },
      image: {
        source: 'my-python:3.12',
        kind: 'image',
        id: 'sha256:0123456789abcdef',
        python: '/usr/local/bin/python3',
        pythonVersion: '3.12.1',
        ipythonVersion: '8.20.0',
        matplotlibInline: false,
        languages: ['python', 'bash'],
      },
    });
    await makeCurrent(store, 'mine', '0123456789ab');
    const environment = await resolveEnvironment('mine', { backend: 'docker', storeDirectory: store });
    expect(environment).toMatchObject({
      backendRef: 'sandcell-env-mine:0123456789ab',
      rootOptions: { mountedKernel: { python: '/usr/local/bin/python3', matplotlibInline: false } },
    });
    const onBubblewrap = resolveEnvironment('mine', { backend: 'bubblewrap', storeDirectory: store });
    await expect(onBubblewrap).rejects.toThrow(EnvironmentNotFoundError);
    await expect(onBubblewrap).rejects.toThrow(
      'The environment mine is the Docker image my-python:3.12; it runs on the docker backend only (--backend docker).',
    );
  });

  it('tells a Dockerfile from a description file by its name', () => {
    expect(['Dockerfile', 'ml.Dockerfile', 'Dockerfile.gpu', 'dir/dockerfile'].map(isDockerfile)).toEqual([
      true,
      true,
      true,
      true,
    ]);
    expect(['sandcell.env.json', 'Dockerfiles.json', 'mydockerfile'].map(isDockerfile)).toEqual([false, false, false]);
  });
});
