import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { parseDescription } from '../environments/description.js';
import { makeCurrent, writeRecord } from '../environments/store.js';
import { runtimeVersion } from '../image/recipe.js';
import { checkEnvironments } from './doctor-environments.js';

let store: string;
const previous = process.env.SANDCELL_ENVIRONMENT_DIR;

beforeAll(async () => {
  store = await mkdtemp(path.join(os.tmpdir(), 'sandcell-doctor-environments-'));
  process.env.SANDCELL_ENVIRONMENT_DIR = store;
  await writeRecord(store, {
    name: 'example',
    hash: 'bbbbbbbbbbbb',
    runtimeVersion: runtimeVersion(),
    description: parseDescription({
      name: 'example',
      debianPackages: ['python3-toolz'],
      python: { wheels: ['tiny-1.0-py3-none-any.whl'] },
      files: [{ source: 'greeting.txt', target: '/usr/share/example/greeting.txt' }],
    }),
    builds: { bubblewrap: { backendRef: '/x/rootfs', builtAt: '2026-01-01T00:00:00.000Z', sizeBytes: 10 * 2 ** 20 } },
  });
  await makeCurrent(store, 'example', 'bbbbbbbbbbbb');
});

afterAll(async () => {
  if (previous === undefined) delete process.env.SANDCELL_ENVIRONMENT_DIR;
  else process.env.SANDCELL_ENVIRONMENT_DIR = previous;
  await rm(store, { recursive: true, force: true });
});

it("doctor says each environment's size and what it adds: packages, wheels and files", async () => {
  const lines: [string, string, string | undefined][] = [];
  await checkEnvironments((level, title, detail) => lines.push([level, title, detail]));
  expect(lines).toEqual([
    [
      'ok',
      'environment example (bbbbbbbbbbbb): bubblewrap 10 MiB',
      'adds: python3-toolz tiny-1.0-py3-none-any.whl; files: /usr/share/example/greeting.txt',
    ],
  ]);
});
