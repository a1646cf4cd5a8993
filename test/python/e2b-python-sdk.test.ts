/**
 * E2B's Python SDK (`e2b-code-interpreter` 2.11, `e2b` 2.63), installed from the package index
 * as test/python/requirements/clients.txt pins it, unmodified, against a real `sandcell serve` on
 * bubblewrap: the sync `Sandbox` (e2b_sync.py) and the `AsyncSandbox` (e2b_async.py) through
 * everything a user's code does with them, and the sync one again on Docker, whose /home/user,
 * file requests and snapshots are its container's. The scripts print what they saw; this file
 * asserts.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDockerBackend } from '../../src/backends/docker/index.js';
import { describeWhenAvailable, unavailableReason } from '../support/backends.js';
import { KEY } from '../support/e2b.js';
import { runPythonBlock, runPythonClient, type Seen } from '../support/python-clients.js';
import { readmeBlock } from '../support/readme.js';
import { killServes, type Serve, startServe, stopServe } from '../support/serve-process.js';

/** A `sandcell serve` with ARGS, and the environment that points the SDK at it. */
function serveFor(args: string[]) {
  const started: { serve?: Serve; env: Record<string, string> } = { env: {} };
  beforeAll(async () => {
    started.serve = await startServe(args, { SANDCELL_API_KEYS: KEY });
    const url = `${started.serve.url}/e2b`;
    started.env = { E2B_API_KEY: KEY, E2B_API_URL: url, E2B_SANDBOX_URL: url };
  });
  afterAll(async () => {
    if (started.serve) await stopServe(started.serve, 'SIGTERM');
  });
  return started;
}
afterAll(() => killServes());

/** What both the sync and the async SDK must have seen. */
function expectTheWholeSandbox(seen: Seen, suite: string): void {
  expect(seen.state).toEqual({ text: '360', stdout: ['months: 3\n'], stderr: ['careful\n'], results: ['360'] });
  expect(seen.chart).toEqual({ count: 1, png_magic: '89504e470d0a1a0a' });
  expect(seen.table.html).toContain('<table');
  expect(seen.table.html).toContain('<td>150</td>');
  expect(seen.table.main).toBe(true);
  expect(seen.json).toEqual({ rows: [1, 2] });
  expect(seen.error.name).toBe('ZeroDivisionError');
  expect(seen.error.value).toBe('division by zero');
  expect(seen.error.traceback).toContain('return a / b');
  expect(seen.after_error).toBe('3');
  expect(seen.javascript).toBe('42');
  expect(seen.bash).toBe('hello\n');
  expect(seen.r).toBe('[1] 6');
  expect(seen.context).toEqual({
    cwd: '/tmp',
    own: 'context',
    default_lacks_it: 'NameError',
    listed: true,
    removed: true,
  });
  expect(seen.files).toEqual({
    read_by_code: 'kept between calls',
    read: 'kept between calls',
    bytes: [0, 1, 255],
    made_dir: true,
    listed: ['/home/user/reports/2026', '/home/user/reports/2026/sales.csv'],
    csv: 'units\n120\n150\n90\n',
    renamed: [false, true],
    removed: false,
    missing: expect.stringContaining('/home/user/never-written.txt'),
  });
  // A folder watched recursively: what the SDK and the code wrote, then a removal.
  expect(seen.watch).toEqual([
    'create deeper',
    'create deeper/made.txt',
    'create draft.txt',
    'write deeper/made.txt',
    'write draft.txt',
    'remove draft.txt',
  ]);
  expect(seen.command).toEqual({
    stdout: 'hello\nline 1\nline 2\nline 3\n',
    exit_code: 0,
    streamed: 'hello\nline 1\nline 2\nline 3\n',
    failure: { type: 'CommandExitException', exit_code: 3, stderr: 'oops\n' },
    stdin: 'got abc\n',
    listed: true,
    killed: true,
    after_kill: false,
    as_user: '42\n',
  });
  expect(seen.info.metadata).toEqual({ suite });
  expect(seen.info.template).toBe('code-interpreter-v1');
  // set_timeout(600) moved the end to about ten minutes after the start.
  expect(seen.info.seconds_left).toBeGreaterThan(590);
  expect(seen.info.seconds_left).toBeLessThan(900);
  expect(seen.running).toBe(true);
  expect(seen.list).toEqual({ mine: [seen.id], others: 0 });
  expect(seen.snapshot).toBe(true);
  expect(seen.from_snapshot).toBe('from before');
  expect(seen.fork).toEqual(['from before']);
  expect(seen.paused_listed).toBe(true);
  expect(seen.resumed).toEqual({ kept: 'from before', sales: '3' });
  expect(seen.killed).toBe(true);
  expect(seen.gone).toBe(true);
}

/** The sync SDK's run: everything, and what only it does. */
async function expectTheSyncSandbox(env: Record<string, string>): Promise<void> {
  const seen = await runPythonClient('clients', 'e2b_sync.py', env);
  expectTheWholeSandbox(seen, 'python-sync');
  // A command as root is refused (403 permission_denied), saying there is no such account here.
  expect(seen.as_root.type).toBe('SandboxException');
  expect(seen.as_root.message).toContain('never as "root"');
  // A stopped watch is over, as the SDK says.
  expect(seen.watch_after_stop).toContain('already stopped');
  // get_host(port) names the server's own localhost domain, which serves the sandbox's app.
  const server = new URL(env.E2B_API_URL as string).port;
  expect(seen.port).toEqual({ host: `8000-${seen.id}.localhost:${server}`, page: '<p>served from the sandbox</p>' });
  // A PTY: a real terminal, its size after the resize, and the streamed input.
  // (Input typed ahead is echoed as it arrives, so each answer is looked for on its own line.)
  for (const line of [/[\r\n]pty-42\r\n/, /[\r\n]\/dev\/pts\/\d+\r\n/, /[\r\n]30 100\r\n/, /[\r\n]streamed-5\r\n/]) {
    expect(seen.pty).toMatch(line);
  }
}

describe("E2B's Python SDK, unmodified", () => {
  const served = serveFor([]);
  let env: Record<string, string>;
  beforeAll(() => {
    env = served.env;
  });

  it('sync Sandbox: code with state and callbacks, rich results, errors, languages, contexts, files, watches, commands, lifetime, list, snapshot, fork, pause and connect', async () => {
    await expectTheSyncSandbox(env);
  });

  it('AsyncSandbox: the same, awaited', async () => {
    const seen = await runPythonClient('clients', 'e2b_async.py', env);
    expectTheWholeSandbox(seen, 'python-async');
  });

  it('docs/python.md: its block runs as written', async () => {
    const run = await runPythonBlock('clients', readmeBlock('python-e2b').code, env);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toBe('360\nkept between calls\n');
  });
});

describeWhenAvailable(
  "E2B's Python SDK, unmodified (docker)",
  'docker',
  await unavailableReason(createDockerBackend()),
  () => {
    const served = serveFor(['--backend', 'docker']);

    it('sync Sandbox: the same run on Docker sandboxes', async () => {
      await expectTheSyncSandbox(served.env);
    });
  },
);
