/**
 * Requests an attacker sends, as raw bytes on a socket (an HTTP client would
 * normalise them), to every front door of a real `sandcell serve` process,
 * with a key, without one, and on a server that has none. After each, the
 * same process still answers /healthz and a live session still has its
 * variable: no request, however malformed, ends the server or its sessions.
 * (A backslash in the path used to end the process with ERR_HTTP_HEADERS_SENT.)
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { runProcess } from './support/process.js';
import { CRLF, head, host, sendRaw } from './support/raw-socket.js';
import { removeStateDirectory } from './support/volumes.js';

const bin = path.resolve(import.meta.dirname, '..', 'bin', 'sandcell.js');
const KEY = 'hostile-test-key-000000000001';

interface Serve {
  child: ChildProcess;
  port: number;
  exited: () => string | undefined;
  logs: Record<string, unknown>[];
}

/** The sweep's state directory: the volumes' routes answer for real (a server without one refuses them, 501). */
const stateDirectory = mkdtempSync(path.join(os.tmpdir(), 'sandcell-hostile-'));
afterAll(() => removeStateDirectory(stateDirectory));

async function startServe(keys: string): Promise<Serve> {
  // No executions-per-minute limit: the sweep checks its session after every request, hundreds a minute.
  const args = ['serve', '--port', '0', '--pool-size', '1', '--preload', 'none', '--executions-per-minute', '0'];
  const child = spawn(process.execPath, [bin, ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: {
      ...process.env,
      SANDCELL_API_KEYS: keys,
      SANDCELL_STATE_DIR: path.join(stateDirectory, keys ? 'keys' : 'keyless'),
    },
  });
  let exit: string | undefined;
  let stderr = '';
  child.stderr?.on('data', (chunk) => {
    stderr += chunk;
  });
  child.once('exit', (code, signal) => {
    exit = `serve exited (${code ?? signal}): ${stderr.slice(-2000)}`;
  });
  const logs: Record<string, unknown>[] = [];
  const url = await new Promise<string>((resolve, reject) => {
    createInterface({ input: child.stdout as NodeJS.ReadableStream }).on('line', (line) => {
      const entry = JSON.parse(line) as Record<string, unknown>;
      logs.push(entry);
      if (typeof entry.url === 'string') resolve(entry.url);
    });
    child.once('exit', () => reject(new Error(exit)));
  });
  return { child, port: Number(new URL(url).port), exited: () => exit, logs };
}

/** One hostile request: its bytes for a front door's path, and how to send them. */
interface HostileCase {
  name: string;
  bytes(target: string, auth: string, port: number): string | Buffer;
  halfClose?: boolean;
  waitMs?: number;
  /** How many whole answers to read (1 unless said). */
  answers?: number;
}

