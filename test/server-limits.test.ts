/**
 * The server's resources stay bounded whatever one client does, over real HTTP on 127.0.0.1:
 * executions queued in a session, MCP sessions per key, TCP connections (overall and per client
 * address, with the key holder still served), and connections that never send a request header.
 * Sockets are bounded in number, and every one is closed by the test.
 */
import net from 'node:net';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { SandcellServer } from '../src/server/index.js';
import { type LogCapture, startTestServer } from './server-helpers.js';
import { formWithFile, rawRequest, waitFor } from './support/raw-http.js';

type Server = SandcellServer & { logs: LogCapture };
// biome-ignore lint/suspicious/noExplicitAny: response bodies are read loosely in tests
type Json = Record<string, any>;

const KEY = 'limits-test-key-0001';
const OTHER_KEY = 'limits-test-key-0002';
const keyed = (key = KEY) => ({ authorization: `Bearer ${key}` });
/** Code that runs until the file /mnt/data/go appears (files are written while code runs). */
const WAIT_FOR_GO =
  'import os, time\nprint("started", flush=True)\nwhile not os.path.exists("/mnt/data/go"):\n    time.sleep(0.05)\nprint("released")';

async function running(server: Server): Promise<number> {
  return ((await rawRequest(server.port, '/healthz')).json as Json).sessions.running as number;
}

describe('executions queued in one session', () => {
  let server: Server;

  beforeAll(async () => {
    server = await startTestServer({ limits: { maxQueuedExecutions: 2 } });
  });
  afterAll(async () => {
    await server?.close();
  });

  const execute = (path: string, code: string, headers: Record<string, string> = {}) =>
    rawRequest(server.port, path, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: JSON.stringify({ code }),
    });

  it('accepts as many as the limit behind a running one, then answers 429 queue-full with Retry-After', async () => {
    const session = (await rawRequest(server.port, '/v1/sessions', { method: 'POST' })).json as Json;
    const path = `/v1/sessions/${session.id}/executions`;
    const blocker = execute(path, WAIT_FOR_GO);
    await waitFor('the first execution to run', async () => (await running(server)) === 1);
    const queued = [execute(path, 'print("second")'), execute(path, '"x" * 3')];
    await waitFor('two executions to queue', async () => (await running(server)) === 3);

    const refused = await execute(path, 'print("one too many")');
    expect(refused.status).toBe(429);
    expect(refused.json.error.code).toBe('queue-full');
    expect(refused.json.error.message).toContain('--max-queued-executions');
    expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
    // A streamed execution is refused with the HTTP status too, before any event.
    const streamed = await execute(path, 'print(1)', { accept: 'application/x-ndjson' });
    expect(streamed.status).toBe(429);
    expect(streamed.json.error.code).toBe('queue-full');

    // Nothing accepted is lost: releasing the first lets every queued one run, and frees the queue.
    const go = await rawRequest(server.port, `/v1/sessions/${session.id}/files/go`, { method: 'PUT', body: 'go' });
    expect(go.status).toBeLessThan(300);
    expect((await blocker).json).toMatchObject({ status: 'ok', stdout: 'started\nreleased\n' });
    const [second, third] = await Promise.all(queued);
    expect(second?.json).toMatchObject({ status: 'ok', stdout: 'second\n' });
    expect(third?.json.results[0].data['text/plain']).toBe("'xxx'");
    expect((await execute(path, 'print("after")')).json).toMatchObject({ status: 'ok', stdout: 'after\n' });
  });

  it('bounds the queue of an Azure identifier the same way (the limit is in the registry)', async () => {
    const identifier = `queue-${server.port}`;
    const path = `/azure/code/execute?identifier=${identifier}&api-version=2024-02-02-preview`;
    const run = (code: string) =>
      rawRequest(server.port, path, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ properties: { codeInputType: 'inline', executionType: 'synchronous', code } }),
      });
    const blocker = run(WAIT_FOR_GO);
    await waitFor('the Azure execution to run', async () => (await running(server)) === 1);
    const queued = [run('1'), run('2')];
    await waitFor('two Azure executions to queue', async () => (await running(server)) === 3);
    const refused = await run('3');
    expect(refused.status).toBe(429);
    expect(refused.json.error.code).toBe('queue-full');

    const form = formWithFile('go', 'go');
    const upload = `/azure/files/upload?identifier=${identifier}&api-version=2024-02-02-preview`;
    await rawRequest(server.port, upload, {
      method: 'POST',
      headers: { 'content-type': form.contentType },
      body: form.body,
    });
    expect((await blocker).json.properties.status).toBe('Success');
    expect((await Promise.all(queued)).map((response) => response.json.properties.result)).toEqual([1, 2]);
  });
});

