/**
 * Several nodes as one service, on the scripted backend: three in-process servers sharing a
 * directory store, each with its own port on 127.0.0.1 and `advertiseUrl`, talked to over real
 * HTTP. Whichever node a request reaches, it is answered by the node holding its session: plain
 * and streamed executions, raw uploads, upload links, Jupyter's REST and channels websocket, E2B's
 * sandbox traffic. A full node hands new sessions to a peer with room; a drained node's sessions
 * are resumed by a peer and found again through the catalog. What a sandbox does is not what this
 * proves: the forwarding of real clients through a load balancer is an integration test's.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { Sandbox } from 'e2b';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import WebSocket from 'ws';
import { byCode, printed, value } from '../../../test/support/kernel-script.js';
import { freePort } from '../../../test/support/readme.js';
import { startScriptedServer } from '../../../test/support/server.js';
import { nodeTag } from '../core/cluster.js';
import type { ServerOptions } from '../core/server-options.js';
import type { SandcellServer } from '../server.js';

const scratch = mkdtempSync(path.join(os.tmpdir(), 'sandcell-cluster-'));
const store = `fs://${path.join(scratch, 'store')}`;
const HEARTBEAT_MS = 500;
const KEY = 'e2b_00112233445566778899aabbccddeeff';
const AUTH = { authorization: `Bearer ${KEY}` };

type Node = Awaited<ReturnType<typeof startScriptedServer>>;
const nodes = new Map<string, Node>();

const script = byCode({
  '1+1': [value('2')],
  'print("hi")': [printed('hi\n')],
  'slow()': [{ type: 'sleep', ms: 1500 }, printed('done\n')],
  'cat notes.txt': ({ files }) => [printed(files.read('notes.txt').toString('utf8'))],
});

async function startNode(name: string, options: ServerOptions = {}): Promise<Node> {
  const port = await freePort();
  const node = await startScriptedServer(script, {
    port,
    store,
    nodeName: name,
    advertiseUrl: `http://127.0.0.1:${port}`,
    heartbeatMs: HEARTBEAT_MS,
    apiKeys: [KEY],
    ...options,
  });
  nodes.set(name, node);
  return node;
}

/** Until every node sees every other one alive. */
async function settled(): Promise<void> {
  await vi.waitFor(
    async () => {
      for (const [name, server] of nodes) {
        const metrics = await (await fetch(`${server.url}/metrics`, { headers: AUTH })).text();
        const seen = [...metrics.matchAll(/^sandcell_cluster_peer_alive\{peer="([^"]+)"\} 1$/gm)].map((m) => m[1]);
        expect(seen.sort()).toEqual([...nodes.keys()].filter((other) => other !== name).sort());
      }
    },
    { timeout: 10_000, interval: 100 },
  );
}

/** A POST with the Host header a load balancer's one address would give (fetch cannot set it). */
function postAs(server: SandcellServer, route: string, headers: Record<string, string>, body: string) {
  return new Promise<{ status: number; headers: IncomingHttpHeaders; text: string }>((resolve, reject) => {
    const request = httpRequest(`${server.url}${route}`, {
      method: 'POST',
      headers: { host: 'sandcell.cluster.test', ...headers },
    });
    request.on('response', async (response) => {
      let text = '';
      for await (const chunk of response) text += chunk;
      resolve({ status: response.statusCode ?? 0, headers: response.headers, text });
    });
    request.on('error', reject);
    request.end(body);
  });
}

/** Opens an MCP connection at `server` (through the one address's Host); its Mcp-Session-Id. */
async function initializeMcp(server: SandcellServer, headers: Record<string, string>): Promise<string> {
  const initialized = await postAs(
    server,
    '/mcp',
    headers,
    JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-03-26', capabilities: {}, clientInfo: { name: 'test', version: '1' } },
    }),
  );
  expect(initialized.status, initialized.text).toBe(200);
  return String(initialized.headers['mcp-session-id']);
}

