/**
 * An environment's build reaches only what its allow-list names, for real:
 * bwrap with its own network namespace, the gate on the host, the forwarder
 * inside. A local HTTP server on 127.0.0.1 stands in for the internet, reached
 * as `host.sandcell.internal` on its port (allowed in the description). One
 * build that may fetch, one that asks for a host not on the list; builds are
 * slow, so there are only two.
 */
import { lookup } from 'node:dns/promises';
import { chmod, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createBubblewrapBackend } from '../src/backends/bubblewrap/index.js';
import { buildEnvironment, type EnvironmentBuildResult } from '../src/environments/build.js';
import { ImageBuildError } from '../src/errors.js';
import { createSession } from '../src/session/session.js';
import { describeWhenAvailable, unavailableReason } from './support/backends.js';

const BUILD_TIMEOUT_MS = 20 * 60_000;
const PAYLOAD = 'fetched through the build gate\n';
const runtime = createBubblewrapBackend({ rootfs: 'runtime' });
const reason = process.getuid?.() === 0 ? await unavailableReason(runtime) : 'building an environment needs root';

const directory = await mkdtemp(path.join(os.tmpdir(), 'sandcell-environment-network-'));
// The sandboxes' uids reach the environment's /usr through it.
await chmod(directory, 0o755);
const store = path.join(directory, 'store');

/** Connects raw from this host: the same targets the build's probe tries, to show they are there. */
function connects(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ host, port, timeout: 5_000 });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
    socket.once('timeout', () => {
      socket.destroy();
      resolve(false);
    });
  });
}

/** A raw TCP connect from the build's setup, one line per target: `name: connected` or the error's class. */
function probeProgram(targets: Record<string, [string, number]>): string {
  return `import socket
targets = ${JSON.stringify(targets)}
for name, (host, port) in targets.items():
    try:
        socket.create_connection((host, port), timeout=5).close()
        print(f"{name}: connected")
    except OSError as error:
        print(f"{name}: {type(error).__name__}")
`;
}

describeWhenAvailable("an environment build's network", 'bubblewrap-rootfs', reason, () => {
  let server: http.Server;
  let port: number;
  let mirror: string;
  let allowed: EnvironmentBuildResult;
  const progress: string[] = [];
  const previousStore = process.env.SANDCELL_ENVIRONMENT_DIR;

  beforeAll(async () => {
    process.env.SANDCELL_ENVIRONMENT_DIR = store;
    server = http.createServer((request, response) => {
      if (request.url === '/payload.txt') response.end(PAYLOAD);
      else response.writeHead(404).end();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
    mirror = (await lookup('deb.debian.org')).address;
    await writeFile(
      path.join(directory, 'probe.py'),
      probeProgram({
        // The canary: the forwarder on the build's own loopback takes a raw connection.
        forwarder: ['127.0.0.1', 3128],
        'host loopback server': ['127.0.0.1', port],
        'apt mirror': [mirror, 80],
      }),
    );
    await writeFile(
      path.join(directory, 'fetch.env.json'),
      JSON.stringify({
        name: 'netfetch',
        network: { allow: [`host.sandcell.internal:${port}`] },
        files: [{ source: 'probe.py', target: '/usr/share/netfetch/probe.py' }],
        setup: [
          `curl -fsS http://host.sandcell.internal:${port}/payload.txt -o /usr/share/netfetch/payload.txt`,
          'python3 /usr/share/netfetch/probe.py > /usr/share/netfetch/raw.txt',
        ],
      }),
    );
    allowed = await buildEnvironment({
      file: path.join(directory, 'fetch.env.json'),
      backend: 'bubblewrap',
      onProgress: (entry) => progress.push(`${entry.stage}${entry.detail ? ` — ${entry.detail}` : ''}`),
    });
  }, BUILD_TIMEOUT_MS);

  afterAll(async () => {
    if (previousStore === undefined) delete process.env.SANDCELL_ENVIRONMENT_DIR;
    else process.env.SANDCELL_ENVIRONMENT_DIR = previousStore;
    server?.close();
    await rm(directory, { recursive: true, force: true });
  }, 600_000);

  it('a setup command fetches from an allowed host through the gate, and a session sees what it wrote', async () => {
    expect(await readFile(path.join(allowed.backendRef, 'usr/share/netfetch/payload.txt'), 'utf8')).toBe(PAYLOAD);
    const session = await createSession({ backend: 'bubblewrap', environmentName: 'netfetch', preloadModules: [] });
    try {
      const execution = await session.run("print(open('/usr/share/netfetch/payload.txt').read(), end='')");
      expect(execution.stdout).toBe(PAYLOAD);
    } finally {
      await session.close();
    }
  });

  it("prints the build's allow-list and each connection the gate made", () => {
    expect(progress).toContainEqual(
      expect.stringMatching(new RegExp(`^network gate — .*host\\.sandcell\\.internal:${port}`)),
    );
    expect(progress).toContainEqual(
      expect.stringMatching(
        new RegExp(`^network gate: request to host\\.sandcell\\.internal:${port} \\(127\\.0\\.0\\.1\\)`),
      ),
    );
  });

  it('a raw TCP connect from setup reaches nothing outside the build (the forwarder, its canary, does connect)', async () => {
    // Without the build's namespace both targets take a connection: they are there to be reached.
    expect(await connects('127.0.0.1', port)).toBe(true);
    expect(await connects(mirror, 80)).toBe(true);
    const lines = (await readFile(path.join(allowed.backendRef, 'usr/share/netfetch/raw.txt'), 'utf8')).trim();
    expect(lines.split('\n')).toEqual([
      'forwarder: connected',
      'host loopback server: ConnectionRefusedError',
      'apt mirror: OSError',
    ]);
  });

  it(
    "a setup command asking for a host not on the list fails the build with the gate's refusal, leaving nothing",
    async () => {
      const file = path.join(directory, 'refused.env.json');
      await writeFile(
        file,
        JSON.stringify({
          name: 'netrefused',
          setup: ['curl -fsS http://not-on-the-list.example/ -o /usr/share/refused.txt'],
        }),
      );
      const attempt = buildEnvironment({ file, backend: 'bubblewrap' });
      await expect(attempt).rejects.toThrow(ImageBuildError);
      await expect(attempt).rejects.toThrow(/network gate refused[^\n]*not-on-the-list\.example[^\n]*host-not-allowed/);
      expect(await readdir(path.join(store, 'netrefused')).catch(() => [])).toEqual([]);
    },
    BUILD_TIMEOUT_MS,
  );
});
