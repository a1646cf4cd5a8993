/**
 * Terminals through the server's doors, on real bubblewrap sandboxes and real HTTP and WebSockets on
 * 127.0.0.1: JupyterLab's own client library (`TerminalManager` of @jupyterlab/services) against
 * `/jupyter`, and /v1's terminal routes with their WebSocket (the key in Authorization, or in the
 * subprotocol a browser uses), a reattach with the recent output, another key and a foreign Origin
 * refused, hostile frames dropped with the terminal serving on, and a pause that ends a terminal saying so.
 */

import { PageConfig } from '@jupyterlab/coreutils';
import { ServerConnection, TerminalManager } from '@jupyterlab/services';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import type { SandcellServer } from '../src/server/index.js';
import { type LogCapture, startTestServer } from './support/server.js';

const KEY = 'term-key-0123456789';
const OTHER = 'other-key-0123456789';
let server: SandcellServer & { logs: LogCapture };

beforeAll(async () => {
  server = await startTestServer({ apiKeys: [`term:${KEY}`, `other:${OTHER}`], poolSize: 1 });
});
afterAll(async () => {
  await server?.close();
});

const api = (path: string, init: RequestInit & { key?: string } = {}) =>
  fetch(`${server.url}${path}`, {
    ...init,
    headers: {
      authorization: `Bearer ${init.key ?? KEY}`,
      'content-type': 'application/json',
      ...(init.headers as Record<string, string> | undefined),
    },
  });

