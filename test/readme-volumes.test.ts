/**
 * docs/volumes.md's blocks, run as written from the repository's root (the shell blocks in a scratch
 * clone), each with a state directory of its own, with the one change every README test makes: port
 * 8080 is a free one. The E2B block runs after the README's e2b-serve block, with the environment it left.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { runProcess } from './support/process.js';
import {
  e2bServeThen,
  freePort,
  onPort,
  readmeBlock,
  root,
  runShell,
  scratchClone,
  startServeLine,
} from './support/readme.js';
import { removeStateDirectory } from './support/volumes.js';

const script = path.join(root, `.readme-volumes-${process.pid}.mjs`);
const stateDirectory = () => mkdtempSync(path.join(os.tmpdir(), 'sandcell-readme-volumes-'));
afterAll(() => rmSync(script, { force: true }));

it('runs the CLI block of docs/volumes.md: made, copied in, mounted read-only and by a sub-path, copied out, deleted', async () => {
  const clone = scratchClone();
  const state = stateDirectory();
  try {
    const ran = await runShell(readmeBlock('volumes-cli').code, { cwd: clone, env: { SANDCELL_STATE_DIR: state } });
    expect(ran.code, ran.stderr).toBe(0);
    expect(ran.stdout).toMatch(
      /^created volume datasets \(vol[0-9a-f]{20}\)\ncopied 1 file\(s\), [\d.]+ [KM]i?B\n\d+\n/,
    );
    const lines = readFileSync(path.join(root, 'examples', 'traffic_accidents.csv'), 'utf8').split('\n').length - 1;
    expect(readFileSync(path.join(clone, 'lines.txt'), 'utf8')).toBe(`${lines}\n`);
    // pandas' rows (the header is not one; the last line has no line end).
    expect(ran.stdout).toMatch(/\ncopied 1 file\(s\), [\d.]+ KiB\n\d+\ncopied 1 file\(s\)/);
    expect(ran.stdout.endsWith(`${lines}\ndeleted volume datasets\n`)).toBe(true);
  } finally {
    rmSync(clone, { recursive: true, force: true });
    removeStateDirectory(state);
  }
}, 180_000);

it('runs the E2B block of docs/volumes.md: written in one sandbox, read by the next and through the content API', async () => {
  const port = await freePort();
  const state = stateDirectory();
  writeFileSync(script, readmeBlock('volumes-e2b').code.replaceAll('8080', String(port)));
  try {
    const finished = await runProcess('bash', ['-c', e2bServeThen(port, script)], {
      cwd: root,
      env: { SANDCELL_LOG_LEVEL: 'warn', SANDCELL_STATE_DIR: state },
    });
    expect(finished.code, finished.stderr).toBe(0);
    expect(finished.stdout).toBe('answer: 42 answer: 42\n');
  } finally {
    removeStateDirectory(state);
  }
}, 120_000);

it('runs the /v1 block of docs/volumes.md: a file put in a volume, read in a session that mounts it read-only', async () => {
  const clone = scratchClone();
  const state = stateDirectory();
  const server = await startServeLine('npx sandcell serve --pool-size 0', {
    cwd: clone,
    env: { SANDCELL_STATE_DIR: state },
  });
  try {
    const ran = await runShell(onPort(readmeBlock('volumes-v1').code, server.port), { cwd: clone });
    expect(ran.code, ran.stderr).toBe(0);
    const lines = ran.stdout.trim().split('\n');
    expect(JSON.parse(lines[0] ?? '')).toMatchObject({ path: '/todo.txt', type: 'file', size: 16 });
    expect(lines.at(-1)).toBe('WATER THE PLANTS');
  } finally {
    await server.stop();
    rmSync(clone, { recursive: true, force: true });
    removeStateDirectory(state);
  }
}, 120_000);
