/**
 * A cluster of `sandcell serve` nodes for the cluster's tests: each node a process on bubblewrap in
 * its own network namespace with its own address (a machine each), all sharing a store directory,
 * behind Debian's HAProxy standing in for a Kubernetes Service (round robin, a health check on
 * /readyz, a new connection per request so each is balanced anew). A node keeps its name and state
 * directory across a stop and a start, as a StatefulSet's pod does. Everything started here is ended
 * by `close()`, by its own process.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { KernelManager, type KernelMessage, ServerConnection } from '@jupyterlab/services';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { expect } from 'vitest';
import WebSocket from 'ws';
import { nodeTag } from '../../src/server/core/cluster.js';
import { createNetnsLink, type NetnsLink } from './netns-cluster.js';
import { freePort } from './readme.js';

const BIN = path.resolve(import.meta.dirname, '..', '..', 'bin', 'sandcell.js');
export const CLUSTER_KEY = 'e2b_00112233445566778899aabbccddeeff';
const PORT = 8080;
/** The nodes HAProxy knows: those not started fail its health check until they are. */
const MAX_NODES = 4;

// biome-ignore lint/suspicious/noExplicitAny: answers are read loosely
export type Json = Record<string, any>;

export interface ClusterNode {
  name: string;
  child: ChildProcess;
  exited: Promise<number | null>;
  /** What the node has written to standard output so far (its JSON log). */
  log: () => string;
}

export class TestCluster {
  readonly front: string;
  readonly nodes = new Map<number, ClusterNode>();
  private readonly stateDirectories = new Map<number, string>();

  private constructor(
    private readonly link: NetnsLink,
    private readonly scratch: string,
    private readonly secret: string,
    private readonly haproxy: ChildProcess,
    front: string,
    private readonly extraArguments: string[],
  ) {
    this.front = front;
  }

  /** Nodes `indices` (from 1) behind HAProxy, once HAProxy sends requests to each. */
  static async start(indices: number[], extraArguments: string[] = []): Promise<TestCluster> {
    const link = createNetnsLink();
    const scratch = mkdtempSync(path.join(os.tmpdir(), 'sandcell-cluster-'));
    const port = await freePort();
    const config = path.join(scratch, 'haproxy.cfg');
    const servers = Array.from({ length: MAX_NODES }, (_, index) => index + 1)
      .map((index) => `  server node-${index} ${link.addressOf(index)}:${PORT}`)
      .join('\n');
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
    const haproxy = spawn('haproxy', ['-f', config, '-db'], { stdio: ['ignore', 'ignore', 'pipe'] });
    const cluster = new TestCluster(
      link,
      scratch,
      randomBytes(32).toString('hex'),
      haproxy,
      `http://127.0.0.1:${port}`,
      extraArguments,
    );
    try {
      await Promise.all(indices.map((index) => cluster.startNode(index)));
      await cluster.served(indices.map((index) => `node-${index}`));
    } catch (error) {
      await cluster.close();
      throw error;
    }
    return cluster;
  }

  /** Starts node `index` (again, under its name and with its state directory); resolves once it is in the cluster. */
  async startNode(index: number): Promise<ClusterNode> {
    const address = this.link.addressOf(index);
    const name = `node-${index}`;
    let stateDirectory = this.stateDirectories.get(index);
    if (stateDirectory === undefined) {
      this.link.addNode(index);
      stateDirectory = path.join(this.scratch, name);
      mkdirSync(stateDirectory);
      this.stateDirectories.set(index, stateDirectory);
    }
    const child = spawn(
      'ip',
      [
        'netns',
        'exec',
        this.link.namespaceOf(index),
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
        stateDirectory,
        '--store',
        `fs://${path.join(this.scratch, 'store')}`,
        '--advertise-url',
        `http://${address}:${PORT}`,
        '--shutdown-grace',
        '20s',
        '--log-format',
        'json',
        // Every node serves the sandboxes' ports under the name clients reach the front by.
        '--sandbox-domain',
        `localhost:${new URL(this.front).port}`,
        ...this.extraArguments,
      ],
      {
        stdio: ['ignore', 'pipe', 'pipe'],
        env: {
          ...process.env,
          SANDCELL_API_KEYS: CLUSTER_KEY,
          SANDCELL_NODE_NAME: name,
          SANDCELL_SNAPSHOT_SECRET: this.secret,
        },
      },
    );
    let stderr = '';
    let stdout = '';
    child.stderr?.on('data', (chunk) => {
      stderr += chunk;
    });
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    await new Promise<void>((resolve, reject) => {
      createInterface({ input: child.stdout as NodeJS.ReadableStream }).on('line', (line) => {
        stdout += `${line}\n`;
        if (line.includes('"a node of the cluster"')) resolve();
      });
      void exited.then((code) => reject(new Error(`${name} exited (${code}): ${stderr.slice(-2000)}`)));
    });
    const node = { name, child, exited, log: () => stdout };
    this.nodes.set(index, node);
    return node;
  }

