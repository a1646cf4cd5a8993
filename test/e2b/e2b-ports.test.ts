/**
 * Ports served as URLs, through the unmodified E2B SDK on real bubblewrap sandboxes: an app started
 * with commands.run listens on 3000 inside, and `sandbox.getHost(3000)` is the host name that reaches
 * it through the server. Requests go over HTTP to 127.0.0.1 with that name in `Host`, as a browser's
 * do (it resolves `*.localhost` to loopback itself): pages, cookies, a 32 MiB upload and download,
 * an event stream passed as it comes, a WebSocket; E2B's header route on the server's own host;
 * E2B's answers for a closed port, an unknown sandbox and a paused one; private traffic, a masked
 * Host and an app serving TLS; and none of it reaching the API or the web UI.
 */
import { createHash, randomBytes } from 'node:crypto';
import { readFileSync, rmSync } from 'node:fs';
import http from 'node:http';
import { Sandbox } from 'e2b';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { startE2bServer, type TestServer } from '../support/e2b.js';
import { portRequest } from '../support/port-request.js';
import { createTestCertificates } from '../support/test-ca.js';

// biome-ignore lint/suspicious/noTemplateCurlyInString: E2B's placeholder, which the server replaces
const MASK = 'app.internal:${PORT}';
const APP = readFileSync(new URL('../fixtures/ports/app.py', import.meta.url), 'utf8');

let server: TestServer;
let sandbox: Sandbox;

const request = (host: string, path: string, options?: Parameters<typeof portRequest>[3]) =>
  portRequest(server.port, host, path, options);

