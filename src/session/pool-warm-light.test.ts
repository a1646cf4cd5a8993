/**
 * When the arrivals' preloaded starts would keep more than a share of the host's cores busy, the
 * pool warms sessions without the preload, and preloaded ones again once demand falls. On the
 * scripted backend, whose sandboxes report the CPU a test says their start cost (a preloaded start
 * 1.1 CPU-seconds, a light one 0.4, as bench/start-cost.mjs measured); a fake clock stands in for the
 * time between arrivals. test/pool-warm-light.test.ts shows a light warm session on real bubblewrap.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createScriptedBackend, type ScriptedVolume } from '../backends/scripted/index.js';
import { InvalidInputError } from '../errors.js';
import { SessionPool, type SessionPoolOptions } from './pool.js';

const PRELOAD = ['numpy', 'pandas'];

let pool: SessionPool | undefined;
afterEach(async () => {
  await pool?.close();
  pool = undefined;
});

/**
 * A pool of 2 on 2 cores (the share, 0.6, is 1.2 cores) whose starts take a real 30 ms and report
 * `preloadedCpuSeconds` (`lightCpuSeconds` without the preload); arrival rates follow `clock.now` with the
 * default windows (30 s, and 3 s for warming light).
 */
function cpuPool(
  options: SessionPoolOptions = {},
  { preloadedCpuSeconds = 1.1, lightCpuSeconds = 0.4, preloadModules = PRELOAD } = {},
) {
  const clock = { now: 0 };
  const preloadOf = new Map<string, unknown>();
  const preloads = (modules: unknown) => Array.isArray(modules) && modules.length > 0;
  const backend = createScriptedBackend({
    onStart: async ({ options: start }) => {
      preloadOf.set((start.volume as ScriptedVolume).sessionId, start.kernelOptions.preloadModules);
      await new Promise((resolve) => setTimeout(resolve, 30));
    },
    cpuSeconds: (start) => (preloads(start.kernelOptions.preloadModules) ? preloadedCpuSeconds : lightCpuSeconds),
  });
  pool = new SessionPool({
    size: 2,
    maxWarm: 6,
    maxSessions: 40,
    cpuCores: 2,
    sizingIntervalMs: 10,
    now: () => clock.now,
    resolveEnvironment: (name) => {
      if (!['default', 'ml'].includes(name)) throw new InvalidInputError(`no environment ${name}`);
      return {};
    },
    ...options,
    sessionOptions: { preloadModules, backend },
  });
  return { pool, clock, preloadOf };
}

type Setup = ReturnType<typeof cpuPool>;

/** Until nothing starts or waits and every environment has its target warm: the refills are done. */
async function settled({ pool }: Setup) {
  await expect
    .poll(
      () => {
        const stats = pool.stats();
        return (
          stats.starting === 0 &&
          stats.waiting === 0 &&
          Object.values(stats.environments).every((environment) => environment.warm >= environment.target)
        );
      },
      { timeout: 10_000 },
    )
    .toBe(true);
}

/**
 * `count` new sessions, one every `intervalMs` of the fake clock, each closed by its user at once; the
 * refills end before the next arrival, so every session comes from the warm list (none is a light start
 * for a waiting caller). `environments` are taken in turn.
 */
async function arrivals(setup: Setup, count: number, intervalMs: number, environments: string[] = ['default']) {
  for (let index = 0; index < count; index++) {
    setup.clock.now += intervalMs;
    const session = await setup.pool.acquire({ environment: environments[index % environments.length] });
    await session.close();
    await settled(setup);
  }
}

