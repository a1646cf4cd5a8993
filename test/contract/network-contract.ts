/**
 * Internet access through the channel, on one backend: the sandbox's only way out is its gate's socket,
 * reached through the supervisor's forwarder and the usual proxy variables. Until the real gate is merged
 * a stand-in forwards every connection to one local HTTP server that answers proxy requests.
 */
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SandboxBackend } from '../../src/backends/spec.js';
import type { Session } from '../../src/session/session.js';
import { standInGate } from '../support/stand-in-gate.js';
import { withSession } from './backend-contract.js';

export function runNetworkContract({ name, createBackend }: { name: string; createBackend: () => SandboxBackend }) {
  describe(`network channel: ${name}`, () => {
    const backend = createBackend();
    const token = randomBytes(6).toString('hex');
    const requests: string[] = [];
    // Answers a proxy request (absolute-form target) with what it was asked, so the test sees it went through.
    const server = http.createServer((request, response) => {
      requests.push(`${request.method} ${request.url}`);
      response.end(`hello-${token} ${request.method} ${request.url}`);
    });
    let port = 0;

    beforeAll(async () => {
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      port = (server.address() as AddressInfo).port;
    });
    afterAll(async () => {
      await new Promise<void>((resolve) => server.close(() => resolve()));
    });

    const withNetwork = <T>(body: (session: Session) => Promise<T>) =>
      withSession(backend, { network: { allow: ['allowed.test'] }, networkGate: standInGate(port) }, body);

    it('curl, urllib and requests reach an allowed host through the proxy the sandbox is given', async () => {
      await withNetwork(async (session) => {
        const curl = await session.commands.run('curl -sS --max-time 20 http://allowed.test/curl');
        expect(curl.stderr).toBe('');
        expect(curl.stdout).toBe(`hello-${token} GET http://allowed.test/curl`);
        const python = await session.run(
          'import urllib.request, requests\n' +
            'print(urllib.request.urlopen("http://allowed.test/urllib", timeout=20).read().decode())\n' +
            'print(requests.get("http://allowed.test/requests", timeout=20).text)',
        );
        expect(python.error).toBeUndefined();
        expect(python.stdout).toBe(
          `hello-${token} GET http://allowed.test/urllib\nhello-${token} GET http://allowed.test/requests\n`,
        );
      });
    });

    it('the channel survives a kernel restart', async () => {
      await withNetwork(async (session) => {
        await session.restart();
        const curl = await session.commands.run('curl -sS --max-time 20 http://allowed.test/after-restart');
        expect(curl.stdout).toBe(`hello-${token} GET http://allowed.test/after-restart`);
      });
    });

    it('raw TCP, UDP and DNS still fail at once: there is no route and no resolver, only the proxy', async () => {
      await withNetwork(async (session) => {
        const canary = await session.commands.run('curl -sS --max-time 20 http://allowed.test/canary');
        expect(canary.stdout).toContain(`hello-${token}`);
        const probe = await session.run(
          'import socket\n' +
            'def attempt(label, action):\n' +
            '    try:\n        action()\n        print(label, "reached")\n' +
            '    except OSError as error:\n        print(label, "failed", type(error).__name__)\n' +
            `attempt("tcp-host-port", lambda: socket.create_connection(("127.0.0.1", ${port}), timeout=10))\n` +
            'attempt("tcp-internet", lambda: socket.create_connection(("1.1.1.1", 80), timeout=10))\n' +
            'udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n' +
            'attempt("udp-internet", lambda: udp.sendto(b"x", ("1.1.1.1", 53)))\n' +
            'attempt("dns", lambda: socket.getaddrinfo("example.com", 443))',
          { timeoutMs: 30_000 },
        );
        expect(probe.error).toBeUndefined();
        const lines = probe.stdout.trim().split('\n');
        expect(lines.map((line) => line.split(' ').slice(0, 2).join(' '))).toEqual([
          'tcp-host-port failed',
          'tcp-internet failed',
          'udp-internet failed',
          'dns failed',
        ]);
        // A client that ignores the proxy variables gets a clear failure: curl told not to use the proxy.
        const direct = await session.commands.run('curl -sS --noproxy "*" --max-time 20 http://allowed.test/');
        expect(direct.exitCode).not.toBe(0);
        expect(direct.stderr).toMatch(/resolve host/i);
        expect(requests).not.toContain('GET http://allowed.test/');
      });
    });

    it("'none' sets no proxy and binds no socket", async () => {
      await withSession(backend, { network: 'none' }, async (session) => {
        const probe = await session.run(
          'import os\nprint(sorted(k for k in os.environ if "proxy" in k.lower()), os.path.exists("/run/sandcell"))',
        );
        expect(probe.stdout).toBe('[] False\n');
      });
    });
  });
}