describe('MCP sessions per key', () => {
  let server: Server;
  const clients: Client[] = [];

  beforeAll(async () => {
    server = await startTestServer({ apiKeys: [KEY, OTHER_KEY], poolSize: 0, limits: { maxMcpSessions: 3 } });
  });
  afterAll(async () => {
    for (const client of clients) await client.close().catch(() => undefined);
    await server?.close();
  });

  async function connect(key = KEY): Promise<{ client: Client; transport: StreamableHTTPClientTransport }> {
    const client = new Client({ name: 'limits-test', version: '1.0.0' });
    const transport = new StreamableHTTPClientTransport(new URL(`${server.url}/mcp`), {
      requestInit: { headers: keyed(key) },
    });
    await client.connect(transport);
    clients.push(client);
    return { client, transport };
  }

  it('refuses the next initialize past the limit, saying how to close one; a closed one frees its slot', async () => {
    const open = [await connect(), await connect(), await connect()];
    await expect(connect()).rejects.toThrow(/DELETE \/mcp/);
    const refused = await rawRequest(server.port, '/mcp', {
      method: 'POST',
      headers: { ...keyed(), 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: { protocolVersion: '2025-03-26', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
      }),
    });
    expect(refused.status).toBe(429);
    expect(refused.json).toMatchObject({ jsonrpc: '2.0', error: { code: -32000 } });
    expect(refused.json.error.message).toContain('Mcp-Session-Id');
    expect(refused.headers['retry-after']).toBeDefined();

    // The limit is per key.
    const other = await connect(OTHER_KEY);
    expect((await other.client.listTools()).tools.length).toBe(5);

    // The open ones keep working; closing one (DELETE /mcp) lets a new one in.
    expect((await open[0]!.client.listTools()).tools.length).toBe(5);
    await open[0]!.transport.terminateSession();
    const next = await connect();
    expect((await next.client.listTools()).tools.length).toBe(5);
    await expect(connect()).rejects.toThrow(/3 MCP sessions open/);
  });
});

