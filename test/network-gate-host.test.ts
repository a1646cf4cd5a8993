/**
 * Gates for several sessions on one host, as the session layer will use them: each session's
 * socket serves that session's allow-list alone, and closing a channel removes its socket.
 */
import { execFile } from 'node:child_process';
import { existsSync, statSync } from 'node:fs';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createGateHost } from '../src/network/gate-host.js';
import { NetworkPolicyError } from '../src/network/policy.js';
import { getThroughGate } from './support/gate-client.js';
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

  it('refuses a bad allow-list before anything listens', async () => {
    await expect(createGateHost().openChannel({ sessionId: 'c', allow: ['pypi.org:99999'] })).rejects.toThrow(
      NetworkPolicyError,
    );
  });
});

/** Runs a GET through the socket as `uid` (setpriv drops every privilege): the status line, or the connect error's code. */
async function connectAs(uid: number, socketPath: string, url: string): Promise<string> {
  const client = `const socket = require('node:net').connect(${JSON.stringify(socketPath)});
socket.on('connect', () => socket.write('GET ${url} HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n'));
socket.on('data', (chunk) => { process.stdout.write(String(chunk).split('\\r\\n')[0]); socket.destroy(); });
socket.on('error', (error) => process.stdout.write(error.code));`;
  // Not execFileSync: the gate runs in this process and must go on answering.
  const { stdout } = await promisify(execFile)(
    'setpriv',
    [`--reuid=${uid}`, `--regid=${uid}`, '--clear-groups', '--inh-caps=-all', '--', process.execPath, '-e', client],
    { encoding: 'utf8', cwd: '/', timeout: 30_000 },
  );
  return stdout;
}
