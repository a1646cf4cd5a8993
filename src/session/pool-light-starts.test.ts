/**
 * When the pool falls behind (a caller finds nothing warm and no start under way is left for it),
 * the session started for that caller skips the preload; warm sessions always have it. On the
 * scripted backend, which records what each sandbox was asked to import at start.
 * test/pool-light-starts.test.ts shows the same on real bubblewrap.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createScriptedBackend, type ScriptedVolume } from '../backends/scripted/index.js';
import { SessionPool, type SessionPoolOptions } from './pool.js';

const PRELOAD = ['numpy', 'pandas'];

let pool: SessionPool | undefined;
afterEach(async () => {
  await pool?.close();
  pool = undefined;
});

/** A pool whose starts take a real 100 ms; `preloadOf` maps each session id to the modules its kernel was asked to import. */
function recordingPool(options: SessionPoolOptions) {
  const preloadOf = new Map<string, unknown>();
  const backend = createScriptedBackend({
    onStart: async ({ options: start }) => {
      preloadOf.set((start.volume as ScriptedVolume).sessionId, start.kernelOptions.preloadModules);
      await new Promise((resolve) => setTimeout(resolve, 100));
    },
  });
  pool = new SessionPool({ ...options, sessionOptions: { preloadModules: PRELOAD, backend } });
  return { pool, backend, preloadOf };
}

describe('SessionPool behind demand', () => {
  it('hands callers who find nothing warm sessions started without the preload', async () => {
    const { pool, preloadOf } = recordingPool({ size: 0, maxSessions: 10, startConcurrency: 4 });
    // Nothing warm, nothing starting: each caller's session is started for it.
    const sessions = await Promise.all(Array.from({ length: 3 }, () => pool.acquire()));
    expect(sessions.map((session) => preloadOf.get(session.id))).toEqual([[], [], []]);
    expect(pool.stats().environments.default?.lightStarts).toBe(3);
  });

  it('hands a waiting caller a preloaded session already starting rather than a light one', async () => {
    const { pool, preloadOf } = recordingPool({ size: 1, maxSessions: 10 });
    // The pool's own start is under way (nothing warm yet): the caller takes it.
    void pool.start();
    const session = await pool.acquire();
    expect(preloadOf.get(session.id)).toEqual(PRELOAD);
    expect(pool.stats().environments.default?.lightStarts).toBe(0);
  });

  it('with lightStartsWhenBehind off, preloads every start', async () => {
    const { pool, preloadOf } = recordingPool({ size: 1, maxSessions: 10, lightStartsWhenBehind: false });
    await pool.start();
    const sessions = await Promise.all(Array.from({ length: 3 }, () => pool.acquire()));
    expect(sessions.map((session) => preloadOf.get(session.id))).toEqual([PRELOAD, PRELOAD, PRELOAD]);
    expect(pool.stats().environments.default?.lightStarts).toBe(0);
  });

  it('makes no start for the warm list while callers wait, so their light starts get the machine', async () => {
    const preloadedWhileWaiting: unknown[] = [];
    const backend = createScriptedBackend({
      onStart: async ({ options: start }) => {
        const waiting = pool?.stats().waiting ?? 0;
        if (waiting > 0 && (start.kernelOptions.preloadModules as string[]).length > 0)
          preloadedWhileWaiting.push(waiting);
        await new Promise((resolve) => setTimeout(resolve, 100));
      },
    });
    pool = new SessionPool({
      size: 2,
      maxSessions: 20,
      startConcurrency: 6,
      sessionOptions: { preloadModules: PRELOAD, backend },
    });
    await pool.start();
    // Two warm, four callers waiting; the refills come due while they wait.
    await Promise.all(Array.from({ length: 6 }, () => pool?.acquire()));
    await expect.poll(() => pool?.stats().warm, { timeout: 5_000 }).toBe(2);
    expect(pool.stats().environments.default?.lightStarts).toBe(4);
    expect(preloadedWhileWaiting).toEqual([]);
  });

  it('never keeps a session without the preload warm', async () => {
    // A burst of 8 at once is, by its rate, demand that warms light for a few seconds (pool-warm-light.test.ts);
    // with the share out of reach only the light starts for waiting callers are in play here.
    const { pool, preloadOf } = recordingPool({ size: 3, maxWarm: 3, maxSessions: 20, warmLightCpuShare: 100 });
    await pool.start();
    // A burst well past the warm set: some callers get light sessions, the refills must not.
    const burst = await Promise.all(Array.from({ length: 8 }, () => pool.acquire()));
    expect(pool.stats().environments.default?.lightStarts).toBeGreaterThan(0);
    await Promise.all(burst.map((session) => session.close()));
    await expect.poll(() => pool.stats().warm, { timeout: 5_000 }).toBe(3);
    const warm = await Promise.all(Array.from({ length: 3 }, () => pool.acquire()));
    expect(warm.map((session) => preloadOf.get(session.id))).toEqual([PRELOAD, PRELOAD, PRELOAD]);
  });
});
