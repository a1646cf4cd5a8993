/**
 * Gates for several sessions on one host, as the session layer will use them: each session's
 * socket serves that session's allow-list alone, and closing a channel removes its socket.
 */
import { execFile, spawn } from 'node:child_process';
import { once } from 'node:events';
import { chmodSync, cpSync, existsSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createGateHost } from '../src/network/gate-host.js';
import { NetworkPolicyError } from '../src/network/policy.js';
import { getThroughGate } from './support/gate-client.js';
import { asAccount } from './support/host-uids.js';
import { type StandInServer, startStandInServer } from './support/stand-in-internet.js';

let web: StandInServer;
beforeAll(async () => {
  web = await startStandInServer({ label: 'web' });
});
afterAll(async () => {
  await web?.close();
});

describe('createGateHost', () => {
  it("gives each session its own socket, serving that session's allow-list alone", async () => {
    const host = createGateHost({ resolve: async () => ['127.0.0.1'] });
    const first = await host.openChannel({
      sessionId: 'a',
      allow: [`first.test:${web.port}`, `127.0.0.1/32:${web.port}`],
    });
    const second = await host.openChannel({
      sessionId: 'b',
      allow: [`second.test:${web.port}`, `127.0.0.1/32:${web.port}`],
    });
    try {
      expect(first.socketPath).not.toBe(second.socketPath);
      expect(statSync(first.socketPath).mode & 0o777).toBe(0o600);
      expect((await getThroughGate(first.socketPath, `http://first.test:${web.port}/`)).status).toBe(200);
      expect((await getThroughGate(first.socketPath, `http://second.test:${web.port}/`)).status).toBe(403);
      expect((await getThroughGate(second.socketPath, `http://second.test:${web.port}/`)).status).toBe(200);
      expect((await getThroughGate(second.socketPath, `http://first.test:${web.port}/`)).status).toBe(403);
    } finally {
      await first.close();
      await second.close();
    }
    expect(existsSync(first.socketPath)).toBe(false);
  });

  it.runIf(process.getuid?.() === 0)(
    "gives the socket to the sandbox's uid alone: another local uid cannot connect",
    async () => {
      const sandboxUid = 61_001;
      const otherUid = 61_002;
      const host = createGateHost({ resolve: async () => ['127.0.0.1'] });
      const channel = await host.openChannel({
        sessionId: 'owned',
        allow: [`owned.test:${web.port}`, `127.0.0.1/32:${web.port}`],
        owner: { uid: sandboxUid, gid: sandboxUid },
      });
      try {
        const socket = statSync(channel.socketPath);
        expect([socket.uid, socket.gid, socket.mode & 0o777]).toEqual([sandboxUid, sandboxUid, 0o600]);
        // The sandbox's uid connects and is answered (the canary), another uid is refused by the kernel.
        expect(await connectAs(sandboxUid, channel.socketPath, `http://owned.test:${web.port}/canary`)).toMatch(
          /^HTTP\/1\.1 200/,
        );
        expect(await connectAs(otherUid, channel.socketPath, `http://owned.test:${web.port}/other`)).toBe('EACCES');
      } finally {
        await channel.close();
      }
    },
  );

  it.runIf(process.getuid?.() === 0)(
    'run by a uid that cannot give the socket away, opens it to its own group alone, which the sandbox is given',
    async () => {
      const sandcellUid = 61_003; // a sandcell not running as root (Docker without root)
      const sandboxUid = 61_001;
      const otherUid = 61_002;
      const child = openChannelAs(sandcellUid, {
        allow: [`grouped.test:${web.port}`, `127.0.0.1/32:${web.port}`],
        owner: { uid: sandboxUid, gid: sandboxUid },
      });
      try {
        const channel = await child.channel;
        expect(channel.socketGroup).toBe(sandcellUid);
        const socket = statSync(channel.socketPath);
        expect([socket.uid, socket.gid, socket.mode & 0o777]).toEqual([sandcellUid, sandcellUid, 0o660]);
        // The sandbox's uid holding the group connects and is answered (the canary); without it, or as another uid, refused.
        const url = `http://grouped.test:${web.port}/canary`;
        expect(await connectAs(sandboxUid, channel.socketPath, url, [sandcellUid])).toMatch(/^HTTP\/1\.1 200/);
        expect(await connectAs(sandboxUid, channel.socketPath, url)).toBe('EACCES');
        expect(await connectAs(otherUid, channel.socketPath, url)).toBe('EACCES');
        expect(await child.close()).toBe(0);
        expect(existsSync(channel.socketPath)).toBe(false);
      } finally {
        child.kill();
      }
    },
  );

  it('refuses a bad allow-list before anything listens', async () => {
    await expect(createGateHost().openChannel({ sessionId: 'c', allow: ['pypi.org:99999'] })).rejects.toThrow(
      NetworkPolicyError,
    );
  });
});

