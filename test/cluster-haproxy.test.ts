/**
 * Several nodes as one service, as honestly as one machine allows: three `sandcell serve`
 * processes on bubblewrap, each in its own network namespace with its own address (a machine
 * each), sharing a store directory, behind Debian's HAProxy standing in for a Kubernetes Service
 * (round robin, a health check on /readyz). Through HAProxy's one address the real clients run
 * their flows (/v1, E2B's SDK, @jupyterlab/services with its websocket, an MCP client), and every
 * request may land on any node. Then: `kill -9` of a node (its paused session resumes elsewhere,
 * its live one answers 410, the others' are untouched); a SIGTERM under load (no execution lost
 * or run twice, no session lost); a fourth node started (new sessions reach it); an app's URL
 * served through the front from any node, and again once its sandbox resumed after a drain.
 */
import { Sandbox } from '@e2b/code-interpreter';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createBubblewrapBackend } from '../src/backends/bubblewrap/index.js';
import { describeWhenAvailable, unavailableReason } from './support/backends.js';
import {
  jupyterValue,
  CLUSTER_KEY as KEY,
  kernelManager,
  mcpClientOn,
  runPython,
  TestCluster,
} from './support/cluster-nodes.js';
import { netnsUnavailable } from './support/netns-cluster.js';
import { portRequest } from './support/port-request.js';

const reason = netnsUnavailable() ?? (await unavailableReason(createBubblewrapBackend()));

let cluster: TestCluster;
const call = (...args: Parameters<TestCluster['call']>) => cluster.call(...args);
const run = (id: string, code: string) => cluster.run(id, code);

describeWhenAvailable('a cluster of nodes in network namespaces behind HAProxy', 'bubblewrap', reason, () => {
  beforeAll(async () => {
    cluster = await TestCluster.start([1, 2, 3]);
  }, 120_000);

  afterAll(async () => {
    await cluster?.close();
  }, 60_000);

  it('/v1, E2B, Jupyter and MCP keep their state through one address, whichever node each request reaches', async () => {
    const { json: session } = await call('/v1/sessions', {});
    expect((await run(session.id, 'x = 41')).json.status).toBe('ok');
    const printed: string[] = [];
    for (let step = 0; step < 6; step++) printed.push((await run(session.id, 'x += 1\nprint(x)')).json.stdout);
    expect(printed).toEqual(['42\n', '43\n', '44\n', '45\n', '46\n', '47\n']);

    process.env.E2B_API_URL = `${cluster.front}/e2b`;
    process.env.E2B_SANDBOX_URL = `${cluster.front}/e2b`;
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

    const kernels = kernelManager(cluster);
    try {
      const kernel = await kernels.startNew({ name: 'python3' });
      const execute = (code: string) => jupyterValue(kernel, code);
      await execute('z = 3');
      expect(await execute('z + 1')).toBe('4');
      await kernel.shutdown();
    } finally {
      kernels.dispose();
    }

    const client = new Client({ name: 'cluster-test', version: '1.0.0' });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${cluster.front}/mcp`), {
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
    const on = await cluster.sessionsOn(['node-1', 'node-2', 'node-3']);
    const live = on.get('node-1') as string;
    const others = [on.get('node-2') as string, on.get('node-3') as string];
    for (const id of [live, ...others]) expect((await run(id, 'v = "kept"')).json.status).toBe('ok');
    // One of node-1's sessions paused to the store before the kill (its id may name another node).
    const paused = (await cluster.sessionsOn(['node-1'])).get('node-1') as string;
    expect((await run(paused, 'v = "paused"')).json.status).toBe('ok');
    expect((await call(`/v1/sessions/${paused}/pause`, {})).status).toBe(200);

    await cluster.stopNode(1, 'SIGKILL');
    const killedAt = Date.now();
    let lost = await run(live, 'print(v)');
    while (lost.status !== 410 && Date.now() - killedAt < 20_000) lost = await run(live, 'print(v)');
    expect(lost.status).toBe(410);
    expect(lost.json.error.code).toBe('session-lost');
    expect(lost.json.error.message).toContain('node-1');
    expect(Date.now() - killedAt).toBeLessThan(15_000);
    expect((await run(paused, 'print(v)')).json.stdout).toBe('paused\n');
    for (const id of others) expect((await run(id, 'print(v)')).json.stdout).toBe('kept\n');
  }, 120_000);

  it('SIGTERM of a node under load loses no session and no execution, and runs none twice', async () => {
    await cluster.served(['node-2', 'node-3']);
    const on = await cluster.sessionsOn(['node-2', 'node-3']);
    const ids = [...on.values()];
    for (const id of ids) expect((await run(id, 'n = 0')).json.status).toBe('ok');
    // An MCP connection of node-2's, with a variable in one of its named sessions.
    const mcp = await mcpClientOn(cluster, 'node-2');
    await runPython(mcp, 'm = 99', 'kept');
    const counts = new Map<string, string[]>(ids.map((id) => [id, []]));
    const draining = cluster.nodes.get(2) as NonNullable<ReturnType<typeof cluster.nodes.get>>;
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
    cluster.nodes.delete(2);
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
    await cluster.startNode(4);
    await cluster.served(['node-3', 'node-4']);
    const on = await cluster.sessionsOn(['node-4']);
    const id = on.get('node-4') as string;
    expect((await run(id, 'print(6 * 7)')).json.stdout).toBe('42\n');
  }, 120_000);

  it('an app’s URL reaches its sandbox through the front on any node, and where it resumed after its node drained', async () => {
    process.env.E2B_API_URL = `${cluster.front}/e2b`;
    process.env.E2B_SANDBOX_URL = `${cluster.front}/e2b`;
    process.env.E2B_API_KEY = KEY;
    await cluster.served(['node-3', 'node-4']);
    const made = await cluster.madeOn(
      ['node-3'],
      () => Sandbox.create(),
      (made) => made.sandboxId,
      (made) => made.kill(),
    );
    const sandbox = made.get('node-3') as Sandbox;
    const front = Number(new URL(cluster.front).port);
    const host = sandbox.getHost(8000);
    expect(host).toBe(`8000-${sandbox.sandboxId}.localhost:${front}`);
    const serve = async () => {
      await sandbox.files.write('/home/user/site/index.html', 'served in the cluster');
      await sandbox.commands.run('python3 -m http.server 8000 --directory /home/user/site', { background: true });
    };
    const page = () => portRequest(front, host, '/index.html');
    await serve();
    let answer = await page();
    for (let attempt = 0; attempt < 100 && answer.status !== 200; attempt++) answer = await page();
    // The front balances every request anew: these land on both nodes, and each reaches the app.
    for (let step = 0; step < 6; step++) expect((await page()).body.toString()).toBe('served in the cluster');
    await cluster.stopNode(3, 'SIGTERM');
    // Resumed on node-4 by its traffic; a pause keeps no process, so nothing listens until it is served again.
    const resumed = await page();
    expect(resumed.status).toBe(502);
    expect(resumed.json).toMatchObject({ sandboxId: sandbox.sandboxId, port: 8000, code: 502 });
    await serve();
    answer = await page();
    for (let attempt = 0; attempt < 100 && answer.status !== 200; attempt++) answer = await page();
    expect(answer.body.toString()).toBe('served in the cluster');
    await sandbox.kill();
  }, 120_000);
});
