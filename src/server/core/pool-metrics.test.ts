/**
 * The pool's light warming in the server's metrics, on the scripted backend over real HTTP: whether
 * warm sessions start without the preload, and the start CPU demand that decides it.
 */
import { Writable } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { createScriptedBackend } from '../../backends/scripted/index.js';
import { createServer, type SandcellServer } from '../server.js';

let server: SandcellServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

describe('pool metrics', () => {
  it('says whether warm sessions start light, and the start CPU demand behind it', async () => {
    server = await createServer({
      host: '127.0.0.1',
      port: 0,
      poolSize: 1,
      webRoot: false,
      logDestination: new Writable({ write: (_chunk, _encoding, callback) => callback() }),
      backend: createScriptedBackend({ cpuSeconds: () => 1.1 }),
    });
    // One new session: 1/3 a second (the 3 s rate) × 1.1 CPU-s, 0.37 cores, below the share of the cores.
    // The rate decays from the arrival on (e^(-t/3 s)): bounded by the time the two requests took.
    const before = Date.now();
    const created = await fetch(`${server.url}/v1/sessions`, { method: 'POST' });
    expect(created.status).toBe(201);
    const metrics = await (await fetch(`${server.url}/metrics`)).text();
    const elapsedMs = Date.now() - before;
    expect(metrics).toMatch(/^sandcell_pool_warm_light 0$/m);
    const demand = Number(/^sandcell_pool_start_cpu_demand_cores (\S+)$/m.exec(metrics)?.[1]);
    expect(demand).toBeLessThanOrEqual(1.1 / 3 + 1e-9);
    expect(demand).toBeGreaterThanOrEqual((1.1 / 3) * Math.exp(-elapsedMs / 3_000) - 1e-9);
  });
});
