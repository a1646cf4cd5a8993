/**
 * docs/terminals.md's blocks, run as written from the repository's root (the shell block in a
 * scratch clone), with the one change every README test makes: port 8080 is a free one. The E2B
 * block runs after the README's e2b-serve block, with the environment it left; the /v1 block with
 * `$SESSION` a session of the server it talks to.
 */
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
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

const script = path.join(root, `.readme-terminals-${process.pid}.mjs`);
afterAll(() => rmSync(script, { force: true }));

it('runs the E2B block of docs/terminals.md: a PTY answers, on a /dev/pts device', async () => {
  const port = await freePort();
  writeFileSync(script, readmeBlock('terminals-e2b').code.replaceAll('8080', String(port)));
  const finished = await runProcess('bash', ['-c', e2bServeThen(port, script)], {
    cwd: root,
    env: { SANDCELL_LOG_LEVEL: 'warn' },
  });
  expect(finished.code, finished.stderr).toBe(0);
  expect(finished.stdout).toBe('true true\n');
}, 120_000);

it('runs the shell block of docs/terminals.md: piped input, the exit code, the file it saved', async () => {
  const clone = scratchClone();
  try {
    const ran = await runShell(readmeBlock('terminals-shell').code, { cwd: clone });
    expect(ran.code, ran.stderr).toBe(0);
    expect(ran.stdout).toContain('exit code 7\n');
    expect(ran.stdout.endsWith('sum: 42\n')).toBe(true);
    expect(readFileSync(path.join(clone, 'shell-out', 'sum.txt'), 'utf8')).toBe('sum: 42\n');
  } finally {
    rmSync(clone, { recursive: true, force: true });
  }
}, 120_000);

it('runs the /v1 block of docs/terminals.md: a terminal opened, and a shell in the session from the CLI', async () => {
  const clone = scratchClone();
  const server = await startServeLine('npx sandcell serve --pool-size 0', { cwd: clone });
  try {
    const created = await fetch(`http://127.0.0.1:${server.port}/v1/sessions`, {
      method: 'POST',
      body: '{}',
      headers: { 'content-type': 'application/json' },
    });
    const { id } = (await created.json()) as { id: string };
    const ran = await runShell(onPort(readmeBlock('terminals-v1').code, server.port), {
      cwd: clone,
      env: { SESSION: id },
    });
    expect(ran.code, ran.stderr).toBe(0);
    const [opened] = ran.stdout.split('\n');
    expect(JSON.parse(opened ?? '')).toMatchObject({
      id: 'terminal-1',
      cols: 100,
      rows: 30,
      socket: `/v1/sessions/${id}/terminals/terminal-1`,
    });
    expect(ran.stdout).toMatch(/[\r\n]from the shell: 42\r\n/);
  } finally {
    await server.stop();
    rmSync(clone, { recursive: true, force: true });
  }
}, 120_000);
