/**
 * /readyz and the capacity gauge, over real HTTP on 127.0.0.1 on the scripted backend: what a load
 * balancer's health check and a HorizontalPodAutoscaler read of a node; and a drain's first step
 * (--drain-delay), when /readyz already answers 503 and everything else is served as before.
 */
import { describe, expect, it } from 'vitest';
import { value } from '../../../test/support/kernel-script.js';
import { client, startScriptedServer, useScriptedServer } from '../../../test/support/server.js';

interface Ready {
  status: string;
  node: string;
  sessions: { live: number; max: number };
}

const fixture = useScriptedServer(undefined, { maxSessions: 4 }, {});
const { api, newSession } = fixture;

describe('readiness and capacity', () => {
  it('/readyz names the node and its sessions without a key; the gauge is live over --max-sessions', async () => {
    const before = await fetch(`${fixture.server.url}/readyz`);
    expect(before.status).toBe(200);
    const ready = (await before.json()) as Ready;
    expect(ready).toEqual({ status: 'ready', node: expect.any(String), sessions: { live: 0, max: 4 } });
    expect(ready.node.length).toBeGreaterThan(0);

    await newSession();
    const after = (await (await fetch(`${fixture.server.url}/readyz`)).json()) as Ready;
    expect(after.sessions).toEqual({ live: 1, max: 4 });
    const metrics = await (await api('/metrics')).text();
    expect(metrics).toMatch(/^sandcell_sessions_capacity_used_ratio 0\.25$/m);
  });

  it('with --drain-delay, a closing server says 503 on /readyz and goes on serving until the delay ends', async () => {
    const server = await startScriptedServer(() => [value('2')], { drainDelayMs: 1500 });
    const api = client(server);
    const session = await api.json<{ id: string }>('/v1/sessions', { method: 'POST' });
    const closed = server.close();
    const readiness = await fetch(`${server.url}/readyz`);
    expect(readiness.status).toBe(503);
    expect(((await readiness.json()) as Ready).status).toBe('draining');
    // New connections, existing sessions and new ones are served as before meanwhile.
    const run = await api.json<{ results: { data: Record<string, string> }[] }>(
      `/v1/sessions/${session.id}/executions`,
      { method: 'POST', json: { code: '1+1' } },
    );
    expect(run.results[0]?.data['text/plain']).toBe('2');
    expect((await api('/v1/sessions', { method: 'POST' })).status).toBe(201);
    expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
    await closed;
    // Then it takes no connection at all.
    await expect(fetch(`${server.url}/readyz`)).rejects.toThrow();
  });
});
