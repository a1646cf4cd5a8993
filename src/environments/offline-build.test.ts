import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { InvalidInputError } from '../errors.js';
import { buildEnvironment } from './build.js';
import { parseDescription } from './description.js';
import { refuseOfflineFetches } from './offline-build.js';

let directory: string;
let store: string;
beforeEach(async () => {
  directory = await mkdtemp(path.join(os.tmpdir(), 'sandcell-offline-build-test-'));
  store = path.join(directory, 'store');
});
afterEach(async () => {
  await rm(directory, { recursive: true, force: true });
});

/** Builds a description written here into a store of its own; no root, runtime or copy is reached when refused. */
async function build(description: Record<string, unknown>, allowHosts?: string[]) {
  const file = path.join(directory, 'sandcell.env.json');
  await writeFile(file, JSON.stringify({ name: 'offline', network: 'none', ...description }));
  return buildEnvironment({
    file,
    backend: 'bubblewrap',
    storeDirectory: store,
    ...(allowHosts ? { allowHosts } : {}),
  });
}

describe('an offline build that would have to fetch', () => {
  it.each([
    [{ debianPackages: ['python3-toolz'] }, /debianPackages \(python3-toolz\) come from Debian's archive/],
    [{ python: { packages: ['toolz'] } }, /python\.packages \(toolz\) are looked up in an index/],
    [{ python: { indexUrl: 'https://index.example/simple' } }, /python\.indexUrl needs the network/],
  ])('is refused before anything is copied, saying why and what to change: %j', async (layer, why) => {
    const attempt = build(layer);
    await expect(attempt).rejects.toThrow(InvalidInputError);
    await expect(attempt).rejects.toThrow(why);
    await expect(attempt).rejects.toThrow(/"network": "none"[\s\S]*leave out `"network": "none"`/);
    // Not even a lock: nothing was started.
    expect(await readdir(store).catch(() => [])).toEqual([]);
  });

  it('is refused for --allow-host too, and lists every problem at once', async () => {
    const attempt = build({ debianPackages: ['python3-toolz', 'python3-yaml', 'jq', 'curl'] }, ['example.com']);
    await expect(attempt).rejects.toThrow(/python3-toolz, python3-yaml, jq, …[\s\S]*--allow-host widens/);
  });

  it('may install named packages from wheels it brings, and build from files alone', () => {
    const wheel = {
      source: '/x/tiny-1.0-py3-none-any.whl',
      name: 'tiny-1.0-py3-none-any.whl',
      executable: false,
      sizeBytes: 1,
    };
    const fromWheels = parseDescription({
      name: 'a',
      network: 'none',
      python: { packages: ['tiny'], wheels: [wheel.name] },
    });
    expect(() => refuseOfflineFetches(fromWheels, { files: [wheel], directories: [], totalBytes: 1 })).not.toThrow();
    const files = parseDescription({ name: 'a', network: 'none', setup: ['true'] });
    expect(() => refuseOfflineFetches(files, { files: [], directories: [], totalBytes: 0 })).not.toThrow();
  });
});
