/**
 * Every door finds a session the same way after its node drains, dies or comes back, whatever
 * the node a request reaches had seen of it before (issue 43). Three nodes on bubblewrap behind
 * HAProxy (test/support/cluster-nodes.ts); the real clients through its one address: E2B's SDK,
 * @jupyterlab/services, an MCP client, /v1 and Azure's requests as their clients send them. Each
 * door's lists are read through every node before a node goes, so each node has cached what it
 * could of the sessions of the node that then goes.
 */
import { Sandbox, type SandboxOpts } from '@e2b/code-interpreter';
import type { KernelManager } from '@jupyterlab/services';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createBubblewrapBackend } from '../src/backends/bubblewrap/index.js';
import { nodeTag } from '../src/server/core/cluster.js';
import { describeWhenAvailable, unavailableReason } from './support/backends.js';
import {
  CLUSTER_KEY,
  type Json,
  jupyterValue,
  kernelManager,
  kernelOn,
  mcpClientOn,
  runPython,
  TestCluster,
} from './support/cluster-nodes.js';
import { netnsUnavailable } from './support/netns-cluster.js';

const reason = netnsUnavailable() ?? (await unavailableReason(createBubblewrapBackend()));
const NODES = 3;

let cluster: TestCluster;

/** Azure's code/execute, as LangChain's and LlamaIndex's tools send it; what it printed. */
async function azureRun(identifier: string, code: string): Promise<{ status: number; stdout?: string; json: Json }> {
  const response = await fetch(
    `${cluster.front}/azure/code/execute?identifier=${encodeURIComponent(identifier)}&api-version=2024-02-02-preview`,
    {
      method: 'POST',
      headers: { authorization: `Bearer ${CLUSTER_KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify({ properties: { codeInputType: 'inline', executionType: 'synchronous', code } }),
    },
  );
  const json = (await response.json()) as Json;
  return { status: response.status, stdout: json.properties?.stdout, json };
}

/** An Azure identifier whose session node `name` started, after running `code` in it. */
async function azureIdentifierOn(name: string, code: string): Promise<string> {
  for (let attempt = 0; attempt < 12; attempt++) {
    const candidate = `on-${name}-${attempt}-${Date.now()}`;
    await azureRun(candidate, code);
    const held = await cluster.call('/v1/sessions');
    const found = (held.json.sessions as Json[]).find((entry) => entry.name === candidate);
    if (found?.id.startsWith(nodeTag(name))) return candidate;
  }
  throw new Error(`no Azure session landed on ${name}`);
}

/** A new E2B sandbox through the front on node `name` (those that land elsewhere are killed). */
async function sandboxOn(name: string, options: SandboxOpts = {}): Promise<Sandbox> {
  const made = await cluster.madeOn(
    [name],
    () => Sandbox.create(options),
    (sandbox) => sandbox.sandboxId,
    (sandbox) => sandbox.kill(),
  );
  return made.get(name) as Sandbox;
}

/** Runs a notebook cell in a conversation through the front; what it printed. */
async function cell(id: string, code: string): Promise<{ status: number; stdout: string }> {
  const { status, json } = await cluster.call(`/v1/conversations/${id}/cells`, { code });
  const steps = (json.steps ?? []) as Json[];
  return { status, stdout: steps.map((step) => step.stdout ?? '').join('') };
}

/** Each door's list, read through every node (round robin: NODES reads reach each one). */
async function listEverywhere(kernels: KernelManager): Promise<void> {
  for (let round = 0; round < NODES; round++) {
    await Sandbox.list().nextItems();
    expect((await cluster.call('/v1/sessions')).status).toBe(200);
    expect((await cluster.call('/jupyter/api/kernels')).status).toBe(200);
    expect((await cluster.call('/jupyter/api/sessions')).status).toBe(200);
    expect((await cluster.call('/v1/conversations')).status).toBe(200);
    await kernels.refreshRunning();
  }
}

describeWhenAvailable(
  'every door after a node drains, dies or comes back (behind HAProxy)',
  'bubblewrap',
  reason,
  () => {
    beforeAll(async () => {
      cluster = await TestCluster.start([1, 2, 3]);
      process.env.E2B_API_URL = `${cluster.front}/e2b`;
      process.env.E2B_SANDBOX_URL = `${cluster.front}/e2b`;
      process.env.E2B_API_KEY = CLUSTER_KEY;
      delete process.env.E2B_DOMAIN;
    }, 120_000);

    afterAll(async () => {
      await cluster?.close();
    }, 60_000);

    it("SIGTERM: a drained node's sessions answer with their state through every door, after every node listed them", async () => {
      const kernels = kernelManager(cluster);
      try {
        const sandbox = await sandboxOn('node-1');
        await sandbox.runCode('x = 5');
        await sandbox.files.write('/home/user/kept.txt', 'drained');
        // More sandboxes through the balancer, wherever they land (node-1's among them).
        const spread = await Promise.all(Array.from({ length: NODES * 2 }, () => Sandbox.create()));
        for (const [index, other] of spread.entries()) await other.runCode(`s = ${index}`);
        const session = (await cluster.sessionsOn(['node-1'])).get('node-1') as string;
        expect((await cluster.run(session, 'v = "v1"')).json.status).toBe('ok');
        const kernel = await kernelOn(cluster, kernels, 'node-1');
        await jupyterValue(kernel, 'z = 3');
        const mcp = await mcpClientOn(cluster, 'node-1');
        await runPython(mcp, 'm = 99', 'kept');
        // An Azure identifier whose session node-1 started (a name the client chose, found through the store).
        const identifier = await azureIdentifierOn('node-1', 'a = 11');
        const conversation = (
          await cluster.madeOn(
            ['node-1'],
            async () => (await cluster.call('/v1/conversations', {})).json.id as string,
            (id) => id,
            (id) => cluster.call(`/v1/conversations/${id}`, undefined, 'DELETE'),
          )
        ).get('node-1') as string;
        expect(await cell(conversation, "c = 'conv'")).toEqual({ status: 200, stdout: '' });

        await listEverywhere(kernels);
        expect((await Sandbox.list().nextItems()).map((info) => info.sandboxId)).toContain(sandbox.sandboxId);
        expect(await cluster.stopNode(1, 'SIGTERM')).toBe(0);
        await cluster.unserved('node-1');

        // Its conversation is listed from the store before any node takes it up, wherever the list lands.
        for (let round = 0; round < NODES; round++) {
          const listed = (await cluster.call('/v1/conversations')).json.conversations as Json[];
          expect(listed.filter((entry) => entry.id === conversation)).toMatchObject([
            { status: 'active', turnCount: 1 },
          ]);
        }
        // Every node answers each door at least once (NODES - 1 nodes, round robin).
        for (let round = 0; round < NODES; round++) {
          expect(await cell(conversation, 'print(c)')).toEqual({ status: 200, stdout: 'conv\n' });
          expect((await sandbox.runCode('x')).text).toBe('5');
          for (const [index, other] of spread.entries()) expect((await other.runCode('s')).text).toBe(String(index));
          expect(await sandbox.files.read('/home/user/kept.txt')).toBe('drained');
          expect((await Sandbox.getInfo(sandbox.sandboxId)).sandboxId).toBe(sandbox.sandboxId);
          expect((await cluster.run(session, 'print(v)')).json.stdout).toBe('v1\n');
          expect(await jupyterValue(kernel, 'z + 1')).toBe('4');
          expect(await runPython(mcp, 'print(m)', 'kept')).toBe('99');
          expect((await azureRun(identifier, 'print(a)')).stdout).toBe('11\n');
        }
        const connected = await Sandbox.connect(sandbox.sandboxId);
        expect((await connected.runCode('x + 1')).text).toBe('6');

        // node-1 back under its name: what it paused and others resumed goes on where it is.
        await cluster.startNode(1);
        await cluster.served(['node-1', 'node-2', 'node-3']);
        for (let round = 0; round < NODES; round++) {
          expect((await sandbox.runCode('x')).text).toBe('5');
          expect((await cluster.run(session, 'print(v)')).json.stdout).toBe('v1\n');
          expect(await jupyterValue(kernel, 'z')).toBe('3');
          expect(await cell(conversation, 'print(c)')).toEqual({ status: 200, stdout: 'conv\n' });
        }
        // Listed once, with every turn it had on each node.
        const listed = (await cluster.call('/v1/conversations')).json.conversations as Json[];
        expect(listed.filter((entry) => entry.id === conversation)).toMatchObject([{ turnCount: 1 + 2 * NODES }]);
        await mcp.close();
        await sandbox.kill();
        await Promise.all(spread.map((other) => other.kill()));
        await kernel.shutdown();
        expect((await cluster.call(`/v1/sessions/${session}`, undefined, 'DELETE')).status).toBe(204);
      } finally {
        kernels.dispose();
      }
    }, 240_000);

    it('kill -9: its live sandboxes are said lost, its paused ones resume, and none is answered by a fresh sandbox, also once it is back', async () => {
      const live = await sandboxOn('node-2');
      await live.runCode('w = "live"');
      const pausedOne = await sandboxOn('node-2', { lifecycle: { onTimeout: 'pause', autoResume: true } });
      await pausedOne.runCode('w = "paused"');
      await pausedOne.pause();
      const session = (await cluster.sessionsOn(['node-2'])).get('node-2') as string;
      expect((await cluster.run(session, 'w = 1')).json.status).toBe('ok');
      const kernels = kernelManager(cluster);
      const kernelId = (await kernelOn(cluster, kernels, 'node-2')).id;
      const mcp = await mcpClientOn(cluster, 'node-2');
      await runPython(mcp, 'q = 1', 'doomed');
      const identifier = await azureIdentifierOn('node-2', 'q = 1');
      try {
        await listEverywhere(kernels);
      } finally {
        kernels.dispose();
      }
      await cluster.stopNode(2, 'SIGKILL');
      await cluster.unserved('node-2');

      // Lost, in each door's words, from every node, as soon as node-2 is known to be gone.
      // Each node judges node-2 gone by its own clock: until every one does, some still forward to it.
      const lostFrom = Date.now();
      let streak = 0;
      while (streak < NODES && Date.now() - lostFrom < 20_000)
        streak = (await cluster.run(session, 'print(w)')).status === 410 ? streak + 1 : 0;
      expect(streak).toBe(NODES);
      // Jupyter's words: a kernel that does not exist (gateway clients count it culled), saying why.
      const kernel = await cluster.call(`/jupyter/api/kernels/${kernelId}`);
      expect(kernel).toMatchObject({ status: 404, json: { message: expect.stringContaining('node-2 stopped') } });
      // A named session (MCP's, Azure's identifier) is said lost once; its name then starts a new session.
      expect(await runPython(mcp, 'print(q)', 'doomed')).toMatch(/lost: its node node-2 stopped without pausing it/);
      expect(await runPython(mcp, 'print(7 * 6)', 'doomed')).toBe('42');
      expect(await runPython(mcp, "print('q' in globals())", 'doomed')).toBe('False');
      const azureLost = await azureRun(identifier, 'print(q)');
      expect(azureLost.status).toBe(410);
      expect(azureLost.json.error).toMatchObject({ code: 'session-lost', message: expect.stringContaining('node-2') });
      expect((await azureRun(identifier, "print('q' in globals())")).stdout).toBe('False\n');
      await mcp.close();
      for (let round = 0; round < NODES; round++) {
        const v1 = await cluster.run(session, 'print(w)');
        expect(v1.status).toBe(410);
        expect(v1.json.error.code).toBe('session-lost');
        expect(v1.json.error.message).toContain('node-2');
        // The interpreter's SDK shows a status alone; envd's Connect calls carry the message.
        await expect(live.runCode('print(w)')).rejects.toThrow(/410/);
        await expect(live.commands.run('echo fresh')).rejects.toThrow(/node-2 stopped without pausing it/);
        await expect(Sandbox.getInfo(live.sandboxId)).rejects.toThrow(/node-2/);
        // …and the paused one resumes, wherever its traffic lands.
        expect((await pausedOne.runCode('w')).text).toBe('paused');
      }

      await cluster.startNode(2);
      await cluster.served(['node-1', 'node-2', 'node-3']);
      for (let round = 0; round < NODES; round++) {
        expect((await cluster.run(session, 'print(w)')).status).toBe(410);
        await expect(live.runCode('print(w)')).rejects.toThrow(/410/);
        await expect(live.commands.run('echo fresh')).rejects.toThrow(/node-2 stopped without pausing it/);
        expect((await pausedOne.runCode('w')).text).toBe('paused');
      }
      await pausedOne.kill();
    }, 240_000);

    it('a paused sandbox whose node is gone, asked for on two nodes at once: one resumes it, the other forwards, every increment counted once', async () => {
      const sandbox = await sandboxOn('node-3');
      await sandbox.runCode('n = 0');
      const session = (await cluster.sessionsOn(['node-3'])).get('node-3') as string;
      expect((await cluster.run(session, 'k = 0')).json.status).toBe('ok');
      expect(await cluster.stopNode(3, 'SIGTERM')).toBe(0);
      await cluster.unserved('node-3');

      // Increments sent at once land on node-1 and node-2 in turn, all before either has resumed it.
      const increments = 8;
      const [sandboxAnswers, sessionAnswers] = await Promise.all([
        Promise.all(Array.from({ length: increments }, () => sandbox.runCode('n += 1\nn'))),
        Promise.all(Array.from({ length: increments }, () => cluster.run(session, 'k += 1\nprint(k)'))),
      ]);
      expect(sandboxAnswers.map((execution) => Number(execution.text)).sort((a, b) => a - b)).toEqual(
        Array.from({ length: increments }, (_, index) => index + 1),
      );
      for (const answer of sessionAnswers) expect(answer.status, JSON.stringify(answer.json)).toBe(200);
      expect(sessionAnswers.map((answer) => Number(answer.json.stdout)).sort((a, b) => a - b)).toEqual(
        Array.from({ length: increments }, (_, index) => index + 1),
      );
      expect((await sandbox.runCode('n')).text).toBe(String(increments));
      expect((await cluster.run(session, 'print(k)')).json.stdout).toBe(`${increments}\n`);
      await sandbox.kill();
    }, 240_000);
  },
);
