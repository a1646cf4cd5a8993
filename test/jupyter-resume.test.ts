/**
 * A Jupyter kernel across a server restart, driven by JupyterLab's own client
 * library (@jupyterlab/services, over `ws` in Node) on bubblewrap: the
 * stopping server pauses the kernel's session into its state directory; the
 * next server on that directory lists the kernel, and the same client
 * reconnects to it by id and finds its variables, told on stderr which one
 * could not come back. The server's logic (idle pauses, keys, notebook
 * sessions, gone kernels) is in src/server/jupyter/kernel-resume.test.ts.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { type Kernel, KernelAPI, KernelManager, type KernelMessage, ServerConnection } from '@jupyterlab/services';
import { afterAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import type { SandcellServer } from '../src/server/index.js';
import { startTestServer } from './support/server.js';

const KEY = 'resume-key-0123456789';
const stateDirectory = mkdtempSync(path.join(os.tmpdir(), 'sandcell-jupyter-resume-'));
const servers: SandcellServer[] = [];
const managers: KernelManager[] = [];

afterAll(async () => {
  for (const manager of managers) manager.dispose();
  await Promise.all(servers.map((server) => server.close()));
  rmSync(stateDirectory, { recursive: true, force: true });
});

async function start(): Promise<{
  server: SandcellServer;
  settings: ServerConnection.ISettings;
  kernels: KernelManager;
}> {
  const server = await startTestServer({ apiKeys: [`lab:${KEY}`], poolSize: 1, stateDirectory });
  servers.push(server);
  const settings = ServerConnection.makeSettings({
    baseUrl: `${server.url}/jupyter/`,
    wsUrl: `${server.url.replace('http', 'ws')}/jupyter/`,
    token: KEY,
    appendToken: true,
    WebSocket: WebSocket as unknown as typeof globalThis.WebSocket,
  });
  const kernels = new KernelManager({ serverSettings: settings });
  managers.push(kernels);
  await kernels.ready;
  return { server, settings, kernels };
}

async function execute(kernel: Kernel.IKernelConnection, code: string) {
  const streams: KernelMessage.IStreamMsg['content'][] = [];
  const future = kernel.requestExecute({ code, stop_on_error: false });
  future.onIOPub = (message) => {
    if (message.header.msg_type === 'stream') streams.push((message as KernelMessage.IStreamMsg).content);
  };
  const reply = (await future.done) as KernelMessage.IExecuteReplyMsg;
  const text = (name: string) =>
    streams
      .filter((stream) => stream.name === name)
      .map((stream) => stream.text)
      .join('');
  return { reply, stdout: text('stdout'), stderr: text('stderr') };
}

describe('a Jupyter kernel across a server restart (JupyterLab client, bubblewrap)', () => {
  it('reconnects to the same kernel id after the server restarts on its state directory, with its variables', async () => {
    const first = await start();
    const kernel = await first.kernels.startNew({ name: 'python3' });
    expect((await execute(kernel, 'x = 41')).reply.content.status).toBe('ok');
    expect((await execute(kernel, 'import socket\nconn = socket.socket()')).reply.content.status).toBe('ok');
    const id = kernel.id;
    kernel.dispose();
    // A graceful stop pauses every live session (the kernel's too) into the state directory.
    await first.server.close();

    const second = await start();
    // Listed and found without being resumed, as Jupyter Server's gateway asks at every listing.
    expect([...second.kernels.running()].map((model) => [model.id, model.execution_state])).toEqual([[id, 'idle']]);
    const model = await KernelAPI.getKernelModel(id, second.settings);
    expect(model).toMatchObject({ id, name: 'python3', execution_state: 'idle' });
    if (!model) throw new Error('the kernel was not found after the restart');

    const again = second.kernels.connectTo({ model });
    const outcome = await execute(again, 'print(x + 1)');
    expect(outcome.reply.content.status).toBe('ok');
    expect(outcome.stdout).toBe('42\n');
    expect(outcome.stderr).toMatch(/1 variable could not be restored: conn \(/);
    // The count goes on from where it was.
    expect(outcome.reply.content.execution_count).toBe(3);
    await again.shutdown();
  });
});
