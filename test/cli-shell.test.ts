/**
 * `sandcell shell` as a user runs it, the built CLI on real bubblewrap sandboxes: piped input typed
 * into a fresh sandbox's bash (its exit code passed on, a file it wrote saved), a program after --,
 * a real TTY through script(1) whose size reaches the shell, and a shell in a running server's
 * session through /v1's terminal socket, the key from SANDCELL_API_KEY (refused without it).
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SandcellServer } from '../src/server/index.js';
import { runProcess } from './support/process.js';
import { type LogCapture, startTestServer } from './support/server.js';

const root = path.resolve(import.meta.dirname, '..');
const bin = path.join(root, 'bin', 'sandcell.js');
const workspace = mkdtempSync(path.join(os.tmpdir(), 'sandcell-shell-'));
const KEY = 'shell-key-0123456789';
let server: SandcellServer & { logs: LogCapture };

beforeAll(async () => {
  server = await startTestServer({ apiKeys: [KEY], poolSize: 0 });
});
afterAll(async () => {
  await server?.close();
  rmSync(workspace, { recursive: true, force: true });
});

const shell = (args: string[], input: string, env: Record<string, string> = {}) =>
  runProcess(process.execPath, [bin, 'shell', ...args], { cwd: workspace, input, env });

describe('sandcell shell', () => {
  it('types piped input into a fresh sandbox’s bash, passes its exit code on and saves what it wrote', async () => {
    const outputDir = path.join(workspace, 'out');
    const result = await shell(['-o', outputDir], 'echo $((6*7)); tty; echo kept > /mnt/data/note.txt; exit 3\n');
    expect(result.stdout).toMatch(/[\r\n]42\r\n\/dev\/pts\/\d+\r\n/);
    expect(result.code).toBe(3);
    expect(readFileSync(path.join(outputDir, 'note.txt'), 'utf8')).toBe('kept\n');
  });

  it('runs the program given after --, and the end of the input ends it', async () => {
    const result = await shell(['--', 'bash', '-c', 'read line; echo "got $((line * 7))"'], '6\n');
    expect(result.stdout).toMatch(/got 42\r\n/);
    expect(result.code).toBe(0);
  });

  it('on a real TTY, the window’s size reaches the shell', () => {
    const command = `stty cols 100 rows 33; ${process.execPath} ${bin} shell -- bash -c 'stty size'`;
    const result = spawnSync('script', ['-qec', command, '/dev/null'], {
      cwd: workspace,
      encoding: 'utf8',
      input: '',
      timeout: 60_000,
    });
    expect(result.stdout).toMatch(/33 100/);
    expect(result.status).toBe(0);
  });

  it('opens in a running server’s session with the key, and is refused without it', async () => {
    const created = await fetch(`${server.url}/v1/sessions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
      body: '{}',
    });
    const { id } = (await created.json()) as { id: string };
    const executed = await fetch(`${server.url}/v1/sessions/${id}/executions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify({ code: "open('/mnt/data/there.txt', 'w').write('in the server session')" }),
    });
    expect(executed.status).toBe(200);
    const result = await shell(['--server', server.url, '--session', id], 'cat /mnt/data/there.txt; echo; exit\n', {
      SANDCELL_API_KEY: KEY,
    });
    expect(result.stdout).toContain('in the server session');
    expect(result.code).toBe(0);
    const refused = await shell(['--server', server.url, '--session', id], 'exit\n', { SANDCELL_API_KEY: 'wrong' });
    expect(refused.code).toBe(3);
    expect(refused.stderr).toMatch(/refused the terminal \(401\)/);
  });
});
