/**
 * Jupyter kernelspecs per environment: `python3-<name>` for each one built,
 * over real HTTP with kernels answering from a script.
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
  store = await mkdtemp(path.join(os.tmpdir(), 'sandcell-kernelspecs-'));
  process.env.SANDCELL_ENVIRONMENT_DIR = store;
  await writeRecord(store, {
    name: 'ml',
    hash: 'aaaaaaaaaaaa',
    runtimeVersion: 'r',
    description: parseDescription({ name: 'ml' }),
    builds: { bubblewrap: { backendRef: '/x/rootfs', builtAt: '2026-01-01T00:00:00.000Z' } },
  });
  await makeCurrent(store, 'ml', 'aaaaaaaaaaaa');
});

afterAll(async () => {
  if (previous === undefined) delete process.env.SANDCELL_ENVIRONMENT_DIR;
  else process.env.SANDCELL_ENVIRONMENT_DIR = previous;
  await rm(store, { recursive: true, force: true });
});

describe('kernelspecs per environment', () => {
  it('lists python3-<name> beside the languages for each built environment', async () => {
    const listing = await api.json<Json>('/jupyter/api/kernelspecs');
    expect(Object.keys(listing.kernelspecs)).toEqual(
      expect.arrayContaining(['python3', 'javascript', 'bash', 'python3-ml']),
    );
    expect(listing.kernelspecs['python3-ml'].spec).toMatchObject({
      display_name: 'Python 3 (sandcell, ml)',
      language: 'python',
    });
    expect((await api('/jupyter/api/kernelspecs/python3-ml')).status).toBe(200);
    expect((await api('/jupyter/api/kernelspecs/python3-absent')).status).toBe(404);
  });

  it('starting one starts a session in that environment (refused here: the scripted backend runs none)', async () => {
    const response = await api('/jupyter/api/kernels', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'python3-ml' }),
    });
    expect(response.status).toBe(503);
    expect(await response.text()).toMatch(/only bubblewrap, gvisor and docker/);
  });
});