/** A /v1 terminal socket: what it got, as text, and its control messages. */
function openSocket(path: string, options: { key?: string; browser?: boolean; origin?: string } = {}) {
  const key = options.key ?? KEY;
  const url = `${server.url.replace('http', 'ws')}${path}`;
  const socket = options.browser
    ? new WebSocket(url, ['sandcell.terminal', `sandcell.key.${Buffer.from(key).toString('base64url')}`], {
        ...(options.origin ? { origin: options.origin } : {}),
      })
    : new WebSocket(url, ['sandcell.terminal'], {
        headers: { authorization: `Bearer ${key}` },
        ...(options.origin ? { origin: options.origin } : {}),
      });
  const state = { text: '', controls: [] as Record<string, unknown>[], closed: false };
  socket.on('message', (data, isBinary) => {
    if (isBinary) state.text += Buffer.from(data as Buffer).toString('utf8');
    else state.controls.push(JSON.parse(String(data)) as Record<string, unknown>);
  });
  socket.on('close', () => {
    state.closed = true;
  });
  const opened = new Promise<void>((resolve, reject) => {
    socket.once('open', () => resolve());
    socket.once('unexpected-response', (_request, response) => reject(new Error(`refused: ${response.statusCode}`)));
    socket.once('error', reject);
  });
  return {
    socket,
    state,
    opened,
    type: (text: string) => socket.send(Buffer.from(text), { binary: true }),
    async waitFor(pattern: RegExp, ms = 15_000) {
      const deadline = Date.now() + ms;
      while (!pattern.test(state.text)) {
        if (Date.now() > deadline)
          throw new Error(`No ${pattern}; the terminal shows ${JSON.stringify(state.text.slice(-300))}`);
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    },
  };
}

describe('Jupyter terminals', () => {
  it('JupyterLab’s TerminalManager opens a shell, types into it, resizes it, lists and shuts it down', async () => {
    PageConfig.setOption('terminalsAvailable', 'true');
    const settings = ServerConnection.makeSettings({
      baseUrl: `${server.url}/jupyter/`,
      wsUrl: `${server.url.replace('http', 'ws')}/jupyter/`,
      token: KEY,
      appendToken: true,
      WebSocket: WebSocket as unknown as typeof globalThis.WebSocket,
    });
    const manager = new TerminalManager({ serverSettings: settings });
    await manager.ready;
    expect(manager.isAvailable()).toBe(true);
    const terminal = await manager.startNew();
    let output = '';
    terminal.messageReceived.connect((_sender, message) => {
      if (message.type === 'stdout') output += String(message.content?.[0] ?? '');
    });
    const waitFor = async (pattern: RegExp) => {
      const deadline = Date.now() + 15_000;
      while (!pattern.test(output)) {
        if (Date.now() > deadline) throw new Error(`No ${pattern}; got ${JSON.stringify(output.slice(-300))}`);
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    };
    await new Promise<void>((resolve) => {
      if (terminal.connectionStatus === 'connected') resolve();
      else terminal.connectionStatusChanged.connect((_sender, status) => status === 'connected' && resolve());
    });
    terminal.send({ type: 'stdin', content: ['echo $((6*7)); tty\r'] });
    await waitFor(/[\r\n]42\r\n\/dev\/pts\/\d+/);
    terminal.send({ type: 'set_size', content: [40, 120, 0, 0] });
    terminal.send({ type: 'stdin', content: ['stty size\r'] });
    await waitFor(/[\r\n]40 120\r\n/);
    await manager.refreshRunning();
    expect([...manager.running()].map((model) => model.name)).toContain(terminal.name);
    // Another key does not see it.
    const theirs = await fetch(`${server.url}/jupyter/api/terminals`, { headers: { authorization: `token ${OTHER}` } });
    expect(await theirs.json()).toEqual([]);
    const theirOne = await fetch(`${server.url}/jupyter/api/terminals/${terminal.name}`, {
      headers: { authorization: `token ${OTHER}` },
    });
    expect(theirOne.status).toBe(404);
    await manager.shutdown(terminal.name);
    const gone = await fetch(`${server.url}/jupyter/api/terminals/${terminal.name}`, {
      headers: { authorization: `token ${KEY}` },
    });
    expect(gone.status).toBe(404);
    manager.dispose();
  });
});

describe('/v1 terminals', () => {
  let session: string;
  beforeAll(async () => {
    const created = await api('/v1/sessions', { method: 'POST', body: '{}' });
    session = ((await created.json()) as { id: string }).id;
  });

  it('opens a terminal whose WebSocket carries its bytes both ways, with resize and signal messages', async () => {
    const opened = await api(`/v1/sessions/${session}/terminals`, {
      method: 'POST',
      body: JSON.stringify({ cols: 100, rows: 30 }),
    });
    expect(opened.status).toBe(201);
    const terminal = (await opened.json()) as { id: string; socket: string; cols: number; rows: number };
    expect(terminal).toMatchObject({ cols: 100, rows: 30, socket: `/v1/sessions/${session}/terminals/${terminal.id}` });
    const client = openSocket(terminal.socket);
    await client.opened;
    client.type('echo $((6*7)); stty size\r');
    await client.waitFor(/[\r\n]42\r\n30 100\r\n/);
    expect(client.state.controls[0]).toMatchObject({ type: 'ready', id: terminal.id, cols: 100, rows: 30 });
    client.socket.send(JSON.stringify({ type: 'resize', cols: 90, rows: 20 }));
    client.type('stty size\r');
    await client.waitFor(/[\r\n]20 90\r\n/);
    client.type('sleep 100\r');
    await new Promise((resolve) => setTimeout(resolve, 300));
    client.socket.send(JSON.stringify({ type: 'signal', signal: 'SIGINT' }));
    client.type('echo "alive $((1+1))"\r');
    await client.waitFor(/alive 2/);
    // Hostile frames: not JSON, an unknown message, a size out of bounds, a bad signal: dropped; it serves on.
    for (const frame of [
      'not json',
      '{"type":"reboot"}',
      '{"type":"resize","cols":0,"rows":99999}',
      '{"type":"signal","signal":"SIGSEGV"}',
    ]) {
      client.socket.send(frame);
    }
    client.type('echo "still $((2+2))"\r');
    await client.waitFor(/still 4/);
    const listed = (await (await api(`/v1/sessions/${session}/terminals`)).json()) as { terminals: { id: string }[] };
    expect(listed.terminals.map((entry) => entry.id)).toContain(terminal.id);
    expect((await api(`/v1/sessions/${session}/terminals/${terminal.id}`, { method: 'DELETE' })).status).toBe(204);
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(client.state.controls.at(-1)).toMatchObject({ type: 'exit', signal: 'SIGKILL' });
    expect(client.state.closed).toBe(true);
  });

  it('a browser’s key in the subprotocol reattaches to a terminal and sees what it wrote meanwhile', async () => {
    const terminal = (await (await api(`/v1/sessions/${session}/terminals`, { method: 'POST' })).json()) as {
      id: string;
      socket: string;
    };
    const first = openSocket(terminal.socket, { browser: true });
    await first.opened;
    expect(first.socket.protocol).toBe('sandcell.terminal');
    first.type('sleep 0.3; echo "later-$((3*3))"\r');
    first.socket.close();
    await new Promise((resolve) => setTimeout(resolve, 800));
    const second = openSocket(terminal.socket, { browser: true });
    await second.opened;
    await second.waitFor(/later-9/);
    // Typed through REST, for clients without a socket.
    expect(
      (
        await api(`/v1/sessions/${session}/terminals/${terminal.id}/input`, {
          method: 'POST',
          body: JSON.stringify({ data: 'echo rest-$((5*5))\r' }),
        })
      ).status,
    ).toBe(204);
    await second.waitFor(/rest-25/);
    await api(`/v1/sessions/${session}/terminals/${terminal.id}`, { method: 'DELETE' });
  });

  it('refuses another key, no key, and a foreign browser Origin; the canary connects', async () => {
    const terminal = (await (await api(`/v1/sessions/${session}/terminals`, { method: 'POST' })).json()) as {
      id: string;
      socket: string;
    };
    const canary = openSocket(terminal.socket);
    await canary.opened;
    canary.socket.close();
    await expect(openSocket(terminal.socket, { key: OTHER }).opened).rejects.toThrow(/refused: 404/);
    await expect(openSocket(terminal.socket, { key: 'not-a-key' }).opened).rejects.toThrow(/refused: 401/);
    await expect(openSocket(terminal.socket, { browser: true, origin: 'https://evil.example' }).opened).rejects.toThrow(
      /refused: 403/,
    );
    expect((await api(`/v1/sessions/${session}/terminals`, { method: 'POST', key: OTHER })).status).toBe(404);
    await api(`/v1/sessions/${session}/terminals/${terminal.id}`, { method: 'DELETE' });
  });

  it('a pause ends an open terminal, saying so on its socket', async () => {
    const created = await api('/v1/sessions', { method: 'POST', body: '{}' });
    const id = ((await created.json()) as { id: string }).id;
    const terminal = (await (await api(`/v1/sessions/${id}/terminals`, { method: 'POST' })).json()) as {
      socket: string;
    };
    const client = openSocket(terminal.socket);
    await client.opened;
    client.type('echo before\r');
    await client.waitFor(/before/);
    expect((await api(`/v1/sessions/${id}/pause`, { method: 'POST' })).status).toBeLessThan(300);
    const deadline = Date.now() + 10_000;
    while (!client.state.closed && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
    expect(client.state.controls.at(-1)).toMatchObject({
      type: 'exit',
      reason: expect.stringMatching(/paused.*not kept by a pause/),
    });
    expect(await (await api(`/v1/sessions/${id}/terminals`)).json()).toEqual({ terminals: [] });
    await api(`/v1/sessions/${id}`, { method: 'DELETE' });
  });
});
