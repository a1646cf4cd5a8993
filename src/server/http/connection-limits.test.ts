/**
 * TCP connections stay bounded whatever one client does (overall and per
 * client address, with the key holder still served), and connections that
 * never send a request header are closed: real sockets to a real server on
 * 127.0.0.1, kernels answering from a script. Every socket is closed by the
 * test.
 */
import net from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type Answer, byCode, printed } from '../../../test/support/kernel-script.js';
import { rawRequest, waitFor } from '../../../test/support/raw-http.js';
import { type LogCapture, startScriptedServer } from '../../../test/support/server.js';
import type { SandcellServer } from '../index.js';

type Server = SandcellServer & { logs: LogCapture };
// biome-ignore lint/suspicious/noExplicitAny: response bodies are read loosely in tests
type Json = Record<string, any>;

const KEY = 'limits-test-key-0001';
const keyed = (key = KEY) => ({ authorization: `Bearer ${key}` });
/** Code that runs until the file /mnt/data/go appears (files are written while code runs). */
const WAIT_FOR_GO =
  'import os, time\nprint("started", flush=True)\nwhile not os.path.exists("/mnt/data/go"):\n    time.sleep(0.05)\nprint("released")';

/** What that code does: prints, waits for the file, prints again. */
const waitForGo: Answer = ({ files }) => [
  printed('started\n'),
  { type: 'wait', until: () => files.list().some((entry) => entry.path === 'go') },
  printed('released\n'),
];

const kernel = byCode({ [WAIT_FOR_GO]: waitForGo });

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
      server = await startScriptedServer(kernel, {
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
      server = await startScriptedServer(undefined, { poolSize: 0, headersTimeoutMs: 1_000 });
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

  describe('that stay idle between requests', () => {
    let server: Server;

    beforeAll(async () => {
      server = await startScriptedServer(undefined, { poolSize: 0 });
    });
    afterAll(async () => {
      await server?.close();
    });

    it('are told 5 s, and still answered when a client comes back a little late', async () => {
      const port = server.port;
      const raw = await open(port, '127.0.0.1');
      const ask = async () => {
        const before = raw.received.length;
        raw.socket.write(`GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n\r\n`);
        await waitFor('the answer', () => /\r\n\r\n\{.*\}$/s.test(raw.received.slice(before)));
        return raw.received.slice(before);
      };
      const first = await ask();
      expect(first).toMatch(/^HTTP\/1\.1 200 /);
      expect(first).toMatch(/^keep-alive: timeout=5\r$/im);
      // A client running late (a busy machine) reuses the connection past the time it was told.
      await new Promise((resolve) => setTimeout(resolve, 6_000));
      expect(raw.closed).toBe(false);
      expect(await ask()).toMatch(/^HTTP\/1\.1 200 /);
    });
  });
});
