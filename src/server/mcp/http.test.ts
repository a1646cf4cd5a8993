/**
 * MCP over Streamable HTTP at /mcp with the official SDK's client, on the
 * server's own logic: kernels answer from a script. `sandcell mcp` over stdio
 * runs on real sandboxes in test/server-mcp.test.ts.
 */

import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { assign, byCode, printed, recall, value } from '../../../test/support/kernel-script.js';
import { freePort } from '../../../test/support/readme.js';
import { client as httpClient, type LogCapture, startScriptedServer } from '../../../test/support/server.js';
import type { CommandScript, ExecuteScript, ScriptedRun } from '../../backends/scripted/script.js';
import type { SandcellServer } from '../index.js';

const python = byCode({
  'value = "first"': assign('value', "'first'"),
  value: recall('value'),
  'print(1)': [printed('1\n')],
});

/** Python runs from its script; every other language answers with its name, so a test sees where code ran. */
const kernel: ExecuteScript = (run) =>
  run.language === 'python' ? (python as ScriptedRun)(run) : [value(`'${run.language}:${run.code}'`)];

/** `echo X` prints X; `fail N` exits with N; `sleep` runs until killed. */
const shell: CommandScript = ({ command, cwd }) => {
  const [name, ...rest] = command.split(' ');
  if (name === 'echo') return [{ type: 'stdout', text: `${rest.join(' ')} in ${cwd}\n` }];
  if (name === 'fail')
    return [
      { type: 'stderr', text: 'nope\n' },
      { type: 'exit', code: Number(rest[0]) },
    ];
  return [{ type: 'hang' }];
};

async function call(client: Client, name: string, args: Record<string, unknown>): Promise<CallToolResult> {
  return (await client.callTool({ name, arguments: args })) as CallToolResult;
}