/**
 * Runs a GET through the socket as `uid` with only the supplementary `groups` (setpriv drops every
 * privilege): the status line, or the connect error's code.
 */
async function connectAs(uid: number, socketPath: string, url: string, groups: number[] = []): Promise<string> {
  const client = `const socket = require('node:net').connect(${JSON.stringify(socketPath)});
socket.on('connect', () => socket.write('GET ${url} HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n'));
socket.on('data', (chunk) => { process.stdout.write(String(chunk).split('\\r\\n')[0]); socket.destroy(); });
socket.on('error', (error) => process.stdout.write(error.code));`;
  // Not execFileSync: the gate runs in this process and must go on answering.
  const { stdout } = await promisify(execFile)(
    'setpriv',
    [...asAccount({ uid, groups }), process.execPath, '-e', client],
    { encoding: 'utf8', cwd: '/', timeout: 30_000 },
  );
  return stdout;
}

/**
 * The built gate host (dist/network, which needs nothing outside it but dist/errors.js), copied where
 * any uid may read it and run as `uid` without privileges: it opens one channel, prints it, and
 * closes it when its stdin ends.
 */
function openChannelAs(
  uid: number,
  request: { allow: string[]; owner: { uid: number; gid: number } },
): { channel: Promise<{ socketPath: string; socketGroup?: number }>; close(): Promise<number | null>; kill(): void } {
  const dist = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'dist');
  if (!existsSync(path.join(dist, 'network', 'gate-host.js'))) throw new Error('dist/ is missing: run `npm run build`');
  const directory = mkdtempSync(path.join(os.tmpdir(), 'sandcell-gate-not-root-'));
  chmodSync(directory, 0o755);
  cpSync(path.join(dist, 'network'), path.join(directory, 'network'), { recursive: true });
  cpSync(path.join(dist, 'errors.js'), path.join(directory, 'errors.js'));
  writeFileSync(path.join(directory, 'package.json'), '{ "type": "module" }\n');
  writeFileSync(
    path.join(directory, 'open-channel.mjs'),
    `import { createGateHost } from './network/gate-host.js';
const host = createGateHost({ resolve: async () => ['127.0.0.1'] });
const channel = await host.openChannel({ sessionId: 'not-root', ...${JSON.stringify({ allow: request.allow, owner: request.owner })} });
process.stdout.write(JSON.stringify({ socketPath: channel.socketPath, socketGroup: channel.socketGroup }) + '\\n');
process.stdin.on('end', () => channel.close().then(() => process.exit(0)));
process.stdin.resume();
`,
  );
  const child = spawn('setpriv', [...asAccount({ uid }), process.execPath, path.join(directory, 'open-channel.mjs')], {
    cwd: '/',
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const exited = once(child, 'exit').then(([code]) => code as number | null);
  const lines = createInterface({ input: child.stdout });
  const channel = Promise.race([
    once(lines, 'line').then(([line]) => JSON.parse(line as string) as { socketPath: string; socketGroup?: number }),
    exited.then((code) => Promise.reject(new Error(`the gate host exited with ${code} before opening a channel`))),
  ]);
  return {
    channel,
    close: async () => {
      child.stdin.end();
      return exited.finally(() => rmSync(directory, { recursive: true, force: true }));
    },
    kill: () => {
      if (child.exitCode === null) child.kill('SIGKILL');
      rmSync(directory, { recursive: true, force: true });
    },
  };
}
