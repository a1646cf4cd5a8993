/**
 * The ports of a session's sandbox reached from the host, on one backend: servers started by a
 * command or by code listen on the sandbox's own loopback, `session.ports` lists them and opens
 * connections to them through the session's ingress socket. Each case runs a server of its own and
 * checks the bytes both ways; the hostile cases check that code in the sandbox cannot pass its own
 * connection off as one the host asked for, nor starve the host's.
 */
import { createHash, randomBytes } from 'node:crypto';
import type { Socket } from 'node:net';
import { describe, expect, it } from 'vitest';
import type { SandboxBackend } from '../../src/backends/spec.js';
import { PortError } from '../../src/errors.js';
import type { Session } from '../../src/session/session.js';
import { withSession } from './contract-support.js';

/** Everything the socket sends until it ends, after `request` is written (and, with `end`, its writing side closed). */
export function exchange(socket: Socket, request: Buffer | string, end = true): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.once('end', () => resolve(Buffer.concat(chunks)));
    socket.once('error', reject);
    // It comes paused, so that no byte is lost before these listeners are on.
    socket.resume();
    if (end) socket.end(request);
    else socket.write(request);
  });
}

const ECHO_SERVER = (port: number) =>
  [
    'import socket, threading',
    `server = socket.create_server(("127.0.0.1", ${port}))`,
    'def serve(connection):',
    '    data = b""',
    '    while chunk := connection.recv(65536):',
    '        data += chunk',
    '    connection.sendall(b"echo:" + data)',
    '    connection.close()',
    'def accept():',
    '    while True:',
    '        connection, _ = server.accept()',
    '        threading.Thread(target=serve, args=(connection,), daemon=True).start()',
    'threading.Thread(target=accept, daemon=True).start()',
  ].join('\n');

