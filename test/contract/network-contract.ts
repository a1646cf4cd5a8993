/**
 * Internet access through the channel and the real gate, on one backend: the sandbox's only way out is
 * its gate's socket, reached through the supervisor's forwarder and the usual proxy variables. Servers
 * on this machine's 127.0.0.1 stand in for the hosts a session reaches, by the name that reaches this
 * machine's loopback, `host.sandcell.internal`, on the ports its allow-list names (a model server or a
 * database on the user's own machine is reached the same way); `.test` names resolve nowhere.
 */
import { randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SandboxBackend } from '../../src/backends/spec.js';
import { createGateHost } from '../../src/network/gate-host.js';
import type { SessionOptions } from '../../src/session/options.js';
import type { Session } from '../../src/session/session.js';
import { type StandInServer, startStandInServer } from '../support/stand-in-internet.js';
import { createTestCertificates, type TestCertificates } from '../support/test-ca.js';
import { startTinyIndex, type TinyIndex } from '../support/tiny-index.js';
import { withSession } from './contract-support.js';

export function runNetworkContract({ name, createBackend }: { name: string; createBackend: () => SandboxBackend }) {
  describe(`internet access through the gate: ${name}`, () => {
    const backend = createBackend();
    const token = randomBytes(6).toString('hex');
    const HOST = 'host.sandcell.internal';
    /** Names the gate looked up: the reserved name is never among them. */
    const lookups: string[] = [];
    const gate = createGateHost({
      resolve: async (host) => {
        lookups.push(host);
        return [];
      },
    });
    let certificates: TestCertificates;
    let web: StandInServer;
    let secure: StandInServer;
    let elsewhere: StandInServer;
    let index: TinyIndex;

    beforeAll(async () => {
      certificates = createTestCertificates([HOST, 'denied.test']);
      const tls = { key: certificates.serverKey, cert: certificates.serverCertificate };
      web = await startStandInServer({ label: `web-${token}` });
      secure = await startStandInServer({ label: `secure-${token}`, tls });
      elsewhere = await startStandInServer({ label: `elsewhere-${token}` });
      index = await startTinyIndex(tls, token);
    });
    afterAll(async () => {
      await Promise.all([web?.close(), secure?.close(), elsewhere?.close(), index?.close()]);
      if (certificates) rmSync(certificates.directory, { recursive: true, force: true });
    });

    const allowed = () => [web, secure, index].map((server) => `${HOST}:${server.port}`);
    const networkOptions = (): SessionOptions => ({
      network: { allow: allowed(), trustedCertificates: certificates.caCertificate },
      networkGate: gate,
    });
    const withNetwork = <T>(body: (session: Session) => Promise<T>) => withSession(backend, networkOptions(), body);

    it('curl, urllib and requests reach allowed hosts over HTTP and HTTPS (the session trusts its CA)', async () => {
      await withNetwork(async (session) => {
        const curl = await session.commands.run(
          `curl -sS --max-time 20 http://${HOST}:${web.port}/curl && echo && curl -sS --max-time 20 https://${HOST}:${secure.port}/curl`,
        );
        expect(curl.stderr).toBe('');
        const [plain, encrypted] = curl.stdout
          .trim()
          .split('\n')
          .map((line) => JSON.parse(line));
        expect(plain).toMatchObject({ label: `web-${token}`, url: '/curl' });
        expect(encrypted).toMatchObject({ label: `secure-${token}`, url: '/curl' });
        const python = await session.run(
          'import json, urllib.request, requests\n' +
            `print(json.loads(urllib.request.urlopen("https://${HOST}:${secure.port}/urllib", timeout=20).read())["url"])\n` +
            `print(requests.get("https://${HOST}:${secure.port}/requests", timeout=20).json()["url"])\n` +
            `print(requests.post("http://${HOST}:${web.port}/post", data="body-${token}", timeout=20).json()["body"])`,
        );
        expect(python.error).toBeUndefined();
        expect(python.stdout).toBe(`/urllib\n/requests\nbody-${token}\n`);
        expect(lookups).not.toContain(HOST);
      });
    });

    it("127.0.0.1 is the sandbox's own loopback; this machine's is host.sandcell.internal, on the ports named only", async () => {
      await withNetwork(async (session) => {
        const before = elsewhere.connections();
        const probe = await session.commands.run(
          `curl -sS --max-time 20 -o /dev/null -w '%{http_code}' http://127.0.0.1:${web.port}/; echo " own:$?"; ` +
            `curl -sS --max-time 20 -o /dev/null -w '%{http_code}' http://${HOST}:${elsewhere.port}/; echo " other-port:$?"; ` +
            `curl -sS --max-time 20 -o /dev/null -w '%{http_code}' http://${HOST}:${web.port}/; echo " named:$?"`,
        );
        // Nothing listens on that port in the sandbox (curl 7); another port of the host is refused (403).
        expect(probe.stdout.trim().split('\n')).toEqual(['000 own:7', '403 other-port:0', '200 named:0']);
        expect(elsewhere.connections()).toBe(before);
        // The forwarder's own port (the proxy the variables name) is sandcell's, not an app's: not listed.
        const listening = await session.run(
          'import socket\nprobe = socket.create_connection(("127.0.0.1", 3128), timeout=5)\nprobe.close()\nprint("proxy listens")',
        );
        expect(listening.stdout).toBe('proxy listens\n');
        expect((await session.ports.list()).map((entry) => entry.port)).not.toContain(3128);
      });
    });

    it('pip installs a wheel from a package index on an allowed host', async () => {
      await withNetwork(async (session) => {
        const pip = await session.commands.run(
          `python3 -m pip install --disable-pip-version-check --no-cache-dir --break-system-packages --target /tmp/packages --index-url https://${HOST}:${index.port}/simple sandcell-probe`,
          { timeoutMs: 120_000 },
        );
        expect(pip.exitCode, pip.stderr).toBe(0);
        const imported = await session.run(
          'import sys\nsys.path.insert(0, "/tmp/packages")\nimport sandcell_probe\nprint(sandcell_probe.VALUE)',
        );
        expect(imported.stdout).toBe(`${token}\n`);
        expect(index.requested).toContain('/simple/sandcell-probe/');
      });
    });

    it('refuses what the allow-list does not name: another host, another port, the metadata address, an IP literal', async () => {
      await withNetwork(async (session) => {
        const canary = await session.commands.run(`curl -sS --max-time 20 http://${HOST}:${web.port}/canary`);
        expect(JSON.parse(canary.stdout)).toMatchObject({ label: `web-${token}` });
        const before = elsewhere.received.length;
        for (const url of [
          `http://denied.test:${web.port}/`,
          `http://${HOST}:${elsewhere.port}/`,
          `https://denied.test:${secure.port}/`,
          'http://169.254.169.254/latest/meta-data/',
          `http://127.0.0.2:${web.port}/`,
        ]) {
          const refused = await session.commands.run(`curl -sS --max-time 20 -o /dev/null -w '%{http_code}' '${url}'`);
          // Plain HTTP: the gate's 4xx answer; HTTPS: curl fails the CONNECT (exit 56) after the gate's refusal.
          expect(refused.exitCode === 0 ? refused.stdout : String(refused.exitCode), url).toMatch(/^(4\d\d|56)$/);
        }
        expect(elsewhere.received.length).toBe(before);
      });
    });

    it('the channel survives a restart of the sandbox', async () => {
      await withNetwork(async (session) => {
        await session.restart();
        const curl = await session.commands.run(`curl -sS --max-time 20 http://${HOST}:${web.port}/after-restart`);
        expect(JSON.parse(curl.stdout)).toMatchObject({ url: '/after-restart' });
      });
    });

    it('raw TCP, UDP and DNS still fail at once: there is no route and no resolver, only the proxy', async () => {
      await withNetwork(async (session) => {
        const canary = await session.commands.run(`curl -sS --max-time 20 http://${HOST}:${web.port}/canary`);
        expect(JSON.parse(canary.stdout)).toMatchObject({ label: `web-${token}` });
        const probe = await session.run(
          'import socket\n' +
            'def attempt(label, action):\n' +
            '    try:\n        action()\n        print(label, "reached")\n' +
            '    except OSError as error:\n        print(label, "failed", type(error).__name__)\n' +
            `attempt("tcp-host-port", lambda: socket.create_connection(("127.0.0.1", ${web.port}), timeout=10))\n` +
            'attempt("tcp-internet", lambda: socket.create_connection(("1.1.1.1", 80), timeout=10))\n' +
            'udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n' +
            'attempt("udp-internet", lambda: udp.sendto(b"x", ("1.1.1.1", 53)))\n' +
            'attempt("dns", lambda: socket.getaddrinfo("example.com", 443))',
          { timeoutMs: 30_000 },
        );
        expect(probe.error).toBeUndefined();
        expect(
          probe.stdout
            .trim()
            .split('\n')
            .map((line) => line.split(' ').slice(0, 2).join(' ')),
        ).toEqual(['tcp-host-port failed', 'tcp-internet failed', 'udp-internet failed', 'dns failed']);
        // A client told to ignore the proxy fails at once, with a clear reason.
        const direct = await session.commands.run(`curl -sS --noproxy '*' --max-time 20 http://${HOST}:${web.port}/`);
        expect(direct.exitCode).not.toBe(0);
        expect(direct.stderr).toMatch(/resolve host/i);
      });
    });

    it('a secret bound to a host is added by the gate over HTTPS, and never exists in the sandbox', async () => {
      const key = `Bearer sk-${token}-only-on-the-host`;
      const options: SessionOptions = {
        network: {
          allow: [`${HOST}:${secure.port}`, `${HOST}:${web.port}`],
          trustedCertificates: certificates.caCertificate,
          secrets: [{ host: HOST, header: 'Authorization', value: key }],
        },
        networkGate: gate,
      };
      await withSession(backend, options, async (session) => {
        // Plain HTTP to the secret's host is refused (the key would cross in clear), and sends nothing.
        const before = web.received.length;
        const plain = await session.commands.run(`curl -sS --max-time 20 http://${HOST}:${web.port}/canary`);
        expect(plain.stdout).toContain('(secret-needs-https)');
        expect(web.received.length).toBe(before);
        const curl = await session.commands.run(
          `curl -sS --max-time 20 -H 'Authorization: Bearer forged' https://${HOST}:${secure.port}/curl-secret`,
        );
        expect(curl.stderr).toBe('');
        expect(JSON.parse(curl.stdout)).toMatchObject({ url: '/curl-secret', headers: { authorization: key } });
        // The echo server answers with what it received: the gate added the key on the way out.
        const python = await session.run(
          'import requests\n' +
            `echo = requests.get("https://${HOST}:${secure.port}/requests-secret", timeout=20).json()\n` +
            'print(echo["url"], echo["headers"]["authorization"])\ndel echo',
        );
        expect(python.error).toBeUndefined();
        expect(python.stdout).toBe(`/requests-secret ${key}\n`);
        // What the sandbox holds: its environment, its files and its own view of a request; none has the key.
        const search = await session.commands.run(
          `env; cat /proc/self/environ | tr '\\0' '\\n'; grep -rl -- '${token}-only' /tmp /mnt /etc /home /root /run /var 2>/dev/null; ` +
            `curl -sS -v --max-time 20 -o /dev/null https://${HOST}:${secure.port}/verbose 2>&1`,
          { timeoutMs: 120_000 },
        );
        expect(search.stdout).toContain('/verbose');
        expect(search.stdout).not.toContain(`${token}-only`);
        expect(secure.received.at(-1)).toMatchObject({ url: '/verbose', headers: { authorization: key } });
      });
    });

    it("'none' sets no proxy and binds no gate socket (the ingress, the host's way in to its ports, is there)", async () => {
      await withSession(backend, { network: 'none' }, async (session) => {
        const probe = await session.run(
          'import os\nprint(sorted(k for k in os.environ if "proxy" in k.lower()), os.listdir("/run/sandcell"))',
        );
        expect(probe.stdout).toBe("[] ['ingress.sock']\n");
      });
    });
  });
}
