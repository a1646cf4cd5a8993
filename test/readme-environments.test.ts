/**
 * docs/environments.md's "Add packages" block, run as written: build the example
 * environment (a real build on bubblewrap: the runtime root filesystem plus
 * python3-toolz), run the example script in it, list it. The environment is
 * stored in a scratch store (SANDCELL_ENVIRONMENT_DIR), not the machine's. Then its "Python packages
 * from the index" block: the example with yaspin, built from its committed lock.
 */
import { chmodSync, mkdtempSync, readFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { createBubblewrapBackend } from '../src/backends/bubblewrap/index.js';
import { describeWhenAvailable, unavailableReason } from './support/backends.js';
import { commandsOf, readmeBlock, root, runShell, scratchClone } from './support/readme.js';

/** What the comment after the `index`th command of a block says (its expected output). */
function commentOf(code: string, index: number): string {
  const line = code.split('\n').filter((text) => text.trim() !== '')[index] ?? '';
  return line.slice(line.indexOf('#') + 1).trim();
}

const reason =
  process.getuid?.() === 0
    ? await unavailableReason(createBubblewrapBackend({ rootfs: 'runtime' }))
    : 'building an environment needs root';

describeWhenAvailable('README: Add packages', 'bubblewrap-rootfs', reason, () => {
  const clone = scratchClone();
  const store = mkdtempSync(path.join(os.tmpdir(), 'sandcell-readme-environments-'));
  // The sandboxes' uids reach the environment's /usr through it, as they reach /var/lib/sandcell.
  chmodSync(store, 0o755);
  // Async, with time to spare: a built environment is a whole root filesystem, and removing it
  // synchronously on a busy machine blocked the worker past vitest's hook and RPC timeouts.
  afterAll(async () => {
    await rm(clone, { recursive: true, force: true });
    await rm(store, { recursive: true, force: true });
  }, 10 * 60_000);

  it(
    'environment',
    async () => {
      const block = readmeBlock('environment');
      const [build, run, list] = commandsOf(block.code);
      const env = { SANDCELL_ENVIRONMENT_DIR: store };
      const built = await runShell(build as string, { cwd: clone, env });
      expect(built.code, built.stderr).toBe(0);
      expect(built.stdout).toMatch(/^Built in \d+ s: environment example \([0-9a-f]{12}\) for bubblewrap/);
      const ran = await runShell(run as string, { cwd: clone, env });
      expect(ran.code, ran.stderr).toBe(0);
      expect(ran.stdout).toBe('3 hello from the example environment\n');
      const listed = await runShell(list as string, { cwd: clone, env });
      expect(listed.code, listed.stderr).toBe(0);
      expect(listed.stdout).toMatch(
        /^example {2}[0-9a-f]{12} {2}bubblewrap [\d.]+ [KMG]i?B\n {2}adds: python3-toolz; files: \/usr\/share\/example\/greeting\.txt\n$/,
      );
      // Built again unchanged: nothing to do.
      const again = await runShell(build as string, { cwd: clone, env });
      expect(again.stdout).toMatch(/^Up to date: environment example/);
    },
    20 * 60_000,
  );

  it(
    'environment-python',
    async () => {
      const block = readmeBlock('environment-python');
      const [build, run] = commandsOf(block.code);
      const env = { SANDCELL_ENVIRONMENT_DIR: store };
      const lockFile = path.join(root, 'examples', 'environment-python', 'sandcell.env.lock');
      const lock = readFileSync(lockFile, 'utf8');
      const built = await runShell(build as string, { cwd: clone, env });
      expect(built.code, built.stderr).toBe(0);
      expect(built.stdout).toMatch(/^Built in \d+ s: environment spinner \([0-9a-f]{12}\) for bubblewrap/);
      // The committed lock holds: installed as it pins, its files fetched (the scratch store's cache is empty), not rewritten.
      expect(built.stdout).toContain('pins: 2 Python package files from the index.');
      expect(built.stderr).toContain('fetching locked Python packages');
      expect(readFileSync(lockFile, 'utf8')).toBe(lock);
      const ran = await runShell(run as string, { cwd: clone, env });
      expect(ran.code, ran.stderr).toBe(0);
      expect(ran.stdout).toBe(`${commentOf(block.code, 1)}\n`);
    },
    20 * 60_000,
  );
});