async function startApp(target: Sandbox, port = 3000): Promise<void> {
  await target.files.write('/home/user/app.py', APP);
  await target.commands.run(`python3 /home/user/app.py ${port}`, { background: true });
  // Up once it answers through its URL (502 until it listens).
  const deadline = Date.now() + 20_000;
  while ((await request(target.getHost(port), '/')).status !== 200) {
    if (Date.now() > deadline) throw new Error(`The app did not answer on port ${port} within 20 s.`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

beforeAll(async () => {
  server = await startE2bServer();
  sandbox = await Sandbox.create();
  await startApp(sandbox);
});
afterAll(async () => {
  await sandbox?.kill().catch(() => undefined);
  await server?.close();
});

describe('E2B ports served as URLs', () => {
  it('getHost(port) names the sandbox’s port under the server’s localhost domain, which reaches the app', async () => {
    expect((await sandbox.commands.run('echo canary')).stdout).toBe('canary\n');
    expect(sandbox.getHost(3000)).toBe(`3000-${sandbox.sandboxId}.localhost:${server.port}`);
    expect((await Sandbox.getInfo(sandbox.sandboxId)).sandboxDomain).toBe(`localhost:${server.port}`);
    const answer = await request(sandbox.getHost(3000), '/');
    expect(answer.json).toEqual({ app: 'hello from the app', host: sandbox.getHost(3000) });
    // The app's cookies stay its host's: a Domain (here the server's own name) is dropped, the rest kept.
    expect(answer.headers['set-cookie']).toEqual(['widened=1; Path=/', 'own=2; Path=/; HttpOnly']);
  });

  it('passes what the client sent, without sandcell’s own headers, and the forwarding headers', async () => {
    const seen = await request(sandbox.getHost(3000), '/headers?x=1', {
      headers: { 'x-custom': 'kept', 'e2b-traffic-access-token': 'not for the app', authorization: 'Bearer app-own' },
    });
    expect(seen.json.path).toBe('/headers?x=1');
    expect(seen.json.headers).toMatchObject({
      'x-custom': 'kept',
      authorization: 'Bearer app-own',
      'x-forwarded-for': '127.0.0.1',
      'x-forwarded-host': sandbox.getHost(3000),
    });
    expect(seen.json.headers['e2b-traffic-access-token']).toBeUndefined();
  });

  it('streams a 32 MiB upload and a 32 MiB download whole', async () => {
    const payload = randomBytes(32 << 20);
    const uploaded = await request(sandbox.getHost(3000), '/upload', { method: 'POST', body: payload });
    expect(uploaded.json).toEqual({
      bytes: payload.length,
      sha256: createHash('sha256').update(payload).digest('hex'),
    });
    const downloaded = await request(sandbox.getHost(3000), '/big?n=512');
    const block = Buffer.concat(Array.from({ length: 2048 }, () => createHash('sha256').update('sandcell').digest()));
    expect(downloaded.body.length).toBe(512 * block.length);
    const expected = createHash('sha256');
    for (let index = 0; index < 512; index++) expected.update(block);
    expect(createHash('sha256').update(downloaded.body).digest('hex')).toBe(expected.digest('hex'));
  });

  it('passes an event stream as it comes: the first event arrives while the app holds back the second', async () => {
    await sandbox.files.remove('/tmp/go-on').catch(() => undefined);
    const events = await new Promise<string[]>((resolve, reject) => {
      const seen: string[] = [];
      const outgoing = http.get(
        {
          host: '127.0.0.1',
          port: server.port,
          path: '/events',
          headers: { host: sandbox.getHost(3000) },
          agent: false,
        },
        (incoming) => {
          expect(incoming.headers['content-type']).toBe('text/event-stream');
          incoming.setEncoding('utf8');
          incoming.on('data', (text: string) => {
            seen.push(text);
            // Only once the first came through does the app get to send the second.
            if (seen.length === 1) void sandbox.files.write('/tmp/go-on', 'yes').catch(reject);
          });
          incoming.on('end', () => resolve(seen));
        },
      );
      outgoing.on('error', reject);
    });
    expect(events.join('')).toBe('data: first\n\ndata: second\n\n');
    expect(events[0]).toBe('data: first\n\n');
  });

  it('joins a WebSocket to the app’s', async () => {
    const socket = new WebSocket(`ws://${sandbox.getHost(3000)}/ws`, {
      // What a browser does for *.localhost: this machine, whatever DNS says.
      lookup: (_host, options, callback) => {
        if ((options as { all?: boolean }).all)
          (callback as (error: null, all: object[]) => void)(null, [{ address: '127.0.0.1', family: 4 }]);
        else (callback as (error: null, address: string, family: number) => void)(null, '127.0.0.1', 4);
      },
    });
    const replies: string[] = [];
    await new Promise<void>((resolve, reject) => {
      socket.on('open', () => socket.send('one'));
      socket.on('message', (data) => {
        replies.push(String(data));
        if (replies.length === 1) socket.send('two');
        else socket.close();
      });
      socket.on('close', () => resolve());
      socket.on('error', reject);
    });
    expect(replies).toEqual(['echo:one', 'echo:two']);
  });

  it('serves E2B’s header route on the server’s own host, under /e2b as its SDK’s base URL puts it, or at the root', async () => {
    const headers = { 'e2b-sandbox-id': sandbox.sandboxId, 'e2b-sandbox-port': '3000' };
    const own = `127.0.0.1:${server.port}`;
    expect((await request(own, '/e2b/headers?via=prefix', { headers })).json.path).toBe('/headers?via=prefix');
    expect((await request(own, '/headers?via=root', { headers })).json.path).toBe('/headers?via=root');
  });

  it('answers as E2B’s proxy does: a closed port 502, an unknown sandbox 404; and never as the API or the web UI', async () => {
    const closed = await request(sandbox.getHost(3999), '/');
    expect(closed.status).toBe(502);
    expect(closed.json).toEqual({
      sandboxId: sandbox.sandboxId,
      message: 'The sandbox is running but port is not open',
      port: 3999,
      code: 502,
    });
    const unknown = await request(`3000-nosuchsandbox.localhost:${server.port}`, '/');
    expect(unknown.status).toBe(404);
    expect(unknown.json).toMatchObject({ sandboxId: 'nosuchsandbox', code: 404 });
    // The API's and the web UI's paths on a sandbox's name are the app's.
    for (const path of ['/v1/sessions', '/e2b/sandboxes', '/healthz', '/jupyter/api/kernels']) {
      expect((await request(sandbox.getHost(3000), path)).json.path).toBe(path);
    }
    const ui = await request(`3000-nosuchsandbox.localhost:${server.port}`, '/');
    expect(String(ui.headers['content-type'])).toContain('application/json');
  });

  it('with allowPublicTraffic false, takes only requests with the traffic token, which the app never sees', async () => {
    const hidden = await Sandbox.create({
      network: { allowPublicTraffic: false, maskRequestHost: MASK },
    });
    try {
      expect(hidden.trafficAccessToken).toMatch(/^[0-9a-f]{64}$/);
      await hidden.files.write('/home/user/app.py', APP);
      await hidden.commands.run('python3 /home/user/app.py 3000', { background: true });
      const token = { 'e2b-traffic-access-token': hidden.trafficAccessToken as string };
      await expect
        .poll(async () => (await request(hidden.getHost(3000), '/', { headers: token })).status, { timeout: 20_000 })
        .toBe(200);
      const refused = await request(hidden.getHost(3000), '/');
      expect(refused.status).toBe(403);
      expect(
        (await request(hidden.getHost(3000), '/', { headers: { 'e2b-traffic-access-token': 'f'.repeat(64) } })).status,
      ).toBe(403);
      const seen = await request(hidden.getHost(3000), '/headers', { headers: token });
      // The app sees the masked Host, and no token.
      expect(seen.json.headers.host).toBe('app.internal:3000');
      expect(seen.json.headers['e2b-traffic-access-token']).toBeUndefined();
      expect((await Sandbox.getInfo(hidden.sandboxId)).network).toMatchObject({
        allowPublicTraffic: false,
        maskRequestHost: MASK,
      });
    } finally {
      await hidden.kill();
    }
  });

  it('reaches an app that serves TLS itself on a port listed in httpsPorts (its certificate not checked)', async () => {
    const certificates = createTestCertificates(['localhost']);
    const secure = await Sandbox.create({ network: { httpsPorts: [3443] } });
    try {
      await secure.files.write('/home/user/app.py', APP);
      await secure.files.write('/home/user/cert.pem', certificates.serverCertificate);
      await secure.files.write('/home/user/key.pem', certificates.serverKey);
      await secure.commands.run('python3 /home/user/app.py 3443 /home/user/cert.pem /home/user/key.pem', {
        background: true,
      });
      const deadline = Date.now() + 20_000;
      let answer = await request(secure.getHost(3443), '/');
      while (answer.status !== 200 && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 100));
        answer = await request(secure.getHost(3443), '/');
      }
      expect(answer.json).toEqual({ app: 'hello from the app', host: secure.getHost(3443) });
    } finally {
      await secure.kill();
      rmSync(certificates.directory, { recursive: true, force: true });
    }
  });

  it('a paused sandbox answers 409; one created with autoResume is resumed by its traffic', async () => {
    const paused = await Sandbox.create({ lifecycle: { onTimeout: 'pause', autoResume: false } });
    const resuming = await Sandbox.create({ lifecycle: { onTimeout: 'pause', autoResume: true } });
    try {
      expect(await paused.pause()).toBe(true);
      expect(await resuming.pause()).toBe(true);
      const refused = await request(paused.getHost(3000), '/');
      expect(refused.status).toBe(409);
      expect(refused.json).toMatchObject({ sandboxId: paused.sandboxId, code: 409 });
      // Resumed by the request; its processes were not kept by the pause, so nothing listens yet.
      const resumed = await request(resuming.getHost(3000), '/');
      expect(resumed.status).toBe(502);
      expect((await Sandbox.getInfo(resuming.sandboxId)).state).toBe('running');
    } finally {
      await Promise.all([paused.kill(), resuming.kill()]);
    }
  });
});
