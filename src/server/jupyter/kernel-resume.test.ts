/**
 * Jupyter kernels across a pause, on the scripted backend over real HTTP and
 * websockets: a kernel whose session idled out stays (dormant, listed as idle,
 * its socket open) and its next execution resumes it with its variables and
 * says what did not come back; after a restart on the same state directory it
 * is listed, found, and its channels websocket resumes it; keys stay apart; a
 * dormant kernel shut down is gone. The real JupyterLab client on real kernels
 * is in test/jupyter-resume.test.ts.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { startScriptedServer } from '../../../test/support/server.js';
import type { ScriptedRunContext, ScriptedStep } from '../../backends/scripted/index.js';
import type { SandcellServer } from '../index.js';

// biome-ignore lint/suspicious/noExplicitAny: frames and bodies are read loosely in tests
type Json = Record<string, any>;

const KEY = 'jupyter-resume-key-0123456789';
const OTHER = 'jupyter-resume-other-0123456789';

/** `name = value` binds (`name = <socket>` a value no snapshot keeps); a bare name shows its value. */
function toy({ code, state }: ScriptedRunContext): ScriptedStep[] {
  const assignment = /^(\w+) = (.*)$/.exec(code);
  if (assignment) {
    state.set(assignment[1] ?? '', assignment[2] === '<socket>' ? () => 'a socket' : assignment[2]);
    return [];
  }
  if (!/^\w+$/.test(code)) return [];
  if (!state.has(code)) return [{ type: 'error', name: 'NameError', value: `name '${code}' is not defined` }];
  return [{ type: 'result', data: { 'text/plain': String(state.get(code)) } }];
}

const root = mkdtempSync(path.join(os.tmpdir(), 'sandcell-jupyter-resume-'));
const servers: SandcellServer[] = [];
const sockets: WebSocket[] = [];

async function start(options: { idleTimeoutMs?: number; stateDirectory?: string } = {}) {
  const server = await startScriptedServer(toy, {
    apiKeys: [KEY, `other:${OTHER}`],
    poolSize: 0,
    ...options,
    stateDirectory: options.stateDirectory ?? mkdtempSync(path.join(root, 'state-')),
  });
  servers.push(server);
  const call = (route: string, init: RequestInit & { key?: string; json?: unknown } = {}) =>
    fetch(`${server.url}${route}`, {
      ...init,
      headers: { authorization: `Bearer ${init.key ?? KEY}`, 'content-type': 'application/json' },
      ...(init.json !== undefined ? { body: JSON.stringify(init.json) } : {}),
    });
  const json = async (route: string, init: RequestInit & { key?: string; json?: unknown } = {}, status = 200) => {
    const response = await call(route, init);
    const text = await response.text();
    expect(response.status, `${init.method ?? 'GET'} ${route}: ${text}`).toBe(status);
    return text === '' ? {} : (JSON.parse(text) as Json);
  };
  return { server, call, json };
}

