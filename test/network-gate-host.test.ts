/**
 * Gates for several sessions on one host, as the session layer will use them: each session's
 * socket serves that session's allow-list alone, and closing a channel removes its socket.
 */
import { existsSync, statSync } from 'node:fs';
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
      expect(statSync(first.socketPath).mode & 0o777).toBe(0o666);
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

  it('refuses a bad allow-list before anything listens', async () => {
    await expect(createGateHost().openChannel({ sessionId: 'c', allow: ['pypi.org:99999'] })).rejects.toThrow(
      NetworkPolicyError,
    );
  });
});
