/**
 * SIGTERM on `sandcell serve` with executions and commands in flight: running
 * code and commands someone waits for get to finish (bounded by the grace),
 * background commands are killed with their sandboxes, and afterwards nothing
 * of that server is left on the host — no process, no volume, no mount, no cgroup. The same for
 * `sandcell mcp` when its client goes away.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { Readable } from 'node:stream';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { describe, expect, it, vi } from 'vitest';
import { type BubblewrapHostReport, createBubblewrapBackend } from '../src/backends/bubblewrap/index.js';
import { isAlive } from './contract/contract-support.js';
import { canLowerOomScore } from './support/process.js';

// biome-ignore lint/suspicious/noExplicitAny: response bodies are read loosely in tests
type Json = Record<string, any>;
const bin = path.resolve(import.meta.dirname, '..', 'bin', 'sandcell.js');

/** Every process below `root` (children, grandchildren, …), from /proc. */
function descendants(root: number): number[] {
  const parentOf = new Map<number, number>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const parent = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      parentOf.set(Number(entry), parent);
    } catch {
      // gone meanwhile
    }
  }
  const found: number[] = [];
  let frontier = [root];
  while (frontier.length > 0) {
    const next = [...parentOf].filter(([, parent]) => frontier.includes(parent)).map(([pid]) => pid);
    found.push(...next);
    frontier = next;
  }
  return found;
}

/** Volumes, mounts and cgroups on the host named after process `pid`. */
function leftovers(report: BubblewrapHostReport, pid: number): string[] {
  const left: string[] = [];
  const sessions = report.runtime.sessionsDirectory;
  if (existsSync(sessions)) {
    left.push(...readdirSync(sessions).filter((name) => name.startsWith(`${pid}-`)));
  }
  left.push(
    ...readFileSync('/proc/mounts', 'utf8')
      .split('\n')
      .filter((line) => line.includes(`${sessions}/${pid}-`)),
  );
  for (const parent of Object.values(report.cgroups?.parents ?? {})) {
    left.push(...readdirSync(parent).filter((name) => name.startsWith(`sandcell-${pid}-`)));
  }
  return left;
}

/** `detached` makes serve the leader of its own process group, as a shell does for a foreground job. */
async function startServe(
  args: string[],
  options: { detached?: boolean } = {},
): Promise<{ child: ChildProcess; url: string; logs: Json[] }> {
  const child = spawn(process.execPath, [bin, 'serve', '--port', '0', ...args], {
    stdio: ['ignore', 'pipe', 'inherit'],
    env: { ...process.env, SANDCELL_API_KEYS: '' },
    detached: options.detached,
  });
  const logs: Json[] = [];
  const url = await new Promise<string>((resolve, reject) => {
    createInterface({ input: child.stdout as NodeJS.ReadableStream }).on('line', (line) => {
      const entry = JSON.parse(line) as Json;
      logs.push(entry);
      if (entry.url) resolve(entry.url);
    });
    child.once('exit', (code) => reject(new Error(`serve exited early (${code})`)));
  });
  return { child, url, logs };
}

