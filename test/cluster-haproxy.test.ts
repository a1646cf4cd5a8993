/**
 * Several nodes as one service, as honestly as one machine allows: three `sandcell serve`
 * processes on bubblewrap, each in its own network namespace with its own address (a machine
 * each), sharing a store directory, behind Debian's HAProxy standing in for a Kubernetes Service
 * (round robin, a health check on /readyz). Through HAProxy's one address the real clients run
 * their flows (/v1, E2B's SDK, @jupyterlab/services with its websocket, an MCP client), and every
 * request may land on any node. Then: `kill -9` of a node (its paused session resumes elsewhere,
 * its live one answers 410, the others' are untouched); a SIGTERM under load (no execution lost
 * or run twice, no session lost); a fourth node started (new sessions reach it).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { Sandbox } from '@e2b/code-interpreter';
import { KernelManager, type KernelMessage, ServerConnection } from '@jupyterlab/services';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, expect, it } from 'vitest';
import WebSocket from 'ws';
import { createBubblewrapBackend } from '../src/backends/bubblewrap/index.js';
import { nodeTag } from '../src/server/core/cluster.js';
import { describeWhenAvailable, unavailableReason } from './support/backends.js';
import { createNetnsLink, type NetnsLink, netnsUnavailable } from './support/netns-cluster.js';
import { freePort } from './support/readme.js';

const BIN = path.resolve(import.meta.dirname, '..', 'bin', 'sandcell.js');
const KEY = 'e2b_00112233445566778899aabbccddeeff';
const PORT = 8080;
const reason = netnsUnavailable() ?? (await unavailableReason(createBubblewrapBackend()));
const scratch = mkdtempSync(path.join(os.tmpdir(), 'sandcell-cluster-'));
const store = `fs://${path.join(scratch, 'store')}`;
const secret = randomBytes(32).toString('hex');

// biome-ignore lint/suspicious/noExplicitAny: answers are read loosely
type Json = Record<string, any>;

interface Node {
  name: string;
  child: ChildProcess;
  exited: Promise<number | null>;
}

let link: NetnsLink;
let haproxy: ChildProcess | undefined;
let front = '';
const nodes = new Map<number, Node>();

/** Starts node `index` in its namespace; resolves once it listens. */
async function startNode(index: number): Promise<Node> {
  link.addNode(index);
  const address = link.addressOf(index);
  const name = `node-${index}`;
  const child = spawn(
    'ip',
    [
      'netns',
      'exec',
      link.namespaceOf(index),
      process.execPath,
      BIN,
      'serve',
      '--host',
      address,
      '--port',
      String(PORT),
      '--pool-size',
      '1',
      '--preload',
      'none',
      '--no-ui',
      // The drain's load sends executions back to back: on a fast machine, more than a key's 600 a minute.
      '--executions-per-minute',
      '0',
      '--state-dir',
      mkdtempSync(path.join(scratch, `${name}-`)),
      '--store',
      store,
      '--advertise-url',
      `http://${address}:${PORT}`,
      '--shutdown-grace',
      '20s',
      '--log-format',
      'json',
    ],
    {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: {
        ...process.env,
        SANDCELL_API_KEYS: KEY,
        SANDCELL_NODE_NAME: name,
        SANDCELL_SNAPSHOT_SECRET: secret,
      },
    },
  );
  let stderr = '';
  child.stderr?.on('data', (chunk) => {
    stderr += chunk;
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  await new Promise<void>((resolve, reject) => {
    createInterface({ input: child.stdout as NodeJS.ReadableStream }).on('line', (line) => {
      if (line.includes('"a node of the cluster"')) resolve();
    });
    void exited.then((code) => reject(new Error(`${name} exited (${code}): ${stderr.slice(-2000)}`)));
  });
  const node = { name, child, exited };
  nodes.set(index, node);
  return node;
}

/** HAProxy in front of nodes 1 to 4 (those not started yet fail its health check until they are). */
async function startHaproxy(): Promise<void> {
  const port = await freePort();
  const config = path.join(scratch, 'haproxy.cfg');
  const servers = [1, 2, 3, 4].map((index) => `  server node-${index} ${link.addressOf(index)}:${PORT}`).join('\n');
  writeFileSync(
    config,
    `global
  maxconn 1000
defaults
  mode http
  timeout connect 3s
  timeout client 120s
  timeout server 120s
  timeout tunnel 1h
  option redispatch
  retries 2
  # A new connection to a node for every request, so each one is balanced anew: the harshest
  # front for forwarding (a Kubernetes Service balances per connection).
  option http-server-close
frontend service
  bind 127.0.0.1:${port}
  default_backend nodes
backend nodes
  balance roundrobin
  option httpchk
  http-check send meth GET uri /readyz ver HTTP/1.1 hdr Host health-check
  http-check expect status 200
  default-server check inter 300ms fall 2 rise 1
${servers}
`,
  );
  haproxy = spawn('haproxy', ['-f', config, '-db'], { stdio: ['ignore', 'ignore', 'pipe'] });
  front = `http://127.0.0.1:${port}`;
}

/** Until HAProxy sends requests to each of `names` (every one answers /readyz through it). */
async function served(names: string[]): Promise<void> {
  const seen = new Set<string>();
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline && !names.every((name) => seen.has(name))) {
    const answer = await fetch(`${front}/readyz`).catch(() => undefined);
    if (answer?.ok) seen.add(((await answer.json()) as { node: string }).node);
    else await new Promise((resolve) => setTimeout(resolve, 100));
  }
  expect([...seen].sort()).toEqual(expect.arrayContaining(names));
}

async function call(route: string, body?: unknown, method = body === undefined ? 'GET' : 'POST') {
  const response = await fetch(`${front}${route}`, {
    method,
    headers: { authorization: `Bearer ${KEY}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  return { status: response.status, json: (text ? JSON.parse(text) : {}) as Json };
}

const run = (id: string, code: string) => call(`/v1/sessions/${id}/executions`, { code });

/** New /v1 sessions through the front until one is on each of `names`, by their ids' tags; the others are deleted. */
/** An MCP client through the front whose connection node `name` opened (others are closed). */
async function mcpClientOn(name: string): Promise<Client> {
  for (let attempt = 0; attempt < 10; attempt++) {
    const client = new Client({ name: 'cluster-test', version: '1.0.0' });
    const transport = new StreamableHTTPClientTransport(new URL(`${front}/mcp`), {
      requestInit: { headers: { Authorization: `Bearer ${KEY}` } },
    });
    await client.connect(transport);
    if (transport.sessionId?.startsWith(nodeTag(name))) return client;
    await client.close();
  }
  throw new Error(`no MCP connection landed on ${name}`);
}

/** What `run_python` printed, in the named session of an MCP client's connection. */
async function runPython(client: Client, code: string, session: string): Promise<string> {
  const result = (await client.callTool({ name: 'run_python', arguments: { code, session } })) as CallToolResult;
  return result.content.map((part) => (part.type === 'text' ? part.text : '')).join('');
}

async function sessionsOn(names: string[]): Promise<Map<string, string>> {
  const found = new Map<string, string>();
  const extra: string[] = [];
  for (let attempt = 0; attempt < 20 && found.size < names.length; attempt++) {
    const { status, json } = await call('/v1/sessions', {});
    expect(status).toBe(201);
    const name = names.find((candidate) => json.id.startsWith(nodeTag(candidate)));
    if (name && !found.has(name)) found.set(name, json.id);
    else extra.push(json.id);
  }
  // Afterwards: a DELETE between two creations would take every other turn of the round robin.
  for (const id of extra) expect((await call(`/v1/sessions/${id}`, undefined, 'DELETE')).status).toBe(204);
  expect([...found.keys()].sort()).toEqual([...names].sort());
  return found;
}

describeWhenAvailable('a cluster of nodes in network namespaces behind HAProxy', 'bubblewrap', reason, () => {
  beforeAll(async () => {
    link = createNetnsLink();
    await Promise.all([1, 2, 3].map((index) => startNode(index)));
    await startHaproxy();
    await served(['node-1', 'node-2', 'node-3']);
  }, 120_000);

  afterAll(async () => {
    haproxy?.kill('SIGKILL');
    for (const node of nodes.values()) node.child.kill('SIGKILL');
    await Promise.all([...nodes.values()].map((node) => node.exited));
    link?.close();
    rmSync(scratch, { recursive: true, force: true });
  }, 60_000);

  it('/v1, E2B, Jupyter and MCP keep their state through one address, whichever node each request reaches', async () => {
    const { json: session } = await call('/v1/sessions', {});
    expect((await run(session.id, 'x = 41')).json.status).toBe('ok');
    const printed: string[] = [];
    for (let step = 0; step < 6; step++) printed.push((await run(session.id, 'x += 1\nprint(x)')).json.stdout);
    expect(printed).toEqual(['42\n', '43\n', '44\n', '45\n', '46\n', '47\n']);

    process.env.E2B_API_URL = `${front}/e2b`;
    process.env.E2B_SANDBOX_URL = `${front}/e2b`;
    process.env.E2B_API_KEY = KEY;
    delete process.env.E2B_DOMAIN;
    const sandbox = await Sandbox.create();
    try {
      await sandbox.runCode('y = 5');
      expect((await sandbox.runCode('y * 2')).text).toBe('10');
      await sandbox.files.write('/home/user/note.txt', 'through the front');
      expect(await sandbox.files.read('/home/user/note.txt')).toBe('through the front');
      expect((await sandbox.commands.run('cat /home/user/note.txt')).stdout).toBe('through the front');
    } finally {
      await sandbox.kill();
    }

    const settings = ServerConnection.makeSettings({
      baseUrl: `${front}/jupyter/`,
      wsUrl: `${front.replace('http', 'ws')}/jupyter/`,
      token: KEY,
      appendToken: true,
      WebSocket: WebSocket as unknown as typeof globalThis.WebSocket,
    });
    const kernels = new KernelManager({ serverSettings: settings });
    try {
      const kernel = await kernels.startNew({ name: 'python3' });
      const execute = async (code: string) => {
        const out: string[] = [];
        const future = kernel.requestExecute({ code });
        future.onIOPub = (message) => {
          if (message.header.msg_type === 'execute_result')
            out.push(String((message as KernelMessage.IExecuteResultMsg).content.data['text/plain']));
        };
        await future.done;
        return out.join('');
      };
      await execute('z = 3');
      expect(await execute('z + 1')).toBe('4');
      await kernel.shutdown();
    } finally {
      kernels.dispose();
    }

    const client = new Client({ name: 'cluster-test', version: '1.0.0' });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${front}/mcp`), {
        requestInit: { headers: { Authorization: `Bearer ${KEY}` } },
      }),
    );
    try {
      await runPython(client, 'w = 7', 'cluster');
      expect(await runPython(client, 'print(w * 6)', 'cluster')).toBe('42');
    } finally {
      await client.close();
    }
  }, 120_000);

  it("kill -9 of a node: its paused session resumes elsewhere, its live one answers 410, the others' are untouched", async () => {
    const on = await sessionsOn(['node-1', 'node-2', 'node-3']);
    const live = on.get('node-1') as string;
    const others = [on.get('node-2') as string, on.get('node-3') as string];
    for (const id of [live, ...others]) expect((await run(id, 'v = "kept"')).json.status).toBe('ok');
    // One of node-1's sessions paused to the store before the kill (its id may name another node).
    const paused = (await sessionsOn(['node-1'])).get('node-1') as string;
    expect((await run(paused, 'v = "paused"')).json.status).toBe('ok');
    expect((await call(`/v1/sessions/${paused}/pause`, {})).status).toBe(200);

    const node = nodes.get(1) as Node;
    node.child.kill('SIGKILL');
    await node.exited;
    const killedAt = Date.now();
    let lost = await run(live, 'print(v)');
    while (lost.status !== 410 && Date.now() - killedAt < 20_000) lost = await run(live, 'print(v)');
    expect(lost.status).toBe(410);
    expect(lost.json.error.code).toBe('session-lost');
    expect(lost.json.error.message).toContain('node-1');
    expect(Date.now() - killedAt).toBeLessThan(15_000);
    expect((await run(paused, 'print(v)')).json.stdout).toBe('paused\n');
    for (const id of others) expect((await run(id, 'print(v)')).json.stdout).toBe('kept\n');
    nodes.delete(1);
  }, 120_000);

  it('SIGTERM of a node under load loses no session and no execution, and runs none twice', async () => {
    await served(['node-2', 'node-3']);
    const on = await sessionsOn(['node-2', 'node-3']);
    const ids = [...on.values()];
    for (const id of ids) expect((await run(id, 'n = 0')).json.status).toBe('ok');
    // An MCP connection of node-2's, with a variable in one of its named sessions.
    const mcp = await mcpClientOn('node-2');
    await runPython(mcp, 'm = 99', 'kept');
    const counts = new Map<string, string[]>(ids.map((id) => [id, []]));
    const draining = nodes.get(2) as Node;
    let drained = false;
    void draining.exited.then(() => {
      drained = true;
    });
    // Each session runs code back to back from before the SIGTERM until five runs after node-2 is gone.
    const load = async (id: string) => {
      const done = counts.get(id) as string[];
      let afterExit = 0;
      while (afterExit < 5) {
        if (drained) afterExit++;
        const answer = await run(id, 'n += 1\nprint(n)');
        // 503 `shutting-down` ran nothing: sent again, as a client would.
        if (answer.status === 503 && answer.json.error?.code === 'shutting-down') continue;
        expect(answer.status, JSON.stringify(answer.json)).toBe(200);
        done.push(answer.json.stdout.trim());
      }
    };
    const running = Promise.all(ids.map(load));
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const before = ids.map((id) => counts.get(id)?.length ?? 0);
    draining.child.kill('SIGTERM');
    await running;
    expect(await draining.exited).toBe(0);
    nodes.delete(2);
    for (const [index, id] of ids.entries()) {
      const done = counts.get(id) as string[];
      // Under way when the SIGTERM came, and went on after it.
      expect(before[index]).toBeGreaterThan(0);
      expect(done.length).toBeGreaterThan((before[index] ?? 0) + 5);
      // Every answered run counted once, in order: none lost, none run twice.
      expect(done).toEqual(Array.from({ length: done.length }, (_, step) => String(step + 1)));
      expect((await run(id, 'print(n)')).json.stdout).toBe(`${done.length}\n`);
    }
    // node-2's session lives on node-3 now, under its id.
    const moved = on.get('node-2') as string;
    expect((await call(`/v1/sessions/${moved}`)).json).toMatchObject({ id: moved, state: 'running' });
    // So does its MCP connection: the same client goes on, its variable kept.
    try {
      expect(await runPython(mcp, 'print(m)', 'kept')).toBe('99');
    } finally {
      await mcp.close();
    }
  }, 180_000);

  it('a fourth node, once started, takes new sessions', async () => {
    await startNode(4);
    await served(['node-3', 'node-4']);
    const on = await sessionsOn(['node-4']);
    const id = on.get('node-4') as string;
    expect((await run(id, 'print(6 * 7)')).json.stdout).toBe('42\n');
  }, 120_000);
});