afterEach(async () => {
  for (const socket of sockets.splice(0)) socket.terminate();
  await Promise.all(servers.splice(0).map((server) => server.close()));
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

class Client {
  readonly frames: Json[] = [];
  private waiters: (() => void)[] = [];

  private constructor(readonly socket: WebSocket) {
    socket.on('message', (data) => {
      this.frames.push(JSON.parse(String(data)));
      for (const waiter of this.waiters.splice(0)) waiter();
    });
  }

  /** The kernel's channels socket, or the status its upgrade was refused with. */
  static async open(server: SandcellServer, kernelId: string, key = KEY): Promise<Client | number> {
    const url = `${server.url.replace('http', 'ws')}/jupyter/api/kernels/${kernelId}/channels?token=${key}`;
    const socket = new WebSocket(url);
    sockets.push(socket);
    return new Promise((resolve, reject) => {
      socket.once('open', () => resolve(new Client(socket)));
      socket.once('unexpected-response', (_request, response) => resolve(response.statusCode ?? 0));
      socket.once('error', reject);
    });
  }

  send(msgType: string, content: Record<string, unknown> = {}): string {
    const msgId = randomUUID();
    const header = { msg_id: msgId, msg_type: msgType, session: 'client', username: 'u', date: '', version: '5.3' };
    this.socket.send(JSON.stringify({ header, parent_header: {}, metadata: {}, content, channel: 'shell' }));
    return msgId;
  }

  /** A shell request's reply frame. */
  async reply(msgType: string, content: Record<string, unknown> = {}): Promise<Json> {
    const msgId = this.send(msgType, content);
    for (;;) {
      const answer = this.frames.find(
        (frame) => frame.parent_header.msg_id === msgId && frame.msg_type === msgType.replace(/_request$/, '_reply'),
      );
      if (answer) return answer;
      await new Promise<void>((resolve) => this.waiters.push(resolve));
    }
  }

  /** Runs code: the frames answering it, once its idle status came. */
  async execute(code: string): Promise<Json[]> {
    const msgId = this.send('execute_request', { code });
    for (;;) {
      const mine = this.frames.filter((frame) => frame.parent_header.msg_id === msgId);
      if (mine.some((frame) => frame.msg_type === 'status' && frame.content.execution_state === 'idle')) return mine;
      await new Promise<void>((resolve) => this.waiters.push(resolve));
    }
  }
}

const opened = (client: Client | number): Client => {
  if (typeof client === 'number') throw new Error(`the channels socket was refused: ${client}`);
  return client;
};
const of = (frames: Json[], type: string) => frames.filter((frame) => frame.msg_type === type);

async function sessionState(call: (route: string) => Promise<Response>): Promise<string | undefined> {
  const body = (await (await call('/v1/sessions')).json()) as Json;
  return body.sessions[0]?.state;
}

describe('Jupyter kernels across a pause (scripted)', () => {
  it('keeps a kernel whose session idled out: listed as idle, its socket open; the next cell resumes it and says what did not come back', async () => {
    const { server, call, json } = await start({ idleTimeoutMs: 300 });
    const kernel = await json('/jupyter/api/kernels', { method: 'POST', json: { name: 'python3' } }, 201);
    const client = opened(await Client.open(server, kernel.id));
    expect(of(await client.execute('x = 41'), 'execute_reply')[0]?.content.status).toBe('ok');
    await client.execute('conn = <socket>');

    await expect.poll(() => sessionState(call), { timeout: 10_000 }).toBe('paused');
    expect(client.socket.readyState).toBe(WebSocket.OPEN);
    const listed = await json('/jupyter/api/kernels');
    expect(listed.map((each: Json) => [each.id, each.execution_state, each.connections])).toEqual([
      [kernel.id, 'idle', 1],
    ]);
    // Asking for it, as Jupyter Server's gateway does at every listing, does not resume it.
    expect((await json(`/jupyter/api/kernels/${kernel.id}`)).execution_state).toBe('idle');
    expect(await sessionState(call)).toBe('paused');

    const frames = await client.execute('x');
    expect(of(frames, 'stream').map((frame) => [frame.content.name, frame.content.text])).toEqual([
      [
        'stderr',
        expect.stringContaining(
          '1 variable could not be restored: conn (function). Run the cells that made them again.',
        ),
      ],
    ]);
    expect(of(frames, 'execute_result')[0]?.content).toMatchObject({
      data: { 'text/plain': '41' },
      execution_count: 3,
    });
    expect(await sessionState(call)).toBe('running');
    // Said once.
    expect(of(await client.execute('x'), 'stream')).toEqual([]);
  });

  it('after a restart on the same state directory: lists the kernel and its notebook session, finds it, and its channels socket resumes it', async () => {
    const first = await start();
    const kernel = await first.json('/jupyter/api/kernels', { method: 'POST', json: {} }, 201);
    const notebook = await first.json(
      '/jupyter/api/sessions',
      { method: 'POST', json: { path: 'work.ipynb', name: 'work.ipynb', type: 'notebook', kernel: { id: kernel.id } } },
      201,
    );
    const client = opened(await Client.open(first.server, kernel.id));
    await client.execute('x = 41');
    await first.server.close();

    const second = await start({ stateDirectory: first.server.options.stateDirectory as string });
    // Another key sees nothing of it.
    expect(await second.json('/jupyter/api/kernels', { key: OTHER })).toEqual([]);
    expect((await second.call(`/jupyter/api/kernels/${kernel.id}`, { key: OTHER })).status).toBe(404);
    expect(await Client.open(second.server, kernel.id, OTHER)).toBe(404);
    expect(await second.json('/jupyter/api/sessions', { key: OTHER })).toEqual([]);

    expect(await second.json(`/jupyter/api/kernels/${kernel.id}`)).toMatchObject({
      id: kernel.id,
      name: 'python3',
      execution_state: 'idle',
      connections: 0,
    });
    expect((await second.json('/jupyter/api/kernels')).map((each: Json) => each.id)).toEqual([kernel.id]);
    expect(await second.json('/jupyter/api/sessions')).toEqual([
      expect.objectContaining({
        id: notebook.id,
        path: 'work.ipynb',
        kernel: expect.objectContaining({ id: kernel.id }),
      }),
    ]);
    expect(await sessionState(second.call)).toBe('paused');

    const again = opened(await Client.open(second.server, kernel.id));
    expect(await sessionState(second.call)).toBe('running');
    // Its history came back with it (what IPython's %history and the console's up-arrow read).
    const history = await again.reply('history_request', { hist_access_type: 'tail', n: 10, output: false, raw: true });
    expect(history.content).toMatchObject({ status: 'ok', history: [[1, 1, 'x = 41']] });
    const frames = await again.execute('x');
    expect(of(frames, 'execute_result')[0]?.content).toMatchObject({
      data: { 'text/plain': '41' },
      execution_count: 2,
    });
    expect(of(frames, 'stream')).toEqual([]);
    expect((await second.json(`/jupyter/api/kernels/${kernel.id}`)).connections).toBe(1);
  });

  it('shuts a dormant kernel down: its paused state goes, and it is not found, here or after a restart', async () => {
    const first = await start({ idleTimeoutMs: 300 });
    const kernel = await first.json('/jupyter/api/kernels', { method: 'POST', json: {} }, 201);
    await expect.poll(() => sessionState(first.call), { timeout: 10_000 }).toBe('paused');
    expect((await first.call(`/jupyter/api/kernels/${kernel.id}`, { method: 'DELETE', key: OTHER })).status).toBe(404);
    expect((await first.call(`/jupyter/api/kernels/${kernel.id}`, { method: 'DELETE' })).status).toBe(204);
    expect((await first.call(`/jupyter/api/kernels/${kernel.id}`)).status).toBe(404);
    expect(await Client.open(first.server, kernel.id)).toBe(404);
    expect(await sessionState(first.call)).toBeUndefined();
    await first.server.close();

    const second = await start({ stateDirectory: first.server.options.stateDirectory as string });
    expect(await second.json('/jupyter/api/kernels')).toEqual([]);
    expect((await second.call(`/jupyter/api/kernels/${kernel.id}`)).status).toBe(404);
  });

  it('culls a kernel whose session could not be paused: after a restart it is not listed, not found, and its socket is refused', async () => {
    const first = await start();
    const kernel = await first.json('/jupyter/api/kernels', { method: 'POST', json: {} }, 201);
    // Its sandbox ends under it: the shutdown's pause fails, and the record says the session was lost.
    await first.server.closeSandboxes();
    await first.server.close();

    const second = await start({ stateDirectory: first.server.options.stateDirectory as string });
    expect(await second.json('/jupyter/api/kernels')).toEqual([]);
    expect((await second.call(`/jupyter/api/kernels/${kernel.id}`)).status).toBe(404);
    expect(await Client.open(second.server, kernel.id)).toBe(404);
  });

  it('ends a dormant kernel whose paused session was deleted elsewhere: the next cell is told, then the socket closes', async () => {
    const { server, call, json } = await start({ idleTimeoutMs: 300 });
    const kernel = await json('/jupyter/api/kernels', { method: 'POST', json: {} }, 201);
    const client = opened(await Client.open(server, kernel.id));
    await client.execute('x = 41');
    await expect.poll(() => sessionState(call), { timeout: 10_000 }).toBe('paused');
    expect((await call(`/v1/sessions/${kernel.id}`, { method: 'DELETE' })).status).toBe(204);
    const closed = new Promise((resolve) => client.socket.once('close', resolve));
    const msgId = client.send('execute_request', { code: 'x' });
    await closed;
    const mine = client.frames.filter((frame) => frame.parent_header.msg_id === msgId);
    expect(of(mine, 'execute_reply')[0]?.content).toMatchObject({ status: 'error' });
    expect(of(mine, 'error')[0]?.content).toMatchObject({
      ename: 'KernelGone',
      evalue: expect.stringContaining(`Kernel ${kernel.id} is gone`),
    });
    expect(client.frames.at(-1)?.content).toEqual({ execution_state: 'dead' });
    expect((await call(`/jupyter/api/kernels/${kernel.id}`)).status).toBe(404);
    expect(await json('/jupyter/api/kernels')).toEqual([]);
  });

  it('restarts a dormant kernel over REST: resumed first, then a fresh kernel of the same language', async () => {
    const { server, call, json } = await start({ idleTimeoutMs: 300 });
    const kernel = await json('/jupyter/api/kernels', { method: 'POST', json: {} }, 201);
    const client = opened(await Client.open(server, kernel.id));
    await client.execute('x = 41');
    await expect.poll(() => sessionState(call), { timeout: 10_000 }).toBe('paused');
    expect(await json(`/jupyter/api/kernels/${kernel.id}/restart`, { method: 'POST' })).toMatchObject({
      id: kernel.id,
      execution_state: 'idle',
    });
    expect(await sessionState(call)).toBe('running');
    const frames = await client.execute('x');
    expect(of(frames, 'error')[0]?.content.ename).toBe('NameError');
    expect(of(frames, 'execute_input')[0]?.content.execution_count).toBe(1);
  });
});