const CASES: HostileCase[] = [
  {
    name: 'backslashes climbing out of the path',
    bytes: (target, auth, port) => head([`GET ${target}/..\\..\\package.json HTTP/1.1`, host(port), auth]),
  },
  { name: 'a lone backslash', bytes: (target, auth, port) => head([`GET ${target}\\ HTTP/1.1`, host(port), auth]) },
  {
    name: 'invalid percent-encoding',
    bytes: (target, auth, port) => head([`GET ${target}/%zz%/%E0%A4%A HTTP/1.1`, host(port), auth]),
  },
  {
    name: 'overlong UTF-8 percent-encoding of dots and a slash',
    bytes: (target, auth, port) => head([`GET ${target}/%C0%AE%C0%AE%C0%AF%e0%80%af HTTP/1.1`, host(port), auth]),
  },
  {
    name: 'an encoded NUL, CR and LF',
    bytes: (target, auth, port) => head([`GET ${target}/%00%0d%0aX-Injected:%20yes HTTP/1.1`, host(port), auth]),
  },
  {
    name: 'a raw NUL and control bytes in the target',
    bytes: (target, auth, port) => head([`GET ${target}/\x00\x01\x7f HTTP/1.1`, host(port), auth]),
  },
  {
    name: 'a control byte in a header value',
    bytes: (target, auth, port) => head([`GET ${target} HTTP/1.1`, host(port), auth, 'X-Note: a\x01b']),
  },
  {
    name: 'an absolute-form target for this server',
    bytes: (target, auth, port) => head([`GET http://127.0.0.1:${port}${target} HTTP/1.1`, host(port), auth]),
  },
  {
    name: 'an absolute-form target for another host',
    bytes: (target, auth, port) => head([`GET http://evil.example${target} HTTP/1.1`, host(port), auth]),
  },
  {
    name: 'an absolute-form target that is not a URL',
    bytes: (target, auth, port) => head([`GET http://[::1${target}\\x HTTP/1.1`, host(port), auth]),
  },
  { name: 'an asterisk-form OPTIONS', bytes: (_target, auth, port) => head(['OPTIONS * HTTP/1.1', host(port), auth]) },
  { name: 'an asterisk-form GET', bytes: (_target, auth, port) => head(['GET * HTTP/1.1', host(port), auth]) },
  {
    name: 'a target without a slash',
    bytes: (target, auth, port) => head([`GET x${target} HTTP/1.1`, host(port), auth]),
  },
  {
    name: 'CONNECT',
    bytes: (_target, auth, port) => head([`CONNECT 127.0.0.1:${port} HTTP/1.1`, host(port), auth]),
  },
  { name: 'TRACE', bytes: (target, auth, port) => head([`TRACE ${target} HTTP/1.1`, host(port), auth]) },
  { name: 'an unknown method', bytes: (target, auth, port) => head([`BREW ${target} HTTP/1.1`, host(port), auth]) },
  { name: 'PROPFIND', bytes: (target, auth, port) => head([`PROPFIND ${target} HTTP/1.1`, host(port), auth]) },
  { name: 'no Host in HTTP/1.1', bytes: (target, auth) => head([`GET ${target} HTTP/1.1`, auth]) },
  { name: 'no Host in HTTP/1.0', bytes: (target, auth) => head([`GET ${target} HTTP/1.0`, auth]) },
  {
    name: 'two conflicting Host headers',
    bytes: (target, auth, port) => head([`GET ${target} HTTP/1.1`, host(port), 'Host: evil.example', auth]),
  },
  {
    name: 'a Host that is not a host',
    bytes: (target, auth) => head([`GET ${target} HTTP/1.1`, 'Host: [::1', auth]),
  },
  {
    name: 'a Host with a path and a backslash',
    bytes: (target, auth) => head([`GET ${target} HTTP/1.1`, 'Host: 127.0.0.1\\@evil/x', auth]),
  },
  {
    name: 'two conflicting Content-Length headers',
    bytes: (target, auth, port) =>
      `${head([`POST ${target} HTTP/1.1`, host(port), auth, 'Content-Length: 2', 'Content-Length: 9'])}{}`,
  },
  {
    name: 'Content-Length beside Transfer-Encoding',
    bytes: (target, auth, port) =>
      `${head([`POST ${target} HTTP/1.1`, host(port), auth, 'Content-Type: application/json', 'Content-Length: 4', 'Transfer-Encoding: chunked'])}2${CRLF}{}${CRLF}0${CRLF}${CRLF}`,
  },
  {
    name: 'two Authorization headers, one of them wrong',
    bytes: (target, auth, port) =>
      head([`GET ${target} HTTP/1.1`, host(port), auth, 'Authorization: Bearer wrong-key-000000000000']),
  },
  {
    name: 'two conflicting Content-Type headers',
    bytes: (target, auth, port) =>
      `${head([`POST ${target} HTTP/1.1`, host(port), auth, 'Content-Type: application/json', 'Content-Type: text/plain', 'Content-Length: 2'])}{}`,
  },
  {
    name: 'a body on GET',
    bytes: (target, auth, port) =>
      `${head([`GET ${target} HTTP/1.1`, host(port), auth, 'Content-Type: application/json', 'Content-Length: 11'])}{"code":"1"}`,
  },
  {
    name: 'a body that is not JSON',
    bytes: (target, auth, port) =>
      `${head([`POST ${target} HTTP/1.1`, host(port), auth, 'Content-Type: application/json', 'Content-Length: 6'])}{"a":\x00`,
  },
  {
    name: 'a truncated chunked body',
    bytes: (target, auth, port) =>
      `${head([`POST ${target} HTTP/1.1`, host(port), auth, 'Content-Type: application/json', 'Transfer-Encoding: chunked'])}ff${CRLF}{"code":`,
    halfClose: true,
  },
  {
    name: 'a chunked body cut off mid-request, the connection left open',
    bytes: (target, auth, port) =>
      `${head([`POST ${target} HTTP/1.1`, host(port), auth, 'Content-Type: application/json', 'Transfer-Encoding: chunked'])}5${CRLF}{"cod`,
    waitMs: 300,
  },
  {
    name: 'an invalid chunk size',
    bytes: (target, auth, port) =>
      `${head([`POST ${target} HTTP/1.1`, host(port), auth, 'Transfer-Encoding: chunked'])}zz${CRLF}{}${CRLF}0${CRLF}${CRLF}`,
  },
  {
    name: 'a Content-Length longer than the body, then a half-close',
    bytes: (target, auth, port) =>
      `${head([`POST ${target} HTTP/1.1`, host(port), auth, 'Content-Type: application/json', 'Content-Length: 100'])}{"co`,
    halfClose: true,
  },
  {
    name: 'an upgrade to an unknown protocol',
    bytes: (target, auth, port) =>
      head([`GET ${target} HTTP/1.1`, host(port), auth, 'Connection: Upgrade', 'Upgrade: brew/1.0']),
  },
  {
    name: 'an upgrade to h2c, as curl --http2 asks',
    bytes: (target, auth, port) =>
      head([
        `GET ${target} HTTP/1.1`,
        host(port),
        auth,
        'Connection: Upgrade, HTTP2-Settings',
        'Upgrade: h2c',
        'HTTP2-Settings: AAMAAABkAAQCAAAAAAIAAAAA',
      ]),
  },
  {
    name: 'a websocket upgrade without its key',
    bytes: (target, auth, port) =>
      head([`GET ${target} HTTP/1.1`, host(port), auth, 'Connection: Upgrade', 'Upgrade: websocket']),
  },
  {
    name: 'a websocket upgrade with a backslash and bad encoding',
    bytes: (target, auth, port) =>
      head([
        `GET ${target}/%zz\\..\\ HTTP/1.1`,
        host(port),
        auth,
        'Connection: Upgrade',
        'Upgrade: websocket',
        'Sec-WebSocket-Version: 13',
        'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==',
      ]),
  },
  {
    name: 'a 20 KiB target',
    bytes: (target, auth, port) => head([`GET ${target}/${'a'.repeat(20 * 1024)} HTTP/1.1`, host(port), auth]),
  },
  {
    name: 'a header line of 40 KiB',
    bytes: (target, auth, port) =>
      head([`GET ${target} HTTP/1.1`, host(port), auth, `X-Big: ${'b'.repeat(40 * 1024)}`]),
  },
  {
    name: 'a bare LF request with an obsolete folded header',
    bytes: (target, auth, port) => `GET ${target} HTTP/1.1\n${host(port)}\n${auth}\nX-Fold: a\n b\n\n`,
  },
  {
    name: 'an HTTP/2 preface',
    bytes: () => 'PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n',
  },
  {
    name: 'HTTP/9.9',
    bytes: (target, auth, port) => head([`GET ${target} HTTP/9.9`, host(port), auth]),
  },
  {
    name: 'two pipelined requests, the second malformed',
    bytes: (target, auth, port) =>
      head([`GET /healthz HTTP/1.1`, host(port)]) + head([`GET ${target}\\x HTTP/1.1`, host(port), auth]),
    answers: 2,
  },
];

