/**
 * `sandcell mcp` over stdio with the official SDK's client, on real sandboxes.
 * MCP over Streamable HTTP (/mcp) runs on the scripted backend in
 * src/server/mcp/http.test.ts.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isAlive } from './contract/contract-support.js';

const bin = path.resolve(import.meta.dirname, '..', 'bin', 'sandcell.js');

async function call(client: Client, name: string, args: Record<string, unknown>): Promise<CallToolResult> {
  return (await client.callTool({ name, arguments: args })) as CallToolResult;
}

function textOf(result: CallToolResult): string {
  return result.content
    .filter((part) => part.type === 'text')
    .map((part) => (part as { text: string }).text)
    .join('\n');
}

describe('sandcell mcp over stdio', () => {
  let client: Client;
  let transport: StdioClientTransport;

  beforeAll(async () => {
    transport = new StdioClientTransport({
      command: process.execPath,
      args: [bin, 'mcp', '--preload', 'none'],
      stderr: 'pipe',
    });
    client = new Client({ name: 'sandcell-test', version: '1.0.0' });
    await client.connect(transport);
  });

  afterAll(async () => {
    await client?.close();
  });

  it('lists the eight tools', async () => {
    const { tools } = await client.listTools();
    expect(tools.map((tool) => tool.name).sort()).toEqual([
      'list_environments',
      'list_files',
      'read_file',
      'reset_session',
      'run_code',
      'run_command',
      'run_python',
      'write_file',
    ]);
    const runPython = tools.find((tool) => tool.name === 'run_python');
    expect(runPython?.inputSchema.required).toEqual(['code']);
  });

  it('run_command runs a real shell command beside the code, sharing its files', async () => {
    await call(client, 'run_python', {
      code: 'open("/mnt/data/rows.txt", "w").write("a\\nb\\nc\\n")',
      session: 'shell',
    });
    const counted = await call(client, 'run_command', {
      command: 'wc -l < rows.txt && echo oops >&2 && exit 4',
      session: 'shell',
    });
    expect(counted.isError).toBe(true);
    expect(textOf(counted)).toBe('exit code 4\n\n[stdout]\n3\n\n[stderr]\noops');
    const ok = await call(client, 'run_command', { command: 'pwd', cwd: '/tmp', session: 'shell' });
    expect(ok.isError).toBeUndefined();
    expect(textOf(ok)).toBe('exit code 0\n\n[stdout]\n/tmp');
  });

  it('keeps state between calls, per session name, and resets on request', async () => {
    expect(textOf(await call(client, 'run_python', { code: 'x = 20\nprint("set")' }))).toBe('set');
    expect(textOf(await call(client, 'run_python', { code: 'x + 1' }))).toBe('21');
    const other = await call(client, 'run_python', { code: 'x', session: 'other' });
    expect(other.isError).toBe(true);
    expect(textOf(other)).toContain("NameError: name 'x' is not defined");
    expect(textOf(await call(client, 'reset_session', {}))).toContain('reset');
    expect(textOf(await call(client, 'run_python', { code: 'x' }))).toContain('NameError');
  });

  it('ends the code at sys.exit or exit(), never the session, and says so', async () => {
    const session = 'exits';
    await call(client, 'run_python', { code: 'import sys\nx = 1', session });
    const failed = await call(client, 'run_python', { code: 'sys.exit(3)', session });
    expect(failed.isError).toBe(true);
    expect(textOf(failed)).toContain('SystemExit: 3');
    expect(textOf(failed)).toContain('exited with status 3');
    expect(textOf(failed)).not.toContain('Ctrl-D');
    const ended = await call(client, 'run_python', { code: 'print("bye")\nx += 1\nexit()\nx = 100', session });
    expect(ended.isError).toBeFalsy();
    expect(textOf(ended)).toBe(
      'bye\n\n[note] the code exited with status 0 and stopped there; the session goes on with its variables.',
    );
    expect(textOf(await call(client, 'run_python', { code: 'x', session }))).toBe('2');
  });

  it('returns figures as image content', async () => {
    const result = await call(client, 'run_python', {
      code: 'import matplotlib.pyplot as plt\nplt.plot([1, 2, 3])\nplt.show()',
    });
    const image = result.content.find((part) => part.type === 'image') as { data: string; mimeType: string };
    expect(image.mimeType).toBe('image/png');
    expect(Buffer.from(image.data, 'base64').subarray(1, 4).toString()).toBe('PNG');
  });

  it('writes, lists and reads files (text and images), and refuses paths outside /mnt/data', async () => {
    expect(textOf(await call(client, 'write_file', { path: 'notes/hello.txt', content: 'hi there' }))).toBe(
      'Wrote /mnt/data/notes/hello.txt (8 bytes).',
    );
    await call(client, 'run_python', {
      code: 'import matplotlib.pyplot as plt\nplt.figure(); plt.plot([3, 1]); plt.savefig("/mnt/data/c.png")',
    });
    const listing = textOf(await call(client, 'list_files', {}));
    expect(listing).toContain('/mnt/data/notes/hello.txt  (8 bytes)');
    expect(listing).toContain('/mnt/data/c.png');
    expect(textOf(await call(client, 'read_file', { path: '/mnt/data/notes/hello.txt' }))).toBe('hi there');
    const image = (await call(client, 'read_file', { path: 'c.png' })).content[0] as { type: string; mimeType: string };
    expect(image).toMatchObject({ type: 'image', mimeType: 'image/png' });
    const binary = await call(client, 'write_file', {
      path: 'b.bin',
      content: Buffer.from([0, 255]).toString('base64'),
      encoding: 'base64',
    });
    expect(textOf(binary)).toContain('(2 bytes)');
    const read = await call(client, 'read_file', { path: 'b.bin' });
    expect(read.content[1]).toMatchObject({ type: 'resource', resource: { blob: 'AP8=' } });

    for (const bad of ['../../etc/passwd', '/etc/passwd', 'a\u0000b']) {
      const refused = await call(client, 'read_file', { path: bad });
      expect(refused.isError).toBe(true);
      expect(textOf(refused)).toMatch(/\/mnt\/data|NUL/);
    }
    const missing = await call(client, 'read_file', { path: 'nope.txt' });
    expect(missing.isError).toBe(true);
  });

  it('ends when the client disconnects, and takes its sandboxes with it', async () => {
    const pid = transport.pid as number;
    expect(isAlive(pid)).toBe(true);
    await client.close();
    await expect.poll(() => isAlive(pid), { timeout: 15_000 }).toBe(false);
  });
});

describe('sandcell mcp at its session limit', () => {
  let client: Client;

  beforeAll(async () => {
    const environment = Object.fromEntries(
      Object.entries(process.env).filter((entry): entry is [string, string] => entry[1] !== undefined),
    );
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [bin, 'mcp', '--preload', 'none'],
      env: { ...environment, SANDCELL_SESSIONS_PER_KEY: '1' },
      stderr: 'pipe',
    });
    client = new Client({ name: 'sandcell-test', version: '1.0.0' });
    await client.connect(transport);
  });

  afterAll(async () => {
    await client?.close();
  });

  it('tells the user what they can do in `sandcell mcp`, naming no HTTP route or serve flag', async () => {
    expect(textOf(await call(client, 'run_python', { code: 'print("first")', session: 'first' }))).toBe('first');
    const refused = await call(client, 'run_python', { code: 'print("second")', session: 'second' });
    expect(refused.isError).toBe(true);
    const message = textOf(refused);
    expect(message).toContain('1 live sessions, its limit');
    expect(message).toContain('`session` argument');
    expect(message).toContain('SANDCELL_SESSIONS_PER_KEY');
    expect(message).not.toMatch(/\/v1|DELETE|--sessions-per-key/);
    // The session it has still works.
    expect(textOf(await call(client, 'run_python', { code: 'print("again")', session: 'first' }))).toBe('again');
  });
});

describe('sandcell mcp with a state directory', () => {
  const stateDirectory = mkdtempSync(path.join(os.tmpdir(), 'sandcell-mcp-state-'));
  afterAll(() => rmSync(stateDirectory, { recursive: true, force: true }));

  async function connect(): Promise<{ client: Client; transport: StdioClientTransport }> {
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [bin, 'mcp', '--preload', 'none', '--state-dir', stateDirectory],
      stderr: 'pipe',
    });
    const client = new Client({ name: 'sandcell-test', version: '1.0.0' });
    await client.connect(transport);
    return { client, transport };
  }

  it('pauses its named sessions when the client goes away; the next `sandcell mcp` resumes each by its name', async () => {
    const first = await connect();
    expect(textOf(await call(first.client, 'run_python', { code: 'x = 41\nprint("set")', session: 'kept' }))).toBe(
      'set',
    );
    await call(first.client, 'run_python', { code: 'y = "other"', session: 'second' });
    const pid = first.transport.pid as number;
    await first.client.close();
    await expect.poll(() => isAlive(pid), { timeout: 15_000 }).toBe(false);

    const second = await connect();
    try {
      expect(textOf(await call(second.client, 'run_python', { code: 'print(x + 1)', session: 'kept' }))).toBe('42');
      expect(textOf(await call(second.client, 'run_python', { code: 'print(y)', session: 'second' }))).toBe('other');
      // A name it never had is a new session.
      const fresh = await call(second.client, 'run_python', { code: 'print(x)', session: 'new' });
      expect(textOf(fresh)).toContain("name 'x' is not defined");
    } finally {
      await second.client.close();
    }
  });
});