  /** Ends node `index` with `signal` and waits for it to exit; its exit code. */
  async stopNode(index: number, signal: 'SIGTERM' | 'SIGKILL'): Promise<number | null> {
    const node = this.nodes.get(index);
    if (!node) throw new Error(`node-${index} is not running`);
    node.child.kill(signal);
    const code = await node.exited;
    this.nodes.delete(index);
    return code;
  }

  /** Until HAProxy sends requests to each of `names` (every one answers /readyz through it). */
  async served(names: string[]): Promise<void> {
    const seen = new Set<string>();
    const deadline = Date.now() + 30_000;
    while (Date.now() < deadline && !names.every((name) => seen.has(name))) {
      const answer = await fetch(`${this.front}/readyz`).catch(() => undefined);
      if (answer?.ok) seen.add(((await answer.json()) as { node: string }).node);
      else await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect([...seen].sort()).toEqual(expect.arrayContaining(names));
  }

  /** Until HAProxy no longer sends requests to `name` (a stopped node fails its health check). */
  async unserved(name: string): Promise<void> {
    const deadline = Date.now() + 10_000;
    let streak = 0;
    while (Date.now() < deadline && streak < 8) {
      const answer = await fetch(`${this.front}/readyz`).catch(() => undefined);
      const node = answer?.ok ? ((await answer.json()) as { node: string }).node : undefined;
      streak = node !== undefined && node !== name ? streak + 1 : 0;
    }
    expect(streak).toBe(8);
  }

  /** A request through the front with the cluster's key; its status and JSON body. */
  async call(route: string, body?: unknown, method = body === undefined ? 'GET' : 'POST') {
    const response = await fetch(`${this.front}${route}`, {
      method,
      headers: {
        authorization: `Bearer ${CLUSTER_KEY}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await response.text();
    let json: Json = {};
    try {
      json = text ? (JSON.parse(text) as Json) : {};
    } catch {
      json = { text };
    }
    return { status: response.status, json };
  }

  /** Runs code in a /v1 session through the front. */
  run(id: string, code: string) {
    return this.call(`/v1/sessions/${id}/executions`, { code });
  }

  /**
   * Makes things through the front with `make` until one's id (by `idOf`) names each of `names`,
   * by its tag; the others are passed to `discard` afterwards (a discard between two makings would
   * take every other turn of the round robin).
   */
  async madeOn<T>(
    names: string[],
    make: () => Promise<T>,
    idOf: (made: T) => string,
    discard: (made: T) => Promise<unknown>,
  ): Promise<Map<string, T>> {
    const found = new Map<string, T>();
    const extra: T[] = [];
    for (let attempt = 0; attempt < 20 && found.size < names.length; attempt++) {
      const made = await make();
      const name = names.find((candidate) => idOf(made).startsWith(nodeTag(candidate)));
      if (name && !found.has(name)) found.set(name, made);
      else extra.push(made);
    }
    for (const made of extra) await discard(made);
    expect([...found.keys()].sort()).toEqual([...names].sort());
    return found;
  }

  /** New /v1 sessions through the front, one on each of `names`. */
  async sessionsOn(names: string[]): Promise<Map<string, string>> {
    const made = await this.madeOn(
      names,
      async () => {
        const { status, json } = await this.call('/v1/sessions', {});
        expect(status).toBe(201);
        return json.id as string;
      },
      (id) => id,
      async (id) => expect((await this.call(`/v1/sessions/${id}`, undefined, 'DELETE')).status).toBe(204),
    );
    return made;
  }

  async close(): Promise<void> {
    this.haproxy.kill('SIGKILL');
    for (const node of this.nodes.values()) node.child.kill('SIGKILL');
    await Promise.all([...this.nodes.values()].map((node) => node.exited));
    this.link.close();
    rmSync(this.scratch, { recursive: true, force: true });
  }
}

/** An MCP client through the front whose connection node `name` opened (others are closed). */
export async function mcpClientOn(cluster: TestCluster, name: string): Promise<Client> {
  for (let attempt = 0; attempt < 10; attempt++) {
    const client = new Client({ name: 'cluster-test', version: '1.0.0' });
    const transport = new StreamableHTTPClientTransport(new URL(`${cluster.front}/mcp`), {
      requestInit: { headers: { Authorization: `Bearer ${CLUSTER_KEY}` } },
    });
    await client.connect(transport);
    if (transport.sessionId?.startsWith(nodeTag(name))) return client;
    await client.close();
    // A connection's requests may come in a number that keeps its first on one node: one more now and
    // then shifts the turn.
    if (attempt % 2 === 1) await fetch(`${cluster.front}/readyz`).catch(() => undefined);
  }
  throw new Error(`no MCP connection landed on ${name}`);
}

/** What `run_python` printed, in the named session of an MCP client's connection. */
export async function runPython(client: Client, code: string, session: string): Promise<string> {
  const result = (await client.callTool({ name: 'run_python', arguments: { code, session } })) as CallToolResult;
  return result.content.map((part) => (part.type === 'text' ? part.text : '')).join('');
}

/** A Jupyter kernel manager through the front, with the websocket the way JupyterLab opens it. */
export function kernelManager(cluster: TestCluster): KernelManager {
  const settings = ServerConnection.makeSettings({
    baseUrl: `${cluster.front}/jupyter/`,
    wsUrl: `${cluster.front.replace('http', 'ws')}/jupyter/`,
    token: CLUSTER_KEY,
    appendToken: true,
    WebSocket: WebSocket as unknown as typeof globalThis.WebSocket,
  });
  return new KernelManager({ serverSettings: settings });
}

export type Kernel = Awaited<ReturnType<KernelManager['startNew']>>;

/**
 * A Jupyter kernel that node `name` started, connected through `kernels`. The kernels are made
 * through the REST API, and connected only once the others are gone and a list has come back:
 * the manager marks dead a connection whose kernel is missing from a list it sent before that
 * kernel existed, and a cluster's list (asked of every node) is slow enough for back-to-back
 * starts to meet one.
 */
export async function kernelOn(cluster: TestCluster, kernels: KernelManager, name: string): Promise<Kernel> {
  const made = await cluster.madeOn(
    [name],
    async () => {
      const { status, json } = await cluster.call('/jupyter/api/kernels', { name: 'python3' });
      expect(status).toBe(201);
      return json as { id: string; name: string };
    },
    (model) => model.id,
    async (model) =>
      expect((await cluster.call(`/jupyter/api/kernels/${model.id}`, undefined, 'DELETE')).status).toBe(204),
  );
  await kernels.refreshRunning();
  return kernels.connectTo({ model: made.get(name) as { id: string; name: string } });
}

/** What an expression's result reads in a Jupyter kernel. */
export async function jupyterValue(kernel: Kernel, code: string): Promise<string> {
  const out: string[] = [];
  const future = kernel.requestExecute({ code });
  future.onIOPub = (message) => {
    if (message.header.msg_type === 'execute_result')
      out.push(String((message as KernelMessage.IExecuteResultMsg).content.data['text/plain']));
  };
  await future.done;
  return out.join('');
}
