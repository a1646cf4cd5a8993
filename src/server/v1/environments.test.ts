/**
 * Environments over /v1, with kernels answering from a script: the list of
 * built environments and the `environment` of a session. Sessions in a built
 * environment on a real sandbox are in test/environments-bubblewrap.test.ts.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useScriptedServer } from '../../../test/support/server.js';
import { parseDescription } from '../../environments/description.js';
import { makeCurrent, writeRecord } from '../../environments/store.js';

// biome-ignore lint/suspicious/noExplicitAny: response bodies are read loosely in tests
type Json = Record<string, any>;

const { api } = useScriptedServer(undefined);
let store: string;
const previous = process.env.SANDCELL_ENVIRONMENT_DIR;

beforeAll(async () => {
  store = await mkdtemp(path.join(os.tmpdir(), 'sandcell-environments-api-'));
  process.env.SANDCELL_ENVIRONMENT_DIR = store;
  await writeRecord(store, {
    name: 'ml',
    hash: 'aaaaaaaaaaaa',
    runtimeVersion: 'r',
    description: parseDescription({
      name: 'ml',
      debianPackages: ['python3-toolz'],
      python: { wheels: ['dist/tiny-1.0-py3-none-any.whl'], requirements: 'requirements.txt' },
      files: [{ source: 'data.csv', target: '/usr/share/ml/data.csv' }],
      warmImports: ['toolz'],
    }),
    builds: {
      bubblewrap: { backendRef: '/secret/host/path/rootfs', builtAt: '2026-01-01T00:00:00.000Z', sizeBytes: 5 },
    },
  });
  await makeCurrent(store, 'ml', 'aaaaaaaaaaaa');
});

afterAll(async () => {
  if (previous === undefined) delete process.env.SANDCELL_ENVIRONMENT_DIR;
  else process.env.SANDCELL_ENVIRONMENT_DIR = previous;
  await rm(store, { recursive: true, force: true });
});

describe('environments over /v1', () => {
  it('lists the built environments, their size and what they add (packages, wheels, files), without host paths', async () => {
    const listing = await api.json<Json>('/v1/environments');
    expect(listing).toEqual({
      default: 'default',
      environments: [
        {
          name: 'ml',
          hash: 'aaaaaaaaaaaa',
          builds: { bubblewrap: { builtAt: '2026-01-01T00:00:00.000Z', sizeBytes: 5 } },
          debianPackages: ['python3-toolz'],
          pythonPackages: ['tiny-1.0-py3-none-any.whl', '-r requirements.txt'],
          files: ['/usr/share/ml/data.csv'],
          warmImports: ['toolz'],
        },
      ],
    });
    expect(JSON.stringify(listing)).not.toContain('/secret/host');
  });

  it('says which environment a session runs in, and refuses a malformed name with 400', async () => {
    const session = await api.json<Json>('/v1/sessions', { method: 'POST', json: {} });
    expect(session.environment).toBe('default');
    const refused = await api('/v1/sessions', { method: 'POST', json: { environment: '../etc' } });
    expect(refused.status).toBe(400);
    expect(((await refused.json()) as Json).error.code).toBe('invalid-request');
  });

  it('a session in a built environment on a backend that cannot run one is refused with the reason', async () => {
    const refused = await api('/v1/sessions', { method: 'POST', json: { environment: 'ml' } });
    expect(refused.status).toBe(503);
    expect(((await refused.json()) as Json).error.message).toMatch(/only bubblewrap, gvisor and docker/);
  });

  it("says what an environment from an image or a Dockerfile is, without the Dockerfile's host path", async () => {
    for (const [name, kind, source] of [
      ['mine', 'image', 'my-python:3.12'],
      ['built', 'dockerfile', '/secret/host/Dockerfile'],
    ] as const) {
      await writeRecord(store, {
        name,
        hash: 'bbbbbbbbbbbb',
        runtimeVersion: 'r',
        description: parseDescription({ name }),
        builds: { docker: { backendRef: `sandcell-env-${name}:bbbbbbbbbbbb`, builtAt: '2026-01-02T00:00:00.000Z' } },
        image: {
          source,
          kind,
          id: 'sha256:bbbbbbbbbbbb',
          python: '/usr/local/bin/python3',
          pythonVersion: '3.12.1',
          ipythonVersion: '8.20.0',
          matplotlibInline: true,
          languages: ['python', 'bash'],
        },
      });
      await makeCurrent(store, name, 'bbbbbbbbbbbb');
    }
    const listing = await api.json<Json>('/v1/environments');
    const byName = Object.fromEntries(listing.environments.map((environment: Json) => [environment.name, environment]));
    expect(byName.mine.image).toEqual({
      kind: 'image',
      reference: 'my-python:3.12',
      pythonVersion: '3.12.1',
      ipythonVersion: '8.20.0',
      languages: ['python', 'bash'],
    });
    expect(byName.built.image).toEqual({
      kind: 'dockerfile',
      pythonVersion: '3.12.1',
      ipythonVersion: '8.20.0',
      languages: ['python', 'bash'],
    });
    expect(byName.ml.image).toBeUndefined();
    expect(JSON.stringify(listing)).not.toContain('/secret/host');
  });
});