describe('MCP sessions that idle out', () => {
  let server: Server;

  beforeAll(async () => {
    server = await startTestServer({ poolSize: 0, idleTimeoutMs: 1_000, limits: { maxMcpSessions: 1 } });
  });
  afterAll(async () => {
    await server?.close();
  });

  it('free their slot', async () => {
    const initialize = () =>
      rawRequest(server.port, '/mcp', {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
        body: JSON.stringify({
          jsonrpc: '2.0',
          id: 1,
          method: 'initialize',
          params: { protocolVersion: '2025-03-26', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
        }),
      });
    expect((await initialize()).status).toBe(200);
    expect((await initialize()).status).toBe(429);
    let next = 0;
    await waitFor('the idle MCP session to close', async () => {
      next = (await initialize()).status;
      return next === 200;
    });
    expect(next).toBe(200);
  });
});

/** A raw TCP connection that sends nothing unless told to, and records what happens to it. */
interface RawSocket {
  socket: net.Socket;
  closed: boolean;
  received: string;
}

describe('connections', () => {
  const sockets: RawSocket[] = [];

  function open(port: number, localAddress: string): Promise<RawSocket> {
    return new Promise((resolve, reject) => {
      const raw: RawSocket = {
        socket: net.connect({ host: '127.0.0.1', port, localAddress }),
        closed: false,
        received: '',
      };
      sockets.push(raw);
      raw.socket.on('data', (chunk) => {
        raw.received += chunk.toString();
      });
      raw.socket.on('error', () => undefined); // a reset from the server is what some tests expect
      raw.socket.on('close', () => {
        raw.closed = true;
      });
      raw.socket.once('connect', () => resolve(raw));
      raw.socket.once('error', reject);
    });
  }

  async function openMany(port: number, localAddress: string, count: number): Promise<RawSocket[]> {
    const opened: RawSocket[] = [];
    for (let index = 0; index < count; index++) opened.push(await open(port, localAddress));
    return opened;
  }

  afterEach(() => {
    for (const raw of sockets.splice(0)) raw.socket.destroy();
  });

  describe('under a flood of idle connections', () => {
    let server: Server;

    beforeAll(async () => {
      server = await startTestServer({
        apiKeys: [KEY],
        maxConnections: 30,
        maxConnectionsPerAddress: 20,
        // Long, so what closes the flood below is the caps, not the header timeout.
        headersTimeoutMs: 60_000,
      });
    });
    afterAll(async () => {
      await server?.close();
    });

    it('keeps each address and the server within its cap, oldest idle first, and still serves the key holder', async () => {
      const port = server.port;
      // A streamed execution on its own connection, running through the whole flood.
      const session = (await rawRequest(port, '/v1/sessions', { method: 'POST', headers: keyed() })).json as Json;
      const stream = await fetch(`${server.url}/v1/sessions/${session.id}/executions?stream=ndjson`, {
        method: 'POST',
        headers: { ...keyed(), 'content-type': 'application/json' },
        body: JSON.stringify({ code: WAIT_FOR_GO }),
      });
      const reader = stream.body!.getReader();
      let events = '';
      while (!events.includes('started')) {
        const { value, done } = await reader.read();
        if (done) throw new Error(`The stream ended early: ${events}`);
        events += new TextDecoder().decode(value);
      }

      // One address: at most 20 of its connections stay open; the oldest idle ones go first.
      const first = await openMany(port, '127.0.0.2', 50);
      await waitFor('the first address to be cut to 20', () => first.filter((raw) => raw.closed).length >= 30);
      expect(first.slice(0, 30).every((raw) => raw.closed)).toBe(true);
      expect(first.slice(30).filter((raw) => !raw.closed).length).toBe(20);

      // A second address pushes the server past 30 in all: idle connections are closed to make room.
      const second = await openMany(port, '127.0.0.3', 20);
      const open = () => [...first, ...second].filter((raw) => !raw.closed).length;
      await waitFor('the server to be cut to its cap', () => open() <= 29);

      // The key holder, on a fresh connection, even from the flooded address, is answered.
      for (const localAddress of ['127.0.0.1', '127.0.0.2', '127.0.0.3']) {
        const answered = await rawRequest(port, '/v1/sessions', { headers: keyed(), localAddress });
        expect(answered.status, localAddress).toBe(200);
        expect(answered.json.sessions.map((entry: Json) => entry.id)).toEqual([session.id]);
      }
      // A client without a key is answered too (it makes room for itself the same way).
      expect((await rawRequest(port, '/healthz', { localAddress: '127.0.0.2' })).status).toBe(200);

      // The streamed execution was never cut: release it and read it to its end.
      const go = await rawRequest(port, `/v1/sessions/${session.id}/files/go`, {
        method: 'PUT',
        headers: keyed(),
        body: 'go',
      });
      expect(go.status).toBeLessThan(300);
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        events += new TextDecoder().decode(value);
      }
      const end = JSON.parse(events.trim().split('\n').at(-1)!) as Json;
      expect(end).toMatchObject({ type: 'execution-end', execution: { status: 'ok', stdout: 'started\nreleased\n' } });
    });
  });

  describe('that send no request', () => {
    let server: Server;

    beforeAll(async () => {
      server = await startTestServer({ poolSize: 0, headersTimeoutMs: 1_000 });
    });
    afterAll(async () => {
      await server?.close();
    });

    it('are closed after the header timeout, silent or half-sent; a complete request is answered', async () => {
      const port = server.port;
      // The canary: this server answers a raw socket that sends a whole request.
      const whole = await open(port, '127.0.0.1');
      whole.socket.write(`GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nConnection: close\r\n\r\n`);
      await waitFor('the answer', () => whole.closed);
      expect(whole.received).toMatch(/^HTTP\/1\.1 200 /);

      const silent = await open(port, '127.0.0.1');
      const halfSent = await open(port, '127.0.0.1');
      halfSent.socket.write(`GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n`);
      await waitFor('both to be closed by the server', () => silent.closed && halfSent.closed);
      expect(silent.received).not.toMatch(/ 200 /);
      expect(halfSent.received).not.toMatch(/ 200 /);
    });
  });
});