/** An MCP client of `server`'s /mcp with `key`, and its transport (which ends the connection). */
async function connectWithKey(server: SandcellServer, key: string) {
  const client = new Client({ name: 'sandcell-test', version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(new URL(`${server.url}/mcp`), {
    requestInit: { headers: { Authorization: `Bearer ${key}` } },
  });
  await client.connect(transport);
  return { client, transport };
}

/** The key's sessions, as `GET /v1/sessions` lists them (live and paused). */
async function sessionsOf(server: SandcellServer, key: string) {
  const listed = (await httpClient(server, key).json('/v1/sessions')) as {
    sessions: { id: string; name?: string; state: string }[];
  };
  return listed.sessions;
}

function textOf(result: CallToolResult): string {
  return result.content
    .filter((part) => part.type === 'text')
    .map((part) => (part as { text: string }).text)
    .join('\n');
}

describe('MCP over Streamable HTTP at /mcp', () => {
  let server: SandcellServer & { logs: LogCapture };
  const KEY = 'mcp-http-key-000001';
  const OTHER = 'mcp-http-key-000002';

  beforeAll(async () => {
    server = await startScriptedServer(
      kernel,
      { apiKeys: [KEY, OTHER], sessionOptions: { maxCommands: 1 } },
      { command: shell },
    );
  });
  afterAll(async () => {
    await server?.close();
  });

  async function connect(key: string) {
    const transport = new StreamableHTTPClientTransport(new URL(`${server.url}/mcp`), {
      requestInit: { headers: { Authorization: `Bearer ${key}` } },
    });
    const client = new Client({ name: 'sandcell-http-test', version: '1.0.0' });
    await client.connect(transport);
    return { client, transport };
  }

  it('runs code with state per connection; another connection has its own sessions', async () => {
    const first = await connect(KEY);
    const second = await connect(KEY);
    try {
      await call(first.client, 'run_python', { code: 'value = "first"' });
      expect(textOf(await call(first.client, 'run_python', { code: 'value' }))).toBe("'first'");
      expect(textOf(await call(second.client, 'run_python', { code: 'value' }))).toContain('NameError');
      const sessions = await httpClient(server, KEY).json<{ sessions: { source: string }[] }>('/v1/sessions');
      expect(sessions.sessions.filter((session) => session.source === 'mcp')).toHaveLength(2);
    } finally {
      await first.transport.terminateSession();
      await first.client.close();
      await second.transport.terminateSession();
      await second.client.close();
    }
    // Ending the MCP sessions closed their sandboxes.
    await expect
      .poll(async () => (await httpClient(server, KEY).json<{ sessions: unknown[] }>('/v1/sessions')).sessions.length)
      .toBe(0);
  });

  it('run_code runs in the language asked (python by default); run_command answers exit code and output', async () => {
    const { client, transport } = await connect(KEY);
    try {
      const { tools } = await client.listTools();
      const runCode = tools.find((tool) => tool.name === 'run_code');
      expect(Object.keys(runCode?.inputSchema.properties ?? {})).toEqual([
        'code',
        'language',
        'session',
        'environment',
        'timeout_seconds',
      ]);
      expect(tools.find((tool) => tool.name === 'run_command')?.inputSchema.required).toEqual(['command']);

      await call(client, 'run_code', { code: 'value = "first"' });
      expect(textOf(await call(client, 'run_code', { code: 'value' }))).toBe("'first'");
      expect(textOf(await call(client, 'run_code', { code: '1 + 1', language: 'javascript' }))).toBe(
        "'javascript:1 + 1'",
      );
      const unknown = await call(client, 'run_code', { code: '1', language: 'cobol' });
      expect(unknown.isError).toBe(true);

      const ok = await call(client, 'run_command', { command: 'echo hi', cwd: 'sub' });
      expect(ok.isError).toBeUndefined();
      expect(textOf(ok)).toBe('exit code 0\n\n[stdout]\nhi in /mnt/data/sub');
      const failed = await call(client, 'run_command', { command: 'fail 3' });
      expect(failed.isError).toBe(true);
      expect(textOf(failed)).toBe('exit code 3\n\n[stderr]\nnope');
      const slow = await call(client, 'run_command', { command: 'sleep', timeout_seconds: 0.1 });
      expect(textOf(slow)).toContain('killed at its time limit');
      // Through the server's one command path: counted in /metrics like every door's commands.
      const metrics = await (await httpClient(server, KEY)('/metrics')).text();
      expect(metrics).toMatch(/^sandcell_commands_total\{kind="foreground",status="timeout"\} [1-9]/m);
    } finally {
      await transport.terminateSession();
      await client.close();
    }
  });

  it('a command past the session’s cap is a tool error saying what to do', async () => {
    const { client, transport } = await connect(KEY);
    try {
      const first = call(client, 'run_command', { command: 'sleep', timeout_seconds: 1.5 });
      await expect
        .poll(async () => {
          const second = await call(client, 'run_command', { command: 'echo again' });
          return second.isError ? textOf(second) : 'ran';
        })
        .toContain('commands are already running in the session');
      await first;
    } finally {
      await transport.terminateSession();
      await client.close();
    }
  });

  it('needs a key, and a connection belongs to the key that opened it', async () => {
    const anonymous = await fetch(`${server.url}/mcp`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' }),
    });
    expect(anonymous.status).toBe(401);

    const mine = await connect(KEY);
    try {
      const sessionId = mine.transport.sessionId as string;
      const stolen = await fetch(`${server.url}/mcp`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${OTHER}`,
          'mcp-session-id': sessionId,
          'mcp-protocol-version': '2025-06-18',
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
        },
        body: JSON.stringify({
          jsonrpc: '2.0',
          id: 2,
          method: 'tools/call',
          params: { name: 'run_python', arguments: { code: 'print(1)' } },
        }),
      });
      expect(stolen.status).toBe(404);
    } finally {
      await mine.transport.terminateSession();
      await mine.client.close();
    }
  });

  it('keeps a connection and its named sessions across a restart: the same client goes on where it was', async () => {
    const stateDirectory = mkdtempSync(path.join(os.tmpdir(), 'sandcell-mcp-restart-'));
    const port = await freePort();
    const first = await startScriptedServer(kernel, { apiKeys: [KEY], stateDirectory, port });
    const { client, transport } = await connectWithKey(first, KEY);
    let second: (SandcellServer & { logs: LogCapture }) | undefined;
    try {
      await call(client, 'run_python', { code: 'value = "first"', session: 'kept' });
      await call(client, 'run_python', { code: 'value = "first"', session: 'left' });
      await first.close();
      const restarted = await startScriptedServer(kernel, { apiKeys: [KEY], stateDirectory, port });
      second = restarted;
      expect(textOf(await call(client, 'run_python', { code: 'value', session: 'kept' }))).toBe("'first'");
      // Its other sessions are its own still: a new name is a new session.
      expect(textOf(await call(client, 'run_python', { code: 'value', session: 'new' }))).toContain('NameError');
      expect(restarted.logs.lines.some((line) => line.msg === 'MCP session taken up from its record')).toBe(true);
      // Ended by its client (DELETE /mcp), its sessions go, the one still paused by the restart too.
      const listed = async () =>
        (await sessionsOf(restarted, KEY)).map((session) => [session.name, session.state]).sort();
      expect(await listed()).toEqual([
        ['kept', 'running'],
        ['left', 'paused'],
        ['new', 'running'],
      ]);
      await transport.terminateSession();
      await vi.waitFor(async () => expect(await listed()).toEqual([]), { timeout: 5_000, interval: 50 });
    } finally {
      await client.close();
      await second?.close();
      rmSync(stateDirectory, { recursive: true, force: true });
    }
  });

  it('deletes the sessions of a connection its client ends, one it paused meanwhile too', async () => {
    const stateDirectory = mkdtempSync(path.join(os.tmpdir(), 'sandcell-mcp-end-'));
    const own = await startScriptedServer(kernel, { apiKeys: [KEY], stateDirectory });
    const { client, transport } = await connectWithKey(own, KEY);
    try {
      await call(client, 'run_python', { code: 'value = "first"', session: 'paused' });
      await call(client, 'run_python', { code: 'value = "first"', session: 'live' });
      const sessions = () => sessionsOf(own, KEY);
      const paused = (await sessions()).find((session) => session.name === 'paused');
      expect((await httpClient(own, KEY)(`/v1/sessions/${paused?.id}/pause`, { method: 'POST' })).status).toBe(200);
      expect((await sessions()).map((session) => [session.name, session.state]).sort()).toEqual([
        ['live', 'running'],
        ['paused', 'paused'],
      ]);
      await transport.terminateSession();
      await vi.waitFor(async () => expect(await sessions()).toEqual([]), { timeout: 5_000, interval: 50 });
    } finally {
      await client.close();
      await own.close();
      rmSync(stateDirectory, { recursive: true, force: true });
    }
  });
});