describe('graceful shutdown', () => {
  it('SIGTERM lets running executions and commands finish, ends one past the grace, and leaves no sandbox behind', async () => {
    const report = await createBubblewrapBackend().report();
    const { child, url, logs } = await startServe(['--pool-size', '2', '--preload', 'none', '--shutdown-grace', '3']);
    const pid = child.pid as number;
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    const post = async (target: string, body?: unknown) => {
      const response = await fetch(`${url}${target}`, {
        method: 'POST',
        headers: body ? { 'content-type': 'application/json' } : {},
        body: body ? JSON.stringify(body) : undefined,
      });
      return { status: response.status, body: (await response.json()) as Json };
    };
    const sessions = await Promise.all([1, 2, 3].map(() => post('/v1/sessions')));
    // Azure sessions are sandboxes too.
    await post('/azure/code/execute?identifier=shutdown-test&api-version=2024-02-02-preview', {
      properties: { code: 'import subprocess\nsubprocess.Popen(["sleep", "600"])' },
    });
    const inFlight = sessions.slice(0, 2).map((session, index) =>
      post(`/v1/sessions/${session.body.id}/executions`, {
        code: `import time\ntime.sleep(1.5)\nprint("finished ${index}")`,
      }),
    );
    const tooLong = post(`/v1/sessions/${sessions[2]?.body.id}/executions`, { code: 'import time\ntime.sleep(120)' });
    const command = post(`/v1/sessions/${sessions[0]?.body.id}/commands`, {
      command: 'sleep 1.5 && echo command finished',
    });
    const background = await post(`/v1/sessions/${sessions[1]?.body.id}/commands`, {
      command: 'sleep 600',
      background: true,
    });
    expect(background.status).toBe(202);
    await new Promise((resolve) => setTimeout(resolve, 500));
    const processes = descendants(pid);
    expect(processes.length).toBeGreaterThan(4);
    expect(leftovers(report, pid).length).toBeGreaterThan(0);

    const signalled = Date.now();
    child.kill('SIGTERM');
    const finished = await Promise.all(inFlight);
    expect(finished.map((answer) => [answer.status, answer.body.stdout])).toEqual([
      [200, 'finished 0\n'],
      [200, 'finished 1\n'],
    ]);
    expect((await command).body).toMatchObject({ exitCode: 0, stdout: 'command finished\n' });
    const cut = await tooLong;
    expect(cut.status).toBe(503);
    expect(cut.body.error.code).toBe('shutting-down');
    expect(await exited).toBe(0);
    expect(Date.now() - signalled).toBeLessThan(10_000);
    await expect.poll(() => processes.filter(isAlive), { timeout: 5_000 }).toEqual([]);
    expect(leftovers(report, pid)).toEqual([]);
    expect(logs.map((entry) => entry.msg)).toEqual(
      expect.arrayContaining(['waiting for running executions and commands', 'every sandbox closed', 'stopped']),
    );
    expect(logs.find((entry) => entry.msg === 'waiting for running executions and commands')).toMatchObject({
      executions: 3,
      commands: 1,
      backgroundCommands: 1,
    });
    // New connections are refused once it has stopped.
    await expect(fetch(`${url}/healthz`)).rejects.toThrow();
  });

  it('Ctrl-C (SIGINT to the whole process group, as a terminal sends it) honours the grace like SIGTERM', async () => {
    const report = await createBubblewrapBackend().report();
    const { child, url, logs } = await startServe(['--pool-size', '1', '--preload', 'none', '--shutdown-grace', '20'], {
      detached: true,
    });
    const pid = child.pid as number;
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    // A host OOM must take a sandbox, never the server: it lowers its own score where it may, else says it could not.
    const score = await vi.waitFor(() => {
      const entry = logs.find((line) => line.oomScoreAdj !== undefined);
      if (!entry) throw new Error('no oom_score_adj log line yet');
      return entry;
    });
    if (canLowerOomScore()) {
      expect(readFileSync(`/proc/${pid}/oom_score_adj`, 'utf8').trim()).toBe('-900');
      expect(score.msg).toContain('takes sandboxes before this server');
    } else {
      expect(score.msg).toContain("could not lower this server's oom_score_adj to -900: ");
      // As root, what is missing is the capability (a container or service dropped it), not root.
      expect(score.msg).toContain(
        process.getuid?.() === 0 ? 'runs as root but without CAP_SYS_RESOURCE' : 'needs root with CAP_SYS_RESOURCE',
      );
    }
    const session = (await (await fetch(`${url}/v1/sessions`, { method: 'POST' })).json()) as Json;
    // Streamed, so the test knows the code is running before it presses Ctrl-C.
    const response = await fetch(`${url}/v1/sessions/${session.id}/executions?stream=ndjson`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        code: 'import time\nx = 6\nprint("started", flush=True)\ntime.sleep(2)\nprint("finished", x * 7)',
      }),
    });
    const events: Json[] = [];
    const lines = createInterface({ input: Readable.fromWeb(response.body as never) });
    for await (const line of lines) {
      const event = JSON.parse(line) as Json;
      events.push(event);
      if (event.type === 'stdout-delta' && event.text.includes('started')) process.kill(-pid, 'SIGINT');
    }
    const end = events.at(-1) as Json;
    expect(end.type).toBe('execution-end');
    expect(end.execution.status).toBe('ok');
    expect(end.execution.stdout).toBe('started\nfinished 42\n');
    expect(await exited).toBe(0);
    expect(leftovers(report, pid)).toEqual([]);
  });

  it('`sandcell mcp` closes its sandboxes when the client goes away', async () => {
    const report = await createBubblewrapBackend().report();
    const transport = new StdioClientTransport({ command: process.execPath, args: [bin, 'mcp', '--preload', 'none'] });
    const client = new Client({ name: 'sandcell-shutdown-test', version: '1.0.0' });
    await client.connect(transport);
    await client.callTool({
      name: 'run_python',
      arguments: { code: 'import subprocess\nsubprocess.Popen(["sleep", "600"])' },
    });
    await client.callTool({ name: 'run_python', arguments: { code: '1', session: 'second' } });
    const pid = transport.pid as number;
    // A host OOM must take a sandbox, never the server: it lowers its own score where it may.
    if (canLowerOomScore()) expect(readFileSync(`/proc/${pid}/oom_score_adj`, 'utf8').trim()).toBe('-900');
    const processes = descendants(pid);
    expect(leftovers(report, pid).length).toBeGreaterThan(0);
    await client.close();
    await expect.poll(() => isAlive(pid), { timeout: 15_000 }).toBe(false);
    await expect.poll(() => processes.filter(isAlive), { timeout: 5_000 }).toEqual([]);
    expect(leftovers(report, pid)).toEqual([]);
  });
});
