/**
 * Internet access on Docker from a sandcell that is not root (an account in the docker group): it
 * cannot give the gate's socket to the container's uid, so the socket stays its own, 0660, of its
 * group, and the container is given that group (and the same of the ingress socket, the host's way
 * in to the session's ports). The built library runs under setpriv as a uid of
 * its own whose only group is the engine socket's, as such an account would. Skipped (with the
 * reason) where that uid cannot read the checkout.
 */
import { execFile, execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, expect, it } from 'vitest';
import { createDockerBackend } from '../src/backends/docker/index.js';
import { describeWhenAvailable, unavailableReason } from './support/backends.js';
import { asAccount } from './support/host-uids.js';

const ACCOUNT_UID = 61_005;
const DIST = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'dist');
const ENGINE_HOST = process.env.DOCKER_HOST;
const ENGINE_SOCKET = ENGINE_HOST?.startsWith('unix://') ? ENGINE_HOST.slice('unix://'.length) : '/var/run/docker.sock';

const dockerReason = await unavailableReason(createDockerBackend());
// Not a backend's absence (SANDCELL_REQUIRE_BACKENDS does not apply): what this machine's accounts allow.
const accountReason = process.getuid?.() !== 0 ? 'running as another uid needs root' : notReadableByOthers();

/** The account must read the built library and its node_modules: a checkout under a private home cannot be run. */
function notReadableByOthers(): string | undefined {
  const check = `require('node:fs').accessSync(${JSON.stringify(path.join(DIST, 'index.js'))}, 4)`;
  try {
    execFileSync('setpriv', [...asAccount({ uid: ACCOUNT_UID }), process.execPath, '-e', check], {
      cwd: '/',
      stdio: 'ignore',
    });
    return undefined;
  } catch {
    return `the checkout (${DIST}) is not readable by another account`;
  }
}

const home = mkdtempSync(path.join(os.tmpdir(), 'sandcell-not-root-'));
afterAll(() => rmSync(home, { recursive: true, force: true }));

if (dockerReason === undefined && accountReason !== undefined) {
  process.stderr.write(`[skipped] docker network, sandcell not root: ${accountReason}\n`);
}

describeWhenAvailable('docker network, sandcell not root', 'docker', dockerReason, () => {
  it.skipIf(accountReason !== undefined)(
    "serves the session's allow-list through a socket of the account's group, which the container is given",
    async () => {
      const engineGroup = statSync(ENGINE_SOCKET).gid;
      execFileSync('chown', [`${ACCOUNT_UID}:${engineGroup}`, home]);
      const script = path.join(home, 'session.mjs');
      writeFileSync(
        script,
        `import http from 'node:http';
import { statSync } from 'node:fs';
const { createSession } = await import(${JSON.stringify(path.join(DIST, 'index.js'))});
const { createGateHost } = await import(${JSON.stringify(path.join(DIST, 'network', 'gate-host.js'))});
const server = http.createServer((request, response) => response.end('hello ' + request.url));
await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
const port = server.address().port;
// The name that reaches this host's loopback through the gate (127.0.0.1 is the sandbox's own).
const networkGate = createGateHost();
const session = await createSession({
  backend: 'docker',
  network: { allow: ['host.sandcell.internal:' + port] },
  networkGate,
});
const out = { uid: process.getuid(), groups: process.getgroups() };
try {
  out.canary = (await session.run('print("canary")')).stdout;
  const socket = await session.run('import json, os; s = os.stat("/run/sandcell/gate.sock"); print(json.dumps({"uid": os.getuid(), "groups": os.getgroups(), "socketGroup": s.st_gid, "mode": s.st_mode & 0o777}))');
  out.inside = JSON.parse(socket.stdout);
  const fetched = await session.run('import urllib.request; print(urllib.request.urlopen("http://host.sandcell.internal:' + port + '/through-the-gate").read().decode())');
  out.fetched = fetched.stdout;
  out.error = fetched.error?.value;
  // The ingress socket is the account's too, of its group: the host's way in to a port of the app.
  await session.run('import socket, threading\\nserver = socket.create_server(("127.0.0.1", 9000))\\ndef serve():\\n    while True:\\n        c, _ = server.accept(); c.sendall(b"from the app"); c.close()\\nthreading.Thread(target=serve, daemon=True).start()');
  const app = await session.ports.connect(9000);
  out.app = await new Promise((resolve, reject) => {
    let text = '';
    app.on('data', (chunk) => { text += chunk; });
    app.on('end', () => resolve(text));
    app.on('error', reject);
    app.resume();
  });
} finally {
  await session.close();
  server.close();
}
process.stdout.write(JSON.stringify(out));
`,
      );
      const { stdout } = await promisify(execFile)(
        'setpriv',
        [
          ...asAccount({ uid: ACCOUNT_UID, gid: engineGroup }),
          '/usr/bin/env',
          '-i',
          'PATH=/usr/bin:/bin',
          `HOME=${home}`,
          `XDG_RUNTIME_DIR=${home}`,
          ...(ENGINE_HOST ? [`DOCKER_HOST=${ENGINE_HOST}`] : []),
          process.execPath,
          script,
        ],
        { cwd: home, encoding: 'utf8', timeout: 120_000 },
      );
      const result = JSON.parse(stdout) as Record<string, unknown>;
      expect(result).toMatchObject({ uid: ACCOUNT_UID, groups: [engineGroup], canary: 'canary\n' });
      // The container's uid is a leased one, not the account's: it holds the account's group, which owns the socket.
      const inside = result.inside as { uid: number; groups: number[]; socketGroup: number; mode: number };
      expect(inside.uid).not.toBe(ACCOUNT_UID);
      expect(inside.groups).toContain(engineGroup);
      expect([inside.socketGroup, inside.mode]).toEqual([engineGroup, 0o660]);
      expect(result.fetched).toBe('hello /through-the-gate\n');
      expect(result.app).toBe('from the app');
    },
    180_000,
  );
});
