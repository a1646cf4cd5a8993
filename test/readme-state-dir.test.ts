/**
 * docs/server.md's "Conversations survive a restart" block, run as written: its
 * `npx sandcell serve` line with the built CLI (on port 0 rather than 8080,
 * which another server may hold: the other lines' `localhost:8080` is
 * pointed at it), from a scratch directory so `./sandcell-state` lands there;
 * a conversation with a cell, a restart, then the block's shell lines in bash.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { afterAll, expect, it } from 'vitest';
import type { Conversation, Turn } from '../src/protocol/index.js';
import { runProcess } from './support/process.js';
import { readmeBlock } from './support/readme.js';

const root = path.resolve(import.meta.dirname, '..');
const bin = path.join(root, 'bin', 'sandcell.js');
const scratch = mkdtempSync(path.join(os.tmpdir(), 'sandcell-readme-state-'));
const children: ChildProcess[] = [];
afterAll(() => {
  for (const child of children) child.kill('SIGKILL');
  rmSync(scratch, { recursive: true, force: true });
});

function stateDirLines(): string[] {
  const block = readmeBlock('state-dir').code;
  return block.trim().split('\n');
}

async function serve(args: string[]): Promise<{ url: string; stop: () => Promise<void> }> {
  const child = spawn(process.execPath, [bin, ...args, '--port', '0', '--pool-size', '0', '--preload', 'none'], {
    cwd: scratch,
    stdio: ['ignore', 'pipe', 'inherit'],
    env: { ...process.env, SANDCELL_API_KEYS: '', SANDCELL_PROVIDER: '', OPENAI_API_KEY: '', OPENAI_BASE_URL: '' },
  });
  children.push(child);
  const exited = new Promise((resolve) => child.once('exit', resolve));
  const url = await new Promise<string>((resolve, reject) => {
    createInterface({ input: child.stdout! }).on('line', (line) => {
      const entry = JSON.parse(line) as { url?: unknown };
      if (typeof entry.url === 'string') resolve(entry.url);
    });
    child.once('exit', (code) => reject(new Error(`serve exited early (${code})`)));
  });
  return {
    url,
    stop: async () => {
      child.kill('SIGTERM');
      await exited;
    },
  };
}

it("runs the README's state-dir block: the conversation is back after a restart, on its own state", async () => {
  const [serveLine, ...shellLines] = stateDirLines();
  expect(serveLine).toMatch(/^npx sandcell serve /);
  const args = [...serveLine!.replace(/\s+#.*$/, '').matchAll(/\S+/g)].map((match) => match[0]).slice(2);

  const first = await serve(args);
  const created = (await (await fetch(`${first.url}/v1/conversations`, { method: 'POST' })).json()) as Conversation;
  const cell = await fetch(`${first.url}/v1/conversations/${created.id}/cells`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ code: "x = 'kept'" }),
  });
  expect(((await cell.json()) as Turn).status).toBe('done');
  await first.stop();
  expect(existsSync(path.join(scratch, 'sandcell-state', 'conversations'))).toBe(true);

  const second = await serve(args);
  try {
    const back = (await (await fetch(`${second.url}/v1/conversations/${created.id}`)).json()) as Conversation;
    // Paused by the stop, not expired: its next cell resumes the session.
    expect(back).toMatchObject({ status: 'active', turnCount: 1 });
    const script = shellLines.join('\n').replaceAll('localhost:8080', new URL(second.url).host);
    const result = await runProcess('bash', ['-euo', 'pipefail', '-c', script], { cwd: scratch });
    expect(result.code, result.stderr).toBe(0);
    const turn = JSON.parse(result.stdout) as Turn;
    expect(turn.status).toBe('done');
    expect(JSON.stringify(turn)).toContain('kept\\n');
  } finally {
    await second.stop();
  }
});
