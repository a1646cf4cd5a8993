import { mkdir, mkdtemp, readdir, rm, symlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { EnvironmentNotFoundError, InvalidInputError } from '../errors.js';
import { loadDescription, parseDescription } from './description.js';
import { environmentHash } from './environment-version.js';
import { collectInputs } from './inputs.js';
import { listEnvironments, makeCurrent, removeEnvironmentFromStore, resolveEnvironment, writeRecord } from './store.js';

let directory: string;
beforeEach(async () => {
  directory = await mkdtemp(path.join(os.tmpdir(), 'sandcell-environment-test-'));
});
afterEach(async () => {
  await rm(directory, { recursive: true, force: true });
});

async function describeIn(description: unknown) {
  await writeFile(path.join(directory, 'sandcell.env.json'), JSON.stringify(description));
  const loaded = await loadDescription(path.join(directory, 'sandcell.env.json'));
  return { loaded, hash: await environmentHash(loaded.description, await collectInputs(loaded), 'runtime00001') };
}

describe('environment descriptions', () => {
  it('fills in empty layers and refuses unknown fields, bad names and reserved targets, naming each', () => {
    expect(parseDescription({ name: 'ml' })).toMatchObject({ name: 'ml', debianPackages: [], setup: [], env: {} });
    const attempt = () =>
      parseDescription({
        name: 'ML',
        debianPackages: ['python3-toolz; rm -rf /'],
        files: [{ source: 'a', target: '/opt/x' }],
        pythn: {},
      });
    expect(attempt).toThrow(InvalidInputError);
    expect(attempt).toThrow(/name:[\s\S]*debianPackages\.0:[\s\S]*files\.0\.target:[\s\S]*pythn/);
  });

  it('takes `isolation: "gvisor"` (sessions on gVisor) and refuses any other wall', () => {
    expect(parseDescription({ name: 'walled', isolation: 'gvisor' })).toMatchObject({ isolation: 'gvisor' });
    expect(parseDescription({ name: 'plain' }).isolation).toBeUndefined();
    expect(() => parseDescription({ name: 'walled', isolation: 'firecracker' })).toThrow(/isolation:/);
  });

  it('refuses a file outside the description directory and a symbolic link', async () => {
    await expect(describeIn({ name: 'a', files: [{ source: '../x', target: '/usr/share/x' }] })).rejects.toThrow(
      /outside/,
    );
    await writeFile(path.join(directory, 'real'), 'x');
    await symlink('real', path.join(directory, 'link'));
    await expect(describeIn({ name: 'a', files: [{ source: 'link', target: '/usr/share/x' }] })).rejects.toThrow(
      /symbolic link/,
    );
  });
});

describe('environment hashes', () => {
  it('are the same for an unchanged description and change with a named file or the runtime', async () => {
    await mkdir(path.join(directory, 'data'));
    await writeFile(path.join(directory, 'data', 'table.csv'), 'a,b\n1,2\n');
    const description = { name: 'ml', files: [{ source: 'data', target: '/usr/share/ml-data' }], warmImports: ['csv'] };
    const first = await describeIn(description);
    expect(first.hash).toMatch(/^[0-9a-f]{12}$/);
    expect((await describeIn(description)).hash).toBe(first.hash);
    expect((await describeIn({ ...description, description: 'free text' })).hash).toBe(first.hash);
    await writeFile(path.join(directory, 'data', 'table.csv'), 'a,b\n1,3\n');
    const changed = await describeIn(description);
    expect(changed.hash).not.toBe(first.hash);
    const inputs = await collectInputs(changed.loaded);
    expect(await environmentHash(changed.loaded.description, inputs, 'runtime00002')).not.toBe(changed.hash);
  });

  it('change with the files a Python lock pins, in whatever order it gives them; an empty lock is none', async () => {
    const { loaded, hash } = await describeIn({ name: 'locked', python: { packages: ['yaspin'] } });
    const inputs = await collectInputs(loaded);
    const file = (name: string, sha: string) => ({
      name,
      version: '1.0',
      sha256: sha.repeat(64),
      filename: `${name}-1.0.whl`,
    });
    const lock = { inputs: 'c'.repeat(64), files: [file('a', 'a'), file('b', 'b')] };
    const locked = await environmentHash(loaded.description, inputs, 'runtime00001', lock);
    expect(locked).not.toBe(hash);
    expect(
      await environmentHash(loaded.description, inputs, 'runtime00001', {
        ...lock,
        files: [file('b', 'b'), file('a', 'a')],
      }),
    ).toBe(locked);
    expect(
      await environmentHash(loaded.description, inputs, 'runtime00001', {
        ...lock,
        files: [file('a', 'a'), file('b', 'd')],
      }),
    ).not.toBe(locked);
    expect(await environmentHash(loaded.description, inputs, 'runtime00001', { ...lock, files: [] })).toBe(hash);
  });
});

describe('the environment store', () => {
  const description = parseDescription({ name: 'ml', warmImports: ['toolz'], env: { MODE: 'ml' } });

  it('resolves a name to the build the backend asked for, and says how to build what is missing', async () => {
    const store = path.join(directory, 'store');
    await expect(resolveEnvironment('ml', { backend: 'bubblewrap', storeDirectory: store })).rejects.toThrow(
      /sandcell env build FILE --backend bubblewrap/,
    );
    await writeRecord(store, {
      name: 'ml',
      hash: 'aaaaaaaaaaaa',
      runtimeVersion: 'r',
      description,
      builds: { bubblewrap: { backendRef: '/store/ml/aaaaaaaaaaaa/rootfs', builtAt: 'now' } },
    });
    // A record that is not current is not what the name means yet.
    await expect(resolveEnvironment('ml', { backend: 'bubblewrap', storeDirectory: store })).rejects.toThrow(
      EnvironmentNotFoundError,
    );
    await makeCurrent(store, 'ml', 'aaaaaaaaaaaa');
    expect(await resolveEnvironment('ml', { backend: 'bubblewrap', storeDirectory: store })).toEqual({
      name: 'ml',
      hash: 'aaaaaaaaaaaa',
      backend: 'bubblewrap',
      backendRef: '/store/ml/aaaaaaaaaaaa/rootfs',
      warmImports: ['toolz'],
      env: { MODE: 'ml' },
    });
    await expect(resolveEnvironment('ml', { backend: 'docker', storeDirectory: store })).rejects.toThrow(
      /built for bubblewrap, not docker/,
    );
    expect((await resolveEnvironment('default', { backend: 'docker', storeDirectory: store })).backendRef).toBe(
      undefined,
    );
    await expect(resolveEnvironment('../etc', { backend: 'docker', storeDirectory: store })).rejects.toThrow(
      /not an environment name/,
    );
  });

  it('keeps the build a rebuild replaced until the next one, and removes every build of a removed name', async () => {
    const store = path.join(directory, 'store');
    for (const hash of ['aaaaaaaaaaaa', 'bbbbbbbbbbbb', 'cccccccccccc']) {
      await writeRecord(store, { name: 'ml', hash, runtimeVersion: 'r', description, builds: {} });
      await makeCurrent(store, 'ml', hash);
    }
    expect((await readdir(path.join(store, 'ml'))).sort()).toEqual(['bbbbbbbbbbbb', 'cccccccccccc', 'current']);
    expect((await listEnvironments(store)).map((record) => record.hash)).toEqual(['cccccccccccc']);
    expect((await removeEnvironmentFromStore(store, 'ml')).length).toBe(2);
    expect(await listEnvironments(store)).toEqual([]);
    await expect(removeEnvironmentFromStore(store, 'ml')).rejects.toThrow(/no environment named ml/);
  });
});