describe('SessionPool warming light when starts would take too much of the host', () => {
  it('warms sessions without the preload at 2 a second, and preloaded ones again when demand falls', async () => {
    const setup = cpuPool();
    const { pool, preloadOf } = setup;
    await pool.start();
    // 2 a second for 20 s: the 3 s rate says 2.2 a second; × 1.1 CPU-s is 2.4 cores, over 60% of 2.
    await arrivals(setup, 40, 500);
    const busy = pool.stats();
    expect(busy.environments.default).toMatchObject({ warmLight: true, startCpuSeconds: 1.1 });
    expect(busy.startCpuDemand).toBeGreaterThan(busy.startCpuBudget);
    expect(busy.environments.default?.lightWarm).toBe(busy.warm);
    // Every session came warm (none was a light start for a waiting caller), and the warm ones are light.
    expect(busy.environments.default?.lightStarts).toBe(0);
    const light = await pool.acquire();
    expect(preloadOf.get(light.id)).toEqual([]);
    // Demand stops: the light warm sessions are replaced by preloaded ones.
    setup.clock.now += 300_000;
    await expect
      .poll(() => [pool.stats().environments.default?.lightWarm, pool.stats().warm], { timeout: 10_000 })
      .toEqual([0, 2]);
    expect(pool.stats().environments.default?.warmLight).toBe(false);
    const warm = await Promise.all([pool.acquire(), pool.acquire()]);
    expect(warm.map((session) => preloadOf.get(session.id))).toEqual([PRELOAD, PRELOAD]);
  });

  it('decides by the CPU a start was measured to cost, not a guess', async () => {
    // The same arrivals, but a preloaded start costs 0.3 CPU-s here: 0.65 cores, well within the share.
    const setup = cpuPool({}, { preloadedCpuSeconds: 0.3 });
    const { pool, preloadOf } = setup;
    await pool.start();
    await arrivals(setup, 40, 500);
    const stats = pool.stats().environments.default;
    expect(stats?.startCpuSeconds).toBeCloseTo(0.3, 2);
    expect(stats?.warmLight).toBe(false);
    const warm = await pool.acquire();
    expect(preloadOf.get(warm.id)).toEqual(PRELOAD);
  });

  it('starts warming light within seconds of a burst, not once the 30 s rate has caught up', async () => {
    const setup = cpuPool();
    const { pool, preloadOf } = setup;
    await pool.start();
    // 2 a second for 10 s: the 30 s rate says 0.57 a second (0.6 cores); the 3 s one 2.2 (2.4 cores).
    await arrivals(setup, 20, 500);
    expect(pool.stats().environments.default?.ratePerSecond).toBeLessThan(0.7);
    expect(pool.stats().warmLight).toBe(true);
    const light = await pool.acquire();
    expect(preloadOf.get(light.id)).toEqual([]);
  });

  it('adds up the demand of every environment: the host is one', async () => {
    // A preloaded start costs 1.2 CPU-s here.
    const setup = cpuPool({}, { preloadedCpuSeconds: 1.2 });
    const { pool, preloadOf } = setup;
    await pool.start();
    // One every 2 s to each of two environments (the 3 s rate 0.69 a second just after one's arrival, 0.49
    // for the other): at most 0.8 cores each, within the share alone; 1.4 together.
    await arrivals(setup, 40, 1_000, ['default', 'ml']);
    const stats = pool.stats();
    expect(stats.environments.default?.warmLight).toBe(true);
    expect(stats.environments.ml?.lightWarm).toBeGreaterThan(0);
    const light = await pool.acquire({ environment: 'ml' });
    expect(preloadOf.get(light.id)).toEqual([]);
  });

  it('keeps warming light while demand is between four fifths of the share and the share', async () => {
    const setup = cpuPool();
    const { pool } = setup;
    await pool.start();
    await arrivals(setup, 40, 500);
    expect(pool.stats().environments.default?.warmLight).toBe(true);
    // 3.5 s later, and one more arrival: the 3 s rate is 1.01 a second (the 30 s one 0.91); × 1.1 is 1.11
    // cores, under the share (1.2), over four fifths of it (0.96).
    await arrivals(setup, 1, 3_500);
    expect(pool.stats().startCpuDemand).toBeLessThan(pool.stats().startCpuBudget);
    const between = pool.stats();
    expect(between.warmLight).toBe(true);
    expect(between.environments.default?.lightWarm).toBe(between.warm);
    // Well below: preloaded again.
    setup.clock.now += 20_000;
    await expect.poll(() => pool.stats().environments.default?.lightWarm, { timeout: 10_000 }).toBe(0);
  });

  it('with lightStartsWhenBehind off, warm sessions preload however fast sessions come', async () => {
    const setup = cpuPool({ lightStartsWhenBehind: false });
    const { pool, preloadOf } = setup;
    await pool.start();
    await arrivals(setup, 40, 500);
    expect(pool.stats().environments.default).toMatchObject({ warmLight: false, lightWarm: 0 });
    const warm = await pool.acquire();
    expect(preloadOf.get(warm.id)).toEqual(PRELOAD);
  });

  it('with nothing to preload, never says warm sessions start light', async () => {
    // Sessions that preload nothing cost what light ones do: say 1.1 CPU-s here, so the rate alone would decide.
    const setup = cpuPool({}, { lightCpuSeconds: 1.1, preloadModules: [] });
    await setup.pool.start();
    await arrivals(setup, 40, 500);
    expect(setup.pool.stats()).toMatchObject({ warmLight: false });
    expect(setup.pool.stats().startCpuDemand).toBeGreaterThan(setup.pool.stats().startCpuBudget);
  });

  it('refuses a negative CPU share', () => {
    expect(() => new SessionPool({ warmLightCpuShare: -1 })).toThrow(InvalidInputError);
  });
});
