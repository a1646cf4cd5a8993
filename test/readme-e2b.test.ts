/**
 * The E2B blocks (README.md, docs/e2b.md), run as written from the repository's root: the sh block in
 * bash (two substitutions only: `npx sandcell` is the built CLI, as in readme-languages, and port
 * 8080 a free one, so the test never collides with a server already on this machine), then the js
 * block as a module with the environment it left, and what its comments say is checked.
 */
import { rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, expect, it } from 'vitest';
import { runProcess } from './support/process.js';
import { e2bServeThen, readmeBlock } from './support/readme.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const script = path.join(root, `.readme-e2b-${process.pid}.mjs`);
afterAll(() => rmSync(script, { force: true }));

function e2bBlocks(): { sh: string; js: string } {
  return { sh: readmeBlock('e2b-serve').code, js: readmeBlock('e2b-sdk').code };
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as { port: number };
      probe.close(() => resolve(port));
    });
  });
}

it("runs the README's E2B blocks as written: the unmodified SDK against `sandcell serve`", async () => {
  const { sh, js } = e2bBlocks();
  expect(sh).toContain('npx sandcell serve --port 8080 &');
  const port = await freePort();
  writeFileSync(script, js);
  const finished = await runProcess('bash', ['-c', e2bServeThen(port, script)], {
    cwd: root,
    env: { SANDCELL_LOG_LEVEL: 'warn' },
  });
  expect(finished.code, finished.stderr).toBe(0);
  expect(finished.stdout).toBe('months: 3\n360\nhello\nkept between calls\n');
}, 120_000);