/** Every front door's path, as a request to it starts (each case adds its own twist). */
const DOORS = [
  '/',
  '/assets/index.js',
  '/v1/sessions',
  '/v1/sessions/hostile-session/pause',
  '/v1/sessions/hostile-session/terminals',
  '/v1/sessions/hostile-session/terminals/terminal-1',
  '/v1/snapshots',
  '/v1/volumes',
  '/v1/volumes/hostile/files/a/b.txt',
  '/azure/code/execute?identifier=hostile&api-version=2024-02-02-preview',
  '/e2b/sandboxes',
  '/e2b/volumes',
  '/e2b/volumecontent/vol00000000000000000000/file?path=/a',
  '/jupyter/api/kernels',
  '/jupyter/api/kernels/00000000-0000-0000-0000-000000000000/channels',
  '/jupyter/api/terminals',
  '/jupyter/terminals/websocket/hostile-terminal',
  '/mcp',
  '/metrics',
];

describe.each([
  { label: 'a server with keys', keys: KEY, modes: ['with its key', 'without a key'] },
  { label: 'a server without keys', keys: '', modes: ['without a key'] },
])('hostile requests to $label', ({ keys, modes }) => {
  let serve: Serve;
  let sessionId: string;
  const authHeader: Record<string, string> = keys ? { authorization: `Bearer ${KEY}` } : {};

  const call = async (target: string, body?: unknown) => {
    const response = await fetch(`http://127.0.0.1:${serve.port}${target}`, {
      method: body === undefined ? 'GET' : 'POST',
      headers: { ...authHeader, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: response.status, json: (await response.json()) as Record<string, unknown> };
  };

  beforeAll(async () => {
    serve = await startServe(keys);
    const created = await call('/v1/sessions', {});
    expect(created.status).toBe(201);
    sessionId = String(created.json.id);
    const set = await call(`/v1/sessions/${sessionId}/executions`, { code: 'x = 41' });
    expect(set.status).toBe(200);
  });
  afterAll(async () => {
    if (serve.child.exitCode === null && serve.child.signalCode === null) {
      const exited = new Promise((resolve) => serve.child.once('exit', resolve));
      serve.child.kill('SIGTERM');
      await exited;
    }
  });

  /** The server still serves, and the session still holds what it was given. */
  const expectStillServing = async (what: string) => {
    expect(serve.exited(), what).toBeUndefined();
    const health = await fetch(`http://127.0.0.1:${serve.port}/healthz`);
    expect(health.status, what).toBe(200);
    const run = await call(`/v1/sessions/${sessionId}/executions`, { code: 'x + 1' });
    expect(run.status, what).toBe(200);
    expect(JSON.stringify(run.json.results), what).toContain('42');
  };

  for (const mode of modes) {
    it.each(DOORS)(
      `%s: every hostile request ${mode} is answered or closed, and nothing else is touched`,
      async (door) => {
        const auth = mode === 'with its key' ? `Authorization: Bearer ${KEY}` : 'X-Nothing: 1';
        const seen: string[] = [];
        for (const hostile of CASES) {
          const what = `${hostile.name} to ${door} ${mode}`;
          const answer = await sendRaw(serve.port, hostile.bytes(door, auth, serve.port), hostile);
          // Malformed input is the client's fault: never a 5xx, which would mean the server tripped on it.
          if (answer.status !== undefined)
            expect(answer.status, `${what}: ${answer.text.slice(0, 300)}`).toBeLessThan(500);
          seen.push(`${hostile.name}: ${answer.status ?? 'closed'}`);
          await expectStillServing(what);
        }
        // Most cases are answered with a status (a closed connection alone would also pass the loop above).
        expect(seen.filter((line) => /: [1-4]\d\d$/.test(line)).length).toBeGreaterThan(CASES.length / 2);
      },
    );
  }

  it.each([
    {
      via: 'a sandbox port’s host name',
      rewrite: (line: string) => line.replace(/^Host: 127\.0\.0\.1:(\d+)$/m, 'Host: 3000-nosuchsandbox.localhost:$1'),
    },
    {
      via: 'E2B’s port headers',
      rewrite: (line: string) =>
        line.replace(/^(Host: 127\.0\.0\.1:\d+)$/m, '$1\r\nE2b-Sandbox-Id: nosuchsandbox\r\nE2b-Sandbox-Port: 3000'),
    },
  ])(
    'every hostile request for a port, by $via, is answered or closed, and nothing else is touched',
    async ({ rewrite }) => {
      const seen: string[] = [];
      for (const hostile of CASES) {
        const what = `${hostile.name} to a port`;
        const bytes = hostile.bytes('/', 'X-Nothing: 1', serve.port);
        const answer = await sendRaw(serve.port, typeof bytes === 'string' ? rewrite(bytes) : bytes, hostile);
        if (answer.status !== undefined)
          expect(answer.status, `${what}: ${answer.text.slice(0, 300)}`).toBeLessThan(500);
        seen.push(`${hostile.name}: ${answer.status ?? 'closed'}`);
        await expectStillServing(what);
      }
      // A port of no sandbox is answered as E2B's proxy answers it, never by the API or the web UI.
      const plain = await sendRaw(serve.port, rewrite(head(['GET / HTTP/1.1', host(serve.port)])));
      expect(plain.status).toBe(404);
      expect(plain.text).toContain('"sandboxId":"nosuchsandbox"');
      expect(seen.filter((line) => /: [1-4]\d\d$/.test(line)).length).toBeGreaterThan(CASES.length / 2);
    },
  );

  it('every hostile request through a live app’s URL is answered or closed; the app and the server serve on', async () => {
    const started = await fetch(`http://127.0.0.1:${serve.port}/v1/sessions/${sessionId}/commands`, {
      method: 'POST',
      headers: { ...authHeader, 'content-type': 'application/json' },
      body: JSON.stringify({
        command: 'python3 -m http.server 8000 --bind 127.0.0.1 --directory /tmp',
        background: true,
      }),
    });
    expect(started.status).toBe(202);
    expect((await call(`/v1/sessions/${sessionId}/ports/8000?waitMs=20000`)).status).toBe(200);
    const appHost = `Host: 8000-${sessionId}.localhost:${serve.port}`;
    const toApp = (bytes: string) => bytes.replace(/^Host: 127\.0\.0\.1:\d+$/m, appHost);
    const auth = keys ? `Authorization: Bearer ${KEY}` : 'X-Nothing: 1';
    const appServes = async (what: string) => {
      const page = await sendRaw(serve.port, head(['GET / HTTP/1.1', appHost, auth, 'Connection: close']));
      expect(page.status, `${what}: ${page.text.slice(0, 300)}`).toBe(200);
    };
    await appServes('before');
    for (const hostile of CASES) {
      const what = `${hostile.name} through the app's URL`;
      const bytes = hostile.bytes('/', auth, serve.port);
      const answer = await sendRaw(serve.port, typeof bytes === 'string' ? toApp(bytes) : bytes, hostile);
      // The app may answer 5xx itself (Python's 501 for an unknown method), or hang up (its own failure: the door's
      // 502 says so); the door never fails on its own account.
      if (answer.status !== undefined && answer.status >= 500 && answer.text.includes('"sandboxId"'))
        expect(answer.text, what).toContain('The app closed the connection without an answer');
      await expectStillServing(what);
      await appServes(what);
    }
  });

  it('hostile frames on a live terminal’s socket are dropped or close that socket alone; the terminal serves on', async () => {
    const opened = await fetch(`http://127.0.0.1:${serve.port}/v1/sessions/${sessionId}/terminals`, {
      method: 'POST',
      headers: authHeader,
    });
    expect(opened.status).toBe(201);
    const { socket: socketPath, id: terminalId } = (await opened.json()) as { socket: string; id: string };
    const connect = () => {
      const socket = new WebSocket(`ws://127.0.0.1:${serve.port}${socketPath}`, ['sandcell.terminal'], {
        headers: authHeader,
      });
      let text = '';
      socket.on('message', (data, isBinary) => {
        if (isBinary) text += Buffer.from(data as Buffer).toString('utf8');
      });
      const closed = new Promise<number>((resolve) => socket.once('close', (code) => resolve(code)));
      return { socket, closed, read: () => text, opened: new Promise((resolve) => socket.once('open', resolve)) };
    };
    const echoes = async (client: ReturnType<typeof connect>, marker: string) => {
      client.socket.send(Buffer.from(`echo ${marker}-$((40+2))\r`), { binary: true });
      const deadline = Date.now() + 10_000;
      while (!client.read().includes(`${marker}-42`)) {
        if (Date.now() > deadline) throw new Error(`no ${marker}-42: ${client.read().slice(-200)}`);
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    };
    const client = connect();
    await client.opened;
    await echoes(client, 'canary');
    const frames: (string | Buffer)[] = [
      'not json',
      '{"type":"resize","cols":-1,"rows":1e9}',
      '{"type":"signal","signal":"SIGSEGV"}',
      '{"type":"input","data":42}',
      '{"__proto__":{"type":"resize"}}',
      JSON.stringify({ type: 'input', data: 'x'.repeat(200_000) }),
      Buffer.alloc(100_000, 0x61),
    ];
    for (const frame of frames) client.socket.send(frame, { binary: Buffer.isBuffer(frame) });
    await echoes(client, 'after-frames');
    // A frame over the socket's bound closes that socket alone; the terminal is there for the next.
    client.socket.send(Buffer.alloc(300 * 1024, 0x62), { binary: true });
    expect(await client.closed).toBe(1009);
    const again = connect();
    await again.opened;
    await echoes(again, 'reattached');
    again.socket.close();
    await fetch(`http://127.0.0.1:${serve.port}/v1/sessions/${sessionId}/terminals/${terminalId}`, {
      method: 'DELETE',
      headers: authHeader,
    });
    await expectStillServing('after the terminal frames');
  });

  it('a hostile app’s answers (not HTTP, bad bytes, huge or conflicting headers, cut short) fail that request alone', async () => {
    // The app answers GET /N with the Nth hostile answer, raw, then closes.
    const answers = [
      'garbage, not HTTP\r\n\r\n',
      'HTTP/1.1 200 OK\r\nX-Bad: a\x01b\r\nContent-Length: 2\r\n\r\nok',
      'HTTP/1.1 200 \x7fwe\x01ird\r\nContent-Length: 2\r\n\r\nok',
      `HTTP/1.1 200 OK\r\nX-Huge: ${'h'.repeat(70_000)}\r\nContent-Length: 2\r\n\r\nok`,
      'HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 9\r\n\r\nok',
      'HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\ncut short',
      'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nbad chunk\r\n',
      'HTTP/1.1 101 Switching Protocols\r\nUpgrade: nonsense\r\n\r\n',
      'HTTP/1.1 200 OK\r\nSet-Cookie: a=1; Domain=localhost\r\nSet-Cookie: b=2; domain=.\r\nContent-Length: 2\r\n\r\nok',
    ];
    const app = [
      'import json, socket, sys, threading',
      `answers = [answer.encode("latin-1") for answer in json.loads(${JSON.stringify(JSON.stringify(answers))})]`,
      'server = socket.create_server(("127.0.0.1", 8001))',
      'def serve(connection):',
      '    request = connection.recv(65536).decode("latin-1")',
      '    index = int(request.split(" ")[1].strip("/") or 0)',
      '    connection.sendall(answers[index % len(answers)])',
      '    connection.close()',
      'while True:',
      '    connection, _ = server.accept()',
      '    threading.Thread(target=serve, args=(connection,), daemon=True).start()',
    ].join('\n');
    const wrote = await call(`/v1/sessions/${sessionId}/executions`, {
      code: `open("/mnt/data/hostile_app.py", "w").write(${JSON.stringify(app)})`,
    });
    expect(wrote.status).toBe(200);
    const started = await fetch(`http://127.0.0.1:${serve.port}/v1/sessions/${sessionId}/commands`, {
      method: 'POST',
      headers: { ...authHeader, 'content-type': 'application/json' },
      body: JSON.stringify({ command: 'python3 /mnt/data/hostile_app.py', background: true }),
    });
    expect(started.status).toBe(202);
    expect((await call(`/v1/sessions/${sessionId}/ports/8001?waitMs=20000`)).status).toBe(200);
    const appHost = `Host: 8001-${sessionId}.localhost:${serve.port}`;
    const auth = keys ? `Authorization: Bearer ${KEY}` : 'X-Nothing: 1';
    const seen: string[] = [];
    for (const [index] of answers.entries()) {
      const answer = await sendRaw(serve.port, head([`GET /${index} HTTP/1.1`, appHost, auth, 'Connection: close']));
      seen.push(`${index}: ${answer.status ?? 'closed'}`);
      await expectStillServing(`hostile answer ${index}`);
    }
    // Not HTTP, bad bytes, a huge or doubled header: the door's 502, or (a reason Node will not send on)
    // the connection cut; never the app's bytes passed on. The last one's cookies lose their Domain.
    expect(seen.slice(0, 5)).toEqual(['0: 502', '1: 502', '2: closed', '3: 502', '4: 502']);
    const cookies = await sendRaw(serve.port, head([`GET /8 HTTP/1.1`, appHost, auth, 'Connection: close']));
    expect(cookies.status).toBe(200);
    expect(cookies.text).not.toMatch(/domain=/i);
  });

  it('answers a path with a backslash with a clear 400, and the server logs it as refused, not as a failure', async () => {
    const answer = await sendRaw(
      serve.port,
      head([`GET /assets/..\\..\\package.json HTTP/1.1`, host(serve.port), `Authorization: Bearer ${KEY}`]),
    );
    expect(answer.status).toBe(400);
    expect(answer.text).toMatch(/x-request-id: [0-9a-f-]{36}/i);
    expect(answer.text).toContain('"malformed-request"');
    expect(answer.text).not.toContain('"name"');
    await expectStillServing('after the backslash');
  });

  it('serves a request that asks to upgrade to a protocol no door speaks as the plain HTTP request it also is', async () => {
    // curl --http2 on http:// asks for h2c; a server that does not speak it answers in HTTP/1.1.
    const curl = await runProcess('curl', [
      '-sS',
      '--http2',
      ...(keys ? ['-H', `Authorization: Bearer ${KEY}`] : []),
      `http://127.0.0.1:${serve.port}/v1/sessions/${sessionId}`,
    ]);
    expect(curl.code, curl.stderr).toBe(0);
    expect(JSON.parse(curl.stdout).id).toBe(sessionId);
    const withBody = await sendRaw(
      serve.port,
      `${head([`POST /v1/sessions HTTP/1.1`, host(serve.port), 'Connection: Upgrade', 'Upgrade: brew/1.0', 'Content-Length: 2'])}{}`,
    );
    expect(withBody.status).toBe(400);
    expect(withBody.text).toContain('without the Upgrade header');
    await expectStillServing('after the upgrades');
  });
});
