/**
 * A custom environment chosen through every client that can choose one, for
 * real: the README's example environment (python3-toolz and a file) built
 * once on bubblewrap — by two `sandcell env build` at once, which must not
 * both build — then picked by E2B's SDK (`Sandbox.create('example')`),
 * JupyterLab's client (the kernelspec `python3-example`) and MCP's client
 * (`environment` on stdio `sandcell mcp` and on the server's /mcp). At the
 * end, `env remove` refuses while a sandbox runs on it and works after.
 */
import { chmodSync, mkdtempSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Sandbox } from '@e2b/code-interpreter';
import { KernelManager, type KernelMessage, KernelSpecManager, ServerConnection } from '@jupyterlab/services';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, expect, it } from 'vitest';
import WebSocket from 'ws';
import { createBubblewrapBackend } from '../src/backends/bubblewrap/index.js';
import { describeWhenAvailable, unavailableReason } from './support/backends.js';
import { KEY, startE2bServer, type TestServer } from './support/e2b.js';
import { runProcess } from './support/process.js';
import { root } from './support/readme.js';

const BUILD_TIMEOUT_MS = 20 * 60_000;
const bin = path.join(root, 'bin', 'sandcell.js');
const description = path.join(root, 'examples', 'environment', 'sandcell.env.json');
const reason =
  process.getuid?.() === 0
    ? await unavailableReason(createBubblewrapBackend({ rootfs: 'runtime' }))
    : 'building an environment needs root';

/** Prints the module's name and the example's file, or which import failed. */
const PROBE = `try:
    import toolz, os
    print(toolz.__name__, open(os.environ['EXAMPLE_GREETING']).read().strip())
except ImportError as error:
    print('missing', error.name)`;

const store = mkdtempSync(path.join(os.tmpdir(), 'sandcell-environment-clients-'));
// The sandboxes' uids reach the environment's /usr through it, as they reach /var/lib/sandcell.
chmodSync(store, 0o755);
const sandcell = (...args: string[]) =>
  runProcess(process.execPath, [bin, ...args], { env: { SANDCELL_ENVIRONMENT_DIR: store } });

async function call(client: Client, name: string, args: Record<string, unknown>): Promise<CallToolResult> {
  return (await client.callTool({ name, arguments: args })) as CallToolResult;
}
const textOf = (result: CallToolResult) =>
  result.content.map((part) => (part.type === 'text' ? part.text : '')).join('\n');

