/**
 * Behind demand on real bubblewrap: a caller who finds nothing warm gets a session whose kernel has
 * not imported the preload modules (a cheaper start), in which importing them still works; the
 * pool's warm sessions have them imported before they are handed out. The policy's logic is tested
 * on the scripted backend in src/session/pool-light-starts.test.ts; the start costs are measured by
 * bench/start-cost.mjs and bench/arrivals.mjs.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createBubblewrapBackend } from '../src/backends/bubblewrap/index.js';
import { SessionPool } from '../src/session/pool.js';

// Starts by exec: a session forked from a template (SANDCELL_START's default as root, from a process's second
// start) has the preload imported whatever it asked, since its template did, so no start of it is light.
const backend = createBubblewrapBackend({ start: 'exec' });

/** Which of the preload modules the kernel had imported before this ran. */
const IMPORTED = `sorted(name for name in ('numpy', 'csv') if name in __import__('sys').modules)`;

describe('SessionPool behind demand, on bubblewrap', () => {
  let pool: SessionPool | undefined;
  afterEach(async () => {
    await pool?.close();
    pool = undefined;
  });

  it('hands a caller who finds nothing warm a session without the preload, where importing it still works', async () => {
    // No warm minimum: nothing is warm or starting when the caller comes, so its session is started for it.
    pool = new SessionPool({ size: 0, maxSessions: 4, sessionOptions: { backend, preloadModules: ['numpy', 'csv'] } });
    const light = await pool.acquire();
    expect((await light.run(IMPORTED)).results[0]?.data['text/plain']).toBe('[]');
    const imported = await light.run('import numpy\nint(numpy.arange(4).sum())');
    expect(imported.results[0]?.data['text/plain']).toBe('6');
    expect(pool.stats().environments.default?.lightStarts).toBe(1);
  });

  it('hands out warm sessions with the preload imported', async () => {
    pool = new SessionPool({ size: 1, maxSessions: 4, sessionOptions: { backend, preloadModules: ['numpy', 'csv'] } });
    await pool.start();
    const warm = await pool.acquire();
    expect((await warm.run(IMPORTED)).results[0]?.data['text/plain']).toBe("['csv', 'numpy']");
    expect(pool.stats().environments.default?.lightStarts).toBe(0);
  });
});