export function runPortsContract({ name, createBackend }: { name: string; createBackend: () => SandboxBackend }) {
  describe(`ports of a sandbox: ${name}`, () => {
    const backend = createBackend();
    const withPorts = <T>(body: (session: Session) => Promise<T>) => withSession(backend, {}, body);

    it('an HTTP server started by a command is listed and answers through the ingress', async () => {
      await withPorts(async (session) => {
        const canary = await session.run('print(6 * 7)');
        expect(canary.stdout).toBe('42\n');
        expect(session.ports.available).toBe(true);
        const marker = randomBytes(8).toString('hex');
        await session.files.write('site/index.html', `<p>${marker}</p>`);
        await session.commands.run('python3 -m http.server 8000 --bind 127.0.0.1 --directory /mnt/data/site', {
          background: true,
        });
        const listening = await session.ports.waitFor(8000, { timeoutMs: 20_000 });
        expect(listening).toEqual({ port: 8000, address: '127.0.0.1' });
        expect((await session.ports.list()).map((entry) => entry.port)).toContain(8000);
        const answer = await exchange(await session.ports.connect(8000), 'GET /index.html HTTP/1.0\r\n\r\n');
        const text = answer.toString();
        expect(text).toMatch(/^HTTP\/1\.0 200 OK\r\n/);
        expect(text.endsWith(`<p>${marker}</p>`)).toBe(true);
      });
    });

    it('bytes go both ways, half-closes pass, a server on ::1 alone is reached, and many connections at once', async () => {
      await withPorts(async (session) => {
        const six = [
          'import socket, threading',
          'six = socket.socket(socket.AF_INET6)',
          'six.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)',
          'six.bind(("::1", 9001)); six.listen()',
          'def greet():',
          '    while True:',
          '        connection, _ = six.accept()',
          '        connection.sendall(b"hello from six\\n"); connection.close()',
          'threading.Thread(target=greet, daemon=True).start()',
        ].join('\n');
        const started = await session.run(`${ECHO_SERVER(9000)}\n${six}`);
        expect(started.error).toBeUndefined();
        expect(await session.ports.list()).toEqual(
          expect.arrayContaining([
            { port: 9000, address: '127.0.0.1' },
            { port: 9001, address: '::1' },
          ]),
        );
        // The client's end of writing reaches the server, which answers only then; the traffic is the session's activity.
        const before = session.lastActivityAt;
        await new Promise((resolve) => setTimeout(resolve, 5));
        const echoed = await exchange(await session.ports.connect(9000), 'ping');
        expect(echoed.toString()).toBe('echo:ping');
        expect(session.lastActivityAt).toBeGreaterThan(before);
        // A server that speaks first: its bytes come after the ingress's line, none lost.
        const greeting = await exchange(await session.ports.connect(9001), '', false);
        expect(greeting.toString()).toBe('hello from six\n');
        // 20 at once, each its own bytes.
        const answers = await Promise.all(
          Array.from({ length: 20 }, async (_, index) =>
            (await exchange(await session.ports.connect(9000), `n${index}`)).toString(),
          ),
        );
        expect(answers).toEqual(Array.from({ length: 20 }, (_, index) => `echo:n${index}`));
      });
    });

    it('16 MiB each way arrive whole', async () => {
      await withPorts(async (session) => {
        expect((await session.run(ECHO_SERVER(9100))).error).toBeUndefined();
        const payload = randomBytes(16 << 20);
        const answer = await exchange(await session.ports.connect(9100), payload);
        expect(answer.length).toBe(payload.length + 5);
        const digest = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');
        expect(digest(answer.subarray(5))).toBe(digest(payload));
      });
    });

    it('a port nothing listens on is a typed port-closed error, and the session serves on', async () => {
      await withPorts(async (session) => {
        expect((await session.run('print("up")')).stdout).toBe('up\n');
        const refused = await session.ports.connect(8123).catch((error: unknown) => error);
        expect(refused).toBeInstanceOf(PortError);
        expect(refused).toMatchObject({ code: 'port-closed' });
        await expect(session.ports.waitFor(8123, { timeoutMs: 300 })).rejects.toMatchObject({ code: 'port-closed' });
        await expect(session.ports.connect(0)).rejects.toMatchObject({ code: 'invalid-input' });
        await expect(session.ports.connect(70_000)).rejects.toMatchObject({ code: 'invalid-input' });
        expect((await session.run('print("still up")')).stdout).toBe('still up\n');
      });
    });

    it('code in the sandbox cannot pass its own connection off as the host’s, nor starve the host’s', async () => {
      await withPorts(async (session) => {
        expect((await session.run(ECHO_SERVER(9200))).error).toBeUndefined();
        // Canary: the socket is there and the code can connect to it (so the refusals below are the host's).
        const probe = await session.run(
          [
            'import os, socket, time',
            'print(sorted(os.listdir("/run/sandcell")))',
            'forged = socket.socket(socket.AF_UNIX); forged.connect("/run/sandcell/ingress.sock")',
            'forged.sendall(b"0123456789abcdef0123456789abcdef ok\\n" + b"hostile bytes")',
            'forged.settimeout(5)',
            'try:\n    print("forged answered:", forged.recv(100))\nexcept OSError as error:\n    print("forged:", type(error).__name__)',
            'long = socket.socket(socket.AF_UNIX); long.connect("/run/sandcell/ingress.sock")',
            'long.sendall(b"x" * 4096); long.settimeout(5)',
            'try:\n    print("long answered:", long.recv(100))\nexcept OSError as error:\n    print("long:", type(error).__name__)',
            // Held open without a line: the host keeps a bounded number, each for a second at most.
            'held = []',
            'for _ in range(100):',
            '    try:',
            '        one = socket.socket(socket.AF_UNIX); one.connect("/run/sandcell/ingress.sock"); held.append(one)',
            '    except OSError:',
            '        break',
            'print("held", len(held))',
          ].join('\n'),
        );
        expect(probe.error).toBeUndefined();
        const lines = probe.stdout.split('\n');
        expect(lines[0]).toContain("'ingress.sock'");
        expect(lines[1]).toMatch(/^forged(: ConnectionResetError| answered: b'')$/);
        expect(lines[2]).toMatch(/^long(: ConnectionResetError| answered: b'')$/);
        expect(lines[3]).toMatch(/^held \d+$/);
        // The host's own connection goes through while those are held (the oldest unidentified give way).
        const echoed = await exchange(await session.ports.connect(9200), 'real');
        expect(echoed.toString()).toBe('echo:real');
      });
    });

    it('connections to a port end with the session', async () => {
      const session = await withPorts(async (opened) => {
        expect((await opened.run(ECHO_SERVER(9300))).error).toBeUndefined();
        const socket = await opened.ports.connect(9300);
        expect(opened.ports.openConnections).toBe(1);
        const ended = new Promise<void>((resolve) => socket.once('close', () => resolve()));
        socket.write('unfinished');
        return { opened, ended };
      });
      await session.ended;
      await expect(session.opened.ports.connect(9300)).rejects.toMatchObject({ code: 'session-closed' });
    });
  });
}