describeWhenAvailable('a custom environment through the real clients', 'bubblewrap-rootfs', reason, () => {
  const previousStore = process.env.SANDCELL_ENVIRONMENT_DIR;
  let server: TestServer;
  let builds: Awaited<ReturnType<typeof sandcell>>[];

  beforeAll(async () => {
    process.env.SANDCELL_ENVIRONMENT_DIR = store;
    builds = await Promise.all([sandcell('env', 'build', description), sandcell('env', 'build', description)]);
    server = await startE2bServer({ poolSize: 1 });
  }, BUILD_TIMEOUT_MS);

  afterAll(async () => {
    await server?.close().catch(() => undefined);
    if (previousStore === undefined) delete process.env.SANDCELL_ENVIRONMENT_DIR;
    else process.env.SANDCELL_ENVIRONMENT_DIR = previousStore;
    // Async, with time to spare: a root filesystem left by a failed step is large.
    await rm(store, { recursive: true, force: true });
  }, 10 * 60_000);

  it('two builds of the same name at once: one builds, the other waits for it and reuses its result', () => {
    for (const build of builds) expect(build.code, build.stderr).toBe(0);
    const outputs = builds.map((build) => build.stdout.split('\n')[0]).sort();
    expect(outputs[0]).toMatch(/^Built in \d+ s: environment example \([0-9a-f]{12}\)/);
    expect(outputs[1]).toMatch(/^Up to date: environment example \([0-9a-f]{12}\)/);
    const waiter = builds.find((build) => build.stdout.startsWith('Up to date'));
    expect(waiter?.stderr).toMatch(/waiting for another build of example — process \d+ is building it/);
  });

  it("E2B: Sandbox.create('example') has the environment's package; the default template does not", async () => {
    const inEnvironment = await Sandbox.create('example');
    const plain = await Sandbox.create();
    try {
      const ran = await inEnvironment.runCode(PROBE);
      expect(ran.error).toBeUndefined();
      expect(ran.logs.stdout).toEqual(['toolz hello from the example environment\n']);
      expect((await plain.runCode(PROBE)).logs.stdout).toEqual(['missing toolz\n']);
    } finally {
      await Promise.all([inEnvironment.kill(), plain.kill()]);
    }
  });

  it('Jupyter: the kernelspec python3-example is listed, and a kernel started from it imports the package', async () => {
    const settings = ServerConnection.makeSettings({
      baseUrl: `${server.url}/jupyter/`,
      wsUrl: `${server.url.replace('http', 'ws')}/jupyter/`,
      token: KEY,
      appendToken: true,
      WebSocket: WebSocket as unknown as typeof globalThis.WebSocket,
    });
    const specs = new KernelSpecManager({ serverSettings: settings });
    const kernels = new KernelManager({ serverSettings: settings });
    try {
      await specs.refreshSpecs();
      expect(Object.keys(specs.specs?.kernelspecs ?? {})).toContain('python3-example');
      const kernel = await kernels.startNew({ name: 'python3-example' });
      const printed: string[] = [];
      const future = kernel.requestExecute({ code: PROBE });
      future.onIOPub = (message) => {
        if (message.header.msg_type === 'stream') printed.push((message as KernelMessage.IStreamMsg).content.text);
      };
      const reply = (await future.done) as KernelMessage.IExecuteReplyMsg;
      expect(reply.content.status).toBe('ok');
      expect(printed.join('')).toBe('toolz hello from the example environment\n');
      await kernel.shutdown();
    } finally {
      specs.dispose();
      kernels.dispose();
    }
  });

  it("MCP over the server's /mcp: environment on the call that starts a session", async () => {
    const client = new Client({ name: 'environment-test', version: '1.0.0' });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${server.url}/mcp`), {
        requestInit: { headers: { Authorization: `Bearer ${KEY}` } },
      }),
    );
    try {
      const ran = await call(client, 'run_python', { code: PROBE, session: 'tools', environment: 'example' });
      expect(textOf(ran)).toBe('toolz hello from the example environment');
      expect(textOf(await call(client, 'run_python', { code: PROBE }))).toBe('missing toolz');
    } finally {
      await client.close();
    }
  });

  it('MCP over stdio: list_environments, a session per environment, and a clear error for a mismatch', async () => {
    const client = new Client({ name: 'environment-test', version: '1.0.0' });
    await client.connect(
      new StdioClientTransport({
        command: process.execPath,
        args: [bin, 'mcp', '--preload', 'none'],
        env: { ...(process.env as Record<string, string>), SANDCELL_ENVIRONMENT_DIR: store },
        stderr: 'pipe',
      }),
    );
    try {
      const listed = textOf(await call(client, 'list_environments', {}));
      expect(listed).toMatch(/^default: .* used when environment is left out$/m);
      expect(listed).toMatch(/^example: .*adds: python3-toolz; files: \/usr\/share\/example\/greeting\.txt$/m);
      const ran = await call(client, 'run_python', { code: PROBE, session: 'tools', environment: 'example' });
      expect(textOf(ran)).toBe('toolz hello from the example environment');
      // The same session again, naming its environment or not: the same sandbox, state kept.
      await call(client, 'run_python', { code: 'kept = 1', session: 'tools' });
      expect(textOf(await call(client, 'run_python', { code: 'kept', session: 'tools', environment: 'example' }))).toBe(
        '1',
      );
      const other = await call(client, 'run_command', { command: 'true', session: 'tools', environment: 'default' });
      expect(other.isError).toBe(true);
      expect(textOf(other)).toMatch(/Session "tools" already runs in the environment example, not default/);
      expect(textOf(await call(client, 'run_python', { code: PROBE }))).toBe('missing toolz');
      const missing = await call(client, 'run_python', { code: '1', session: 'x', environment: 'nosuch' });
      expect(missing.isError).toBe(true);
      expect(textOf(missing)).toMatch(/no environment named nosuch.*list_environments/s);
    } finally {
      await client.close();
    }
  });

  it('env remove refuses while a sandbox runs on the environment, which keeps working; it removes it after', async () => {
    const sandbox = await Sandbox.create('example');
    const refused = await sandcell('env', 'remove', 'example');
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toMatch(/The environment example is in use: \d+ sandbox process/);
    expect((await sandbox.runCode(PROBE)).logs.stdout).toEqual(['toolz hello from the example environment\n']);
    await sandbox.kill();
    // The server's pool may keep a warm session in it: with the server gone, nothing runs on it.
    await server.close();
    const removed = await sandcell('env', 'remove', 'example');
    expect(removed.code, removed.stderr).toBe(0);
    expect(removed.stdout).toMatch(/^Removed environment example/);
    expect((await sandcell('env', 'list')).stdout).toMatch(/^No environments built/);
  });
});
