/**
 * /readyz and the capacity gauge, over real HTTP on 127.0.0.1 on the scripted backend: what a load
 * balancer's health check and a HorizontalPodAutoscaler read of a node.
 */
import { describe, expect, it } from 'vitest';
import { useScriptedServer } from '../../../test/support/server.js';

const fixture = useScriptedServer(undefined, { maxSessions: 4 }, {});
const { api, newSession } = fixture;

describe('readiness and capacity', () => {
  it('/readyz names the node and its sessions without a key; the gauge is live over --max-sessions', async () => {
    const before = await fetch(`${fixture.server.url}/readyz`);
    expect(before.status).toBe(200);
    const ready = (await before.json()) as { status: string; node: string; sessions: { live: number; max: number } };
    expect(ready).toEqual({ status: 'ready', node: expect.any(String), sessions: { live: 0, max: 4 } });
    expect(ready.node.length).toBeGreaterThan(0);

    await newSession();
    const after = (await (await fetch(`${fixture.server.url}/readyz`)).json()) as typeof ready;
    expect(after.sessions).toEqual({ live: 1, max: 4 });
    const metrics = await (await api('/metrics')).text();
    expect(metrics).toMatch(/^sandcell_sessions_capacity_used_ratio 0\.25$/m);
  });
});