const post = (server: SandcellServer, route: string, json?: unknown, headers: Record<string, string> = {}) =>
  fetch(`${server.url}${route}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...AUTH, ...headers },
    body: json === undefined ? undefined : JSON.stringify(json),
  });

async function execute(server: SandcellServer, id: string, code: string) {
  const response = await post(server, `/v1/sessions/${id}/executions`, { code });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

beforeAll(async () => {
  process.env.SANDCELL_SNAPSHOT_SECRET = randomBytes(32).toString('hex');
  await Promise.all(['node-a', 'node-b', 'node-c'].map((name) => startNode(name)));
  await settled();
});

afterAll(async () => {
  await Promise.all([...nodes.values()].map((node) => node.close().catch(() => undefined)));
  rmSync(scratch, { recursive: true, force: true });
});

const node = (name: string): Node => {
  const found = nodes.get(name);
  if (!found) throw new Error(`no node ${name}`);
  return found;
};

describe('a cluster of nodes sharing a store', () => {
  it('hands out ids that name their node, and answers a session from whichever node a request reaches', async () => {
    const created = await post(node('node-a'), '/v1/sessions');
    expect(created.status).toBe(201);
    const { id } = (await created.json()) as { id: string };
    expect(id.slice(0, 8)).toBe(nodeTag('node-a'));

    for (const name of ['node-b', 'node-c', 'node-a']) {
      const run = await execute(node(name), id, '1+1');
      expect(run.status).toBe(200);
      expect(run.body.results).toEqual([expect.objectContaining({ data: { 'text/plain': '2' } })]);
    }
    // Every execution ran on node-a: it counted three; the others hold no session.
    const held = (await (await fetch(`${node('node-b').url}/v1/sessions/${id}`, { headers: AUTH })).json()) as Record<
      string,
      unknown
    >;
    expect(held).toMatchObject({ id, executions: 3 });
    // Every node lists it live, whichever one holds it (a lone node's list would call it lost).
    for (const name of ['node-a', 'node-b', 'node-c']) {
      const { sessions } = (await (await fetch(`${node(name).url}/v1/sessions`, { headers: AUTH })).json()) as {
        sessions: { id: string; state: string }[];
      };
      expect(sessions.filter((session) => session.id === id)).toEqual([
        expect.objectContaining({ id, state: 'running' }),
      ]);
    }

    // A streamed execution comes through a peer as it happens (server-sent events).
    const streamed = await fetch(`${node('node-c').url}/v1/sessions/${id}/executions?stream=sse`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...AUTH },
      body: JSON.stringify({ code: 'print("hi")' }),
    });
    expect(streamed.headers.get('content-type')).toContain('text/event-stream');
    const events = await streamed.text();
    expect(events).toContain('"hi\\n"');
    expect(events).toContain('event: execution-end');
  });

  it('streams an upload through a peer, and an upload link works at any node', async () => {
    const { id } = (await (await post(node('node-b'), '/v1/sessions')).json()) as { id: string };
    const bytes = randomBytes(3 * 1024 * 1024);
    const put = await fetch(`${node('node-a').url}/v1/sessions/${id}/files/big.bin`, {
      method: 'PUT',
      headers: AUTH,
      body: bytes,
    });
    expect(put.status).toBe(201);
    const back = await fetch(`${node('node-c').url}/v1/sessions/${id}/files/big.bin`, { headers: AUTH });
    expect(Buffer.from(await back.arrayBuffer()).equals(bytes)).toBe(true);

    const link = (await (
      await post(node('node-c'), `/v1/sessions/${id}/files/upload-link`, { path: 'notes.txt' })
    ).json()) as {
      url: string;
    };
    const uploaded = await fetch(`${node('node-a').url}${link.url}`, { method: 'PUT', body: 'from a link' });
    expect(uploaded.status).toBe(201);
    expect((await execute(node('node-c'), id, 'cat notes.txt')).body.stdout).toBe('from a link');
  });

  it("forwards Jupyter's REST and its channels websocket to the kernel's node", async () => {
    const kernel = (await (await post(node('node-c'), '/jupyter/api/kernels', { name: 'python3' })).json()) as {
      id: string;
    };
    expect(kernel.id).toMatch(new RegExp(`^${nodeTag('node-c')}-[0-9a-f]{4}-`));
    const described = await fetch(`${node('node-a').url}/jupyter/api/kernels/${kernel.id}`, { headers: AUTH });
    expect(described.status).toBe(200);
    const listed = (await (await fetch(`${node('node-b').url}/jupyter/api/kernels`, { headers: AUTH })).json()) as {
      id: string;
    }[];
    expect(listed.map((entry) => entry.id)).toContain(kernel.id);

    const socket = new WebSocket(
      `${node('node-a').url.replace('http', 'ws')}/jupyter/api/kernels/${kernel.id}/channels?token=${KEY}`,
    );
    await new Promise((resolve, reject) => {
      socket.once('open', resolve);
      socket.once('unexpected-response', async (_request, response) => {
        let text = '';
        for await (const chunk of response) text += chunk;
        reject(new Error(`${response.statusCode} ${text}`));
      });
      socket.once('error', reject);
    });
    const msgId = randomBytes(8).toString('hex');
    const replies: Record<string, unknown>[] = [];
    const idle = new Promise<void>((resolve) => {
      socket.on('message', (data) => {
        const message = JSON.parse(String(data)) as {
          msg_type: string;
          parent_header: { msg_id?: string };
          content: Record<string, unknown>;
        };
        if (message.parent_header.msg_id !== msgId) return;
        replies.push({ type: message.msg_type, content: message.content });
        if (message.msg_type === 'status' && message.content.execution_state === 'idle') resolve();
      });
    });
    socket.send(
      JSON.stringify({
        header: { msg_id: msgId, msg_type: 'execute_request', session: 's', username: 'u', version: '5.3', date: '' },
        parent_header: {},
        metadata: {},
        content: { code: '1+1', silent: false, store_history: true, user_expressions: {}, allow_stdin: false },
        channel: 'shell',
      }),
    );
    await idle;
    socket.close();
    expect(replies).toContainEqual({
      type: 'execute_result',
      content: expect.objectContaining({ data: { 'text/plain': '2' } }),
    });
  });

  it("sends E2B's sandbox traffic and an MCP session's requests to the node that holds them", async () => {
    const created = await fetch(`${node('node-b').url}/e2b/sandboxes`, {
      method: 'POST',
      headers: { 'x-api-key': KEY, 'content-type': 'application/json' },
      body: JSON.stringify({ templateID: 'base' }),
    });
    expect(created.status).toBe(201);
    const sandbox = (await created.json()) as { sandboxID: string; envdAccessToken: string };
    expect(sandbox.sandboxID.slice(0, 8)).toBe(nodeTag('node-b'));
    const traffic = {
      'e2b-sandbox-id': sandbox.sandboxID,
      'e2b-sandbox-port': '49983',
      'x-access-token': sandbox.envdAccessToken,
    };
    const file = `/e2b/files?path=${encodeURIComponent('/home/user/up.txt')}`;
    const up = await fetch(`${node('node-a').url}${file}`, {
      method: 'POST',
      headers: { ...traffic, 'content-type': 'application/octet-stream' },
      body: 'through a peer',
    });
    expect(up.status, await up.clone().text()).toBe(200);
    const down = await fetch(`${node('node-c').url}${file}`, { headers: traffic });
    expect(await down.text()).toBe('through a peer');
    const info = await fetch(`${node('node-c').url}/e2b/sandboxes/${sandbox.sandboxID}`, {
      headers: { 'x-api-key': KEY },
    });
    expect(info.status, await info.clone().text()).toBe(200);

    const mcpHeaders = { ...AUTH, accept: 'application/json, text/event-stream', 'content-type': 'application/json' };
    const mcpSession = await initializeMcp(node('node-c'), mcpHeaders);
    expect(mcpSession.slice(0, 8)).toBe(nodeTag('node-c'));
    const listed = await postAs(
      node('node-a'),
      '/mcp',
      { ...mcpHeaders, 'mcp-session-id': mcpSession, 'mcp-protocol-version': '2025-03-26' },
      JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list', params: {} }),
    );
    expect(listed.status, listed.text).toBe(200);
    const tools = JSON.parse(listed.text) as { result: { tools: { name: string }[] } };
    expect(tools.result.tools.length).toBeGreaterThan(0);
  });

  it("lists E2B's sandboxes of every node as one list, page by page, with the SDK's paginator", async () => {
    const suite = randomBytes(4).toString('hex');
    const made: string[] = [];
    for (const name of ['node-a', 'node-b', 'node-c', 'node-a', 'node-b']) {
      const created = await fetch(`${node(name).url}/e2b/sandboxes`, {
        method: 'POST',
        headers: { 'x-api-key': KEY, 'content-type': 'application/json' },
        body: JSON.stringify({ templateID: 'base', metadata: { suite } }),
      });
      expect(created.status).toBe(201);
      made.push(((await created.json()) as { sandboxID: string }).sandboxID);
    }
    // One of node-b's paused: every node sees its record, and the list names it once.
    const pause = await fetch(`${node('node-c').url}/e2b/sandboxes/${made[1]}/pause`, {
      method: 'POST',
      headers: { 'x-api-key': KEY },
    });
    expect(pause.status, await pause.clone().text()).toBe(204);
    const listAt = async (name: string, order: 'asc' | 'desc') => {
      // The SDK takes its API's address from the environment only.
      vi.stubEnv('E2B_API_URL', `${node(name).url}/e2b`);
      try {
        const paginator = Sandbox.list({ apiKey: KEY, query: { metadata: { suite } }, order, limit: 2 });
        const pages: [string, string][][] = [];
        while (paginator.hasNext) pages.push((await paginator.nextItems()).map((info) => [info.sandboxId, info.state]));
        return pages;
      } finally {
        vi.unstubAllEnvs();
      }
    };
    const state = (id: string | undefined) => (id === made[1] ? 'paused' : 'running');
    const oldestFirst = made.map((id) => [id, state(id)]);
    for (const name of ['node-a', 'node-c']) {
      expect(await listAt(name, 'asc')).toEqual([
        oldestFirst.slice(0, 2),
        oldestFirst.slice(2, 4),
        oldestFirst.slice(4),
      ]);
      const newestFirst = [...oldestFirst].reverse();
      expect(await listAt(name, 'desc')).toEqual([
        newestFirst.slice(0, 2),
        newestFirst.slice(2, 4),
        newestFirst.slice(4),
      ]);
    }
    for (const id of made) {
      await fetch(`${node('node-b').url}/e2b/sandboxes/${id}`, { method: 'DELETE', headers: { 'x-api-key': KEY } });
    }
    expect(await listAt('node-b', 'desc')).toEqual([[]]);
  });

  it("finds an Azure identifier's session (a name the client chose) on the node that holds it", async () => {
    const azure = (server: SandcellServer, code: string) =>
      post(server, '/azure/code/execute?api-version=2024-02-02-preview&identifier=team-1', {
        properties: { codeInputType: 'inline', executionType: 'synchronous', code },
      });
    const first = await azure(node('node-b'), 'cat notes.txt');
    expect(first.status).toBe(200);
    // The identifier's session was made on node-b, with no notes.txt: the script's read failed there.
    const put = await fetch(
      `${node('node-b').url}/azure/files/upload?api-version=2024-02-02-preview&identifier=team-1`,
      {
        method: 'POST',
        headers: AUTH,
        body: (() => {
          const form = new FormData();
          form.append('file', new Blob(['azure notes']), 'notes.txt');
          return form;
        })(),
      },
    );
    expect(put.status, await put.clone().text()).toBe(200);
    for (const name of ['node-a', 'node-c']) {
      const run = await azure(node(name), 'cat notes.txt');
      expect(run.status).toBe(200);
      expect(((await run.json()) as { properties: { stdout: string } }).properties.stdout).toBe('azure notes');
    }
  });

  it("keeps a conversation on its session's node, and lists conversations from every node", async () => {
    const created = await post(node('node-a'), '/v1/conversations', {});
    expect(created.status).toBe(201);
    const conversation = (await created.json()) as { id: string };
    expect(conversation.id.slice(0, 8)).toBe(nodeTag('node-a'));
    for (const name of ['node-b', 'node-c']) {
      const cell = await post(node(name), `/v1/conversations/${conversation.id}/cells`, { code: '1+1' });
      expect(cell.status, await cell.clone().text()).toBe(200);
      const turn = (await cell.json()) as { steps: { results?: { data: Record<string, string> }[] }[] };
      expect(turn.steps[0]?.results?.[0]?.data['text/plain']).toBe('2');
    }
    const history = (await (
      await fetch(`${node('node-c').url}/v1/conversations/${conversation.id}`, { headers: AUTH })
    ).json()) as { turnCount: number };
    expect(history.turnCount).toBe(2);
    const { conversations } = (await (
      await fetch(`${node('node-b').url}/v1/conversations`, { headers: AUTH })
    ).json()) as {
      conversations: { id: string }[];
    };
    expect(conversations.map((entry) => entry.id)).toContain(conversation.id);
  });

  it('answers made-up ids, tags and tokens, and a forged forwarding mark, without forwarding them anywhere', async () => {
    const { id } = (await (await post(node('node-a'), '/v1/sessions')).json()) as { id: string };
    const unknownTag = `${'f'.repeat(8)}${randomBytes(8).toString('hex')}`;
    const otherTag = `${nodeTag('node-c')}${randomBytes(8).toString('hex')}`;
    const answers = await Promise.all([
      // An id no node has: 404 wherever it lands, whatever its tag.
      execute(node('node-b'), unknownTag, '1+1'),
      execute(node('node-b'), otherTag, '1+1'),
      execute(node('node-b'), 'not-a-tagged-id', '1+1'),
      // A client that says a peer sent it is answered where it is, never sent on.
      post(
        node('node-b'),
        `/v1/sessions/${id}/executions`,
        { code: '1+1' },
        { 'x-sandcell-forwarded-by': 'node-a' },
      ).then(async (response) => ({
        status: response.status,
        body: (await response.json()) as Record<string, unknown>,
      })),
    ]);
    expect(answers.slice(0, 3).map((answer) => answer.status)).toEqual([404, 404, 404]);
    // Not run there: node-b does not hold it (404 until node-a's record of it is written, then 409).
    expect([404, 409]).toContain(answers[3]?.status);
    // An upload link whose claims are not JSON, or name a session of another node, but are not signed.
    const forged = Buffer.from(JSON.stringify({ o: 'x', s: id, p: 'a.txt', e: 9e9 })).toString('base64url');
    for (const token of ['%%%.x', `${Buffer.from('not json').toString('base64url')}.abc`, `${forged}.forged`]) {
      const response = await fetch(`${node('node-c').url}/v1/uploads/${token}`, { method: 'PUT', body: 'x' });
      expect([400, 401, 403, 404]).toContain(response.status);
    }
    // An E2B sandbox id that is not one, and a websocket for a kernel no node has.
    const sandbox = await fetch(`${node('node-a').url}/e2b/files?path=%2Fx`, {
      headers: { 'e2b-sandbox-id': `${nodeTag('node-b')}${'z'.repeat(300)}`, 'e2b-sandbox-port': '49983' },
    });
    expect(sandbox.status).toBeGreaterThanOrEqual(400);
    // Each node still serves.
    for (const name of ['node-a', 'node-b', 'node-c']) expect((await execute(node(name), id, '1+1')).status).toBe(200);
  });

  it('a full node hands a new session to a peer with room', async () => {
    const full = await startNode('node-full', { maxSessions: 1 });
    await settled();
    const first = (await (await post(full, '/v1/sessions')).json()) as { id: string };
    expect(first.id.slice(0, 8)).toBe(nodeTag('node-full'));
    const second = await post(full, '/v1/sessions');
    expect(second.status).toBe(201);
    const { id } = (await second.json()) as { id: string };
    expect(id.slice(0, 8)).not.toBe(nodeTag('node-full'));
    expect((await execute(full, id, '1+1')).status).toBe(200);
    await full.close();
    nodes.delete('node-full');
  });

  it("a drained node's MCP connection is taken up by a peer under its id, its named session resumed with it", async () => {
    const leaving = await startNode('node-mcp');
    await settled();
    const headers = { ...AUTH, accept: 'application/json, text/event-stream', 'content-type': 'application/json' };
    const connection = await initializeMcp(leaving, headers);
    let calls = 1;
    const call = async (server: SandcellServer, name: string, args: Record<string, unknown>) => {
      const answer = await postAs(
        server,
        '/mcp',
        { ...headers, 'mcp-session-id': connection, 'mcp-protocol-version': '2025-03-26' },
        JSON.stringify({ jsonrpc: '2.0', id: ++calls, method: 'tools/call', params: { name, arguments: args } }),
      );
      expect(answer.status, answer.text).toBe(200);
      return (JSON.parse(answer.text) as { result: { content: { text: string }[]; isError?: boolean } }).result;
    };
    const wrote = await call(leaving, 'write_file', { path: 'notes.txt', content: 'kept', session: 'work' });
    expect(wrote.isError).toBeUndefined();
    // Answered by the node holding it, whichever node the request reaches.
    expect(
      (await call(node('node-b'), 'run_python', { code: 'cat notes.txt', session: 'work' })).content[0]?.text,
    ).toBe('kept');

    await leaving.close();
    nodes.delete('node-mcp');
    // Taken up where the next request lands, and found there from every other node.
    for (const name of ['node-a', 'node-c', 'node-b']) {
      const again = await call(node(name), 'run_python', { code: 'cat notes.txt', session: 'work' });
      expect(again.content[0]?.text, JSON.stringify(again)).toBe('kept');
    }
    // Its home node comes back under its name (a StatefulSet's pod after an upgrade): requests its id
    // sends there go on to node-a, which holds the connection now; none is taken up twice.
    const back = await startNode('node-mcp');
    await settled();
    for (const server of [node('node-b'), back]) {
      const again = await call(server, 'run_python', { code: 'cat notes.txt', session: 'work' });
      expect(again.content[0]?.text, JSON.stringify(again)).toBe('kept');
    }
    const takenUp = (server: Node) =>
      server.logs.lines.filter((line) => line.msg === 'MCP session taken up from its record').length;
    expect([takenUp(node('node-a')), takenUp(node('node-b')), takenUp(node('node-c')), takenUp(back)]).toEqual([
      1, 0, 0, 0,
    ]);
    await back.close();
    nodes.delete('node-mcp');
    await settled();
    // Another key's request for it is not taken up.
    const stranger = await postAs(
      node('node-b'),
      '/mcp',
      { ...headers, authorization: 'Bearer not-a-key', 'mcp-session-id': connection },
      JSON.stringify({ jsonrpc: '2.0', id: 99, method: 'tools/list', params: {} }),
    );
    expect(stranger.status).toBe(401);
    // Closed by its client: gone everywhere.
    const closed = await new Promise<number>((resolve, reject) => {
      const request = httpRequest(`${node('node-c').url}/mcp`, {
        method: 'DELETE',
        headers: {
          ...AUTH,
          host: 'sandcell.cluster.test',
          'mcp-session-id': connection,
          'mcp-protocol-version': '2025-03-26',
        },
      });
      request.on('response', (response) => {
        response.resume();
        resolve(response.statusCode ?? 0);
      });
      request.on('error', reject);
      request.end();
    });
    expect(closed).toBe(200);
    const after = await postAs(
      node('node-a'),
      '/mcp',
      { ...headers, 'mcp-session-id': connection, 'mcp-protocol-version': '2025-03-26' },
      JSON.stringify({ jsonrpc: '2.0', id: 100, method: 'tools/list', params: {} }),
    );
    expect(after.status).toBe(404);
  });

  it("a drained node's sessions are paused, resumed by a peer under the same id, and found there from any node", async () => {
    const leaving = await startNode('node-leaving');
    await settled();
    const { id } = (await (await post(leaving, '/v1/sessions')).json()) as { id: string };
    const put = await fetch(`${leaving.url}/v1/sessions/${id}/files/notes.txt`, {
      method: 'PUT',
      headers: AUTH,
      body: 'kept',
    });
    expect(put.status).toBe(201);
    // A second session is busy as the drain begins: its execution finishes on this node, and
    // meanwhile the idle one is already paused and answered by a peer.
    const busy = (await (await post(leaving, '/v1/sessions')).json()) as { id: string };
    const running = execute(leaving, busy.id, 'slow()');
    await new Promise((resolve) => setTimeout(resolve, 200));
    const closed = leaving.close();
    const meanwhile = await execute(node('node-b'), id, 'cat notes.txt');
    expect(meanwhile, JSON.stringify(meanwhile)).toMatchObject({ status: 200, body: { stdout: 'kept' } });
    expect(await running).toMatchObject({ status: 200, body: { stdout: 'done\n' } });
    await closed;
    nodes.delete('node-leaving');
    expect((await execute(node('node-c'), busy.id, '1+1')).body.results).toEqual([
      expect.objectContaining({ data: { 'text/plain': '2' } }),
    ]);

    // Resumed on node-b, the idle session is found there from any node (through the catalog).
    for (const name of ['node-a', 'node-c']) {
      const again = await execute(node(name), id, 'cat notes.txt');
      expect(again).toMatchObject({ status: 200, body: { stdout: 'kept' } });
    }
    const info = (await (await fetch(`${node('node-c').url}/v1/sessions/${id}`, { headers: AUTH })).json()) as Record<
      string,
      unknown
    >;
    expect(info).toMatchObject({ id, state: 'running', executions: 3 });
  });
});
