/**
 * Warming light on real bubblewrap: with a CPU share of 0 any arrival puts the pool past it, so the
 * session warmed after one is taken starts without the preload, and importing the modules in it still
 * works; the sandbox reports the CPU its start used, which the rule is fed. The rule itself is tested
 * on the scripted backend in src/session/pool-warm-light.test.ts; bench/arrivals.mjs measures it.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createBubblewrapBackend } from '../src/backends/bubblewrap/index.js';
import { SessionPool } from '../src/session/pool.js';

// Starts by exec: a session forked from a template (SANDCELL_START's default as root, from a process's second
// start) has the preload imported whatever it asked, since its template did, so no start of it is light.
const backend = createBubblewrapBackend({ start: 'exec' });

/** Which of the preload modules the kernel had imported before this ran. */
const IMPORTED = `sorted(name for name in ('numpy', 'csv') if name in __import__('sys').modules)`;

describe('SessionPool warming light, on bubblewrap', () => {
  let pool: SessionPool | undefined;
  afterEach(async () => {
    await pool?.close();
    pool = undefined;
  });

  it('keeps a session without the preload warm while starts would take more than the share, where importing works', async () => {
    pool = new SessionPool({
      size: 1,
      maxSessions: 4,
      warmLightCpuShare: 0,
      sessionOptions: { backend, preloadModules: ['numpy', 'csv'] },
    });
    // No arrival yet: no demand, so the first warm session preloads.
    await pool.start();
    const preloaded = await pool.acquire();
    expect((await preloaded.run(IMPORTED)).results[0]?.data['text/plain']).toBe("['csv', 'numpy']");
    const usage = await preloaded.usage();
    expect(usage.cpuSeconds).toBeGreaterThan(0);
    // That arrival is demand over a share of 0: the refill is light, and kept warm.
    await expect.poll(() => pool?.stats().environments.default?.lightWarm, { timeout: 120_000 }).toBe(1);
    expect(pool.stats().warmLight).toBe(true);
    const light = await pool.acquire();
    expect((await light.run(IMPORTED)).results[0]?.data['text/plain']).toBe('[]');
    const imported = await light.run('import numpy\nint(numpy.arange(4).sum())');
    expect(imported.results[0]?.data['text/plain']).toBe('6');
    // Neither was a start for a waiting caller: both came warm.
    expect(pool.stats().environments.default?.lightStarts).toBe(0);
  });
});
