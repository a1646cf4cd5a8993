/**
 * The pool keeps up with demand, per environment, on the scripted backend:
 * it grows with the arrival rate (a fake clock stands in for the passing of
 * time between arrivals), shrinks when demand falls, keeps environments
 * apart under one total cap, and bounds how many sandboxes start at once.
 * test/pool-demand.test.ts shows a burst served warm on real bubblewrap.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createScriptedBackend, type ScriptedBackendOptions } from '../backends/scripted/index.js';
import { EnvironmentNotFoundError, InvalidInputError, ResourceExhaustedError } from '../errors.js';
import { SessionPool, type SessionPoolOptions } from './pool.js';
import { INITIAL_WARM_SESSION_BYTES } from './pool-environment.js';

let pool: SessionPool | undefined;
afterEach(async () => {
  await pool?.close();
  pool = undefined;
});

/** A pool on the scripted backend whose sizing clock is `clock.now` and looks at demand every 10 ms. */
function demandPool(options: SessionPoolOptions, backendOptions: ScriptedBackendOptions = {}) {
  const clock = { now: 0 };
  // Cold starts take a real 200 ms or more: what the target is computed from.
  const backend = createScriptedBackend({
    ...backendOptions,
    onStart: async (context) => {
      await new Promise((resolve) => setTimeout(resolve, 200));
      await backendOptions.onStart?.(context);
    },
  });
  pool = new SessionPool({
    sizingIntervalMs: 10,
    // The rate follows arrivals within a second of the fake clock.
    rateWindowMs: 1_000,
    now: () => clock.now,
    resolveEnvironment: (name) => {
      if (!['default', 'ml', 'web'].includes(name)) throw new InvalidInputError(`no environment ${name}`);
      return { environment: { ENVIRONMENT_NAME: name } };
    },
    ...options,
    sessionOptions: { preloadModules: [], ...options.sessionOptions, backend },
  });
  return { backend, pool, clock };
}

/** `count` new sessions of `environment`, one every `intervalMs` of the fake clock, each closed by its user at once. */
async function arrivals(
  target: { pool: SessionPool; clock: { now: number } },
  count: number,
  intervalMs: number,
  environment?: string,
) {
  for (let index = 0; index < count; index++) {
    target.clock.now += intervalMs;
    const session = await target.pool.acquire({ environment });
    await session.close();
  }
}

const environmentOf = (options: { environment?: Record<string, string> }) => options.environment?.ENVIRONMENT_NAME;

describe('SessionPool sized by demand', () => {
  it('grows the warm set as new sessions arrive faster, and shrinks back to the minimum when they stop', async () => {
    const setup = demandPool({ size: 1, maxWarm: 6, maxSessions: 20 });
    const { pool, backend, clock } = setup;
    await pool.start();
    expect(pool.stats().warm).toBe(1);
    // Ten a second for three seconds of the sizing clock.
    await arrivals(setup, 30, 100);
    expect(pool.stats().environments.default?.target).toBe(6);
    await expect.poll(() => pool.stats().warm, { timeout: 10_000 }).toBe(6);
    expect(pool.stats().warm + pool.stats().starting).toBeLessThanOrEqual(6);
    // Demand stops: five minutes later only the minimum is kept, and the rest are really closed.
    clock.now += 300_000;
    await expect.poll(() => pool.stats().warm, { timeout: 10_000 }).toBe(1);
    expect(backend.liveSandboxes).toHaveLength(1);
  });

  it('with sizing off (maxWarm = size) keeps exactly `size` warm whatever the demand', async () => {
    const setup = demandPool({ size: 2, maxSessions: 20 });
    const { pool } = setup;
    await pool.start();
    await arrivals(setup, 30, 100);
    await expect.poll(() => pool.stats().warm, { timeout: 10_000 }).toBe(2);
    // Well past several sizing rounds, it has not grown.
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(pool.stats()).toMatchObject({ warm: 2, starting: 0 });
  });

  it('keeps warm sessions per environment in use, of that environment, and none for one not in use', async () => {
    const starts: (string | undefined)[] = [];
    const setup = demandPool(
      { size: 1, maxWarm: 8, maxSessions: 20 },
      { onStart: ({ options }) => void starts.push(environmentOf(options)) },
    );
    const { pool } = setup;
    await pool.start();
    await arrivals(setup, 10, 200, 'ml');
    await expect.poll(() => pool.stats().environments.ml?.warm ?? 0, { timeout: 10_000 }).toBeGreaterThan(1);
    expect(pool.stats().environments.web).toBeUndefined();
    // What the ml environment hands out was started as ml, warm or not.
    const session = await pool.acquire({ environment: 'ml' });
    expect(starts.filter((name) => name === 'ml').length).toBeGreaterThan(1);
    expect(starts.filter((name) => name === 'web')).toEqual([]);
    await session.close();
    // The default environment kept its own minimum through it.
    expect(pool.stats().environments.default?.warm).toBe(1);
  });

  it('refuses an environment that does not exist before starting anything for it', async () => {
    const { pool, backend } = demandPool({ size: 0, maxWarm: 4 });
    await expect(pool.acquire({ environment: 'nope' })).rejects.toBeInstanceOf(InvalidInputError);
    expect(backend.sandboxes).toHaveLength(0);
    expect(pool.stats().environments.nope).toBeUndefined();
  });

  it('fails the callers of an environment that is not built, and keeps or retries nothing for it', async () => {
    let webStarts = 0;
    const { pool } = demandPool(
      { size: 1, maxWarm: 4 },
      {
        onStart: ({ options }) => {
          if (environmentOf(options) !== 'web') return;
          webStarts++;
          throw new EnvironmentNotFoundError('There is no environment named web.');
        },
      },
    );
    await pool.start();
    await expect(pool.acquire({ environment: 'web' })).rejects.toMatchObject({ code: 'environment-not-found' });
    // Starts already under way for it (its first caller made it an environment in use) end too…
    await new Promise((resolve) => setTimeout(resolve, 400));
    const startsUnderWay = webStarts;
    // …and many sizing rounds later: no retry, no warming for it, and the pool is not degraded by a caller's typo.
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(webStarts).toBe(startsUnderWay);
    expect(pool.stats().environments.web).toBeUndefined();
    expect(pool.stats().lastError).toBeUndefined();
    expect((await pool.acquire()).closed).toBe(false);
  });

  it('holds all environments together within maxWarm, sharing the room between those in demand', async () => {
    let mostHeld = 0;
    const setup = demandPool({ size: 0, maxWarm: 4, maxSessions: 40 });
    const { pool } = setup;
    const watch = setInterval(() => {
      const stats = pool.stats();
      // Starts that callers wait for are theirs, not the pool's.
      mostHeld = Math.max(mostHeld, stats.warm + stats.starting - stats.waiting);
    }, 5);
    try {
      for (let round = 0; round < 10; round++) {
        await arrivals(setup, 1, 100, 'ml');
        await arrivals(setup, 1, 100, 'web');
      }
      await expect.poll(() => pool.stats().warm, { timeout: 10_000 }).toBe(4);
    } finally {
      clearInterval(watch);
    }
    expect(mostHeld).toBeLessThanOrEqual(4);
    expect(pool.stats().environments.ml?.warm).toBeGreaterThan(0);
    expect(pool.stats().environments.web?.warm).toBeGreaterThan(0);
  });

  it('keeps warm sessions within the memory budget', async () => {
    const setup = demandPool({ size: 0, maxWarm: 10, warmMemoryBytes: 3 * INITIAL_WARM_SESSION_BYTES });
    await arrivals(setup, 30, 100);
    await expect.poll(() => setup.pool.stats().warm, { timeout: 10_000 }).toBe(3);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(setup.pool.stats().warm + setup.pool.stats().starting).toBe(3);
  });

  it('starts no more than startConcurrency sandboxes at once when behind', async () => {
    let running = 0;
    let mostAtOnce = 0;
    const setup = demandPool(
      { size: 8, maxWarm: 8, startConcurrency: 2 },
      {
        onStart: async () => {
          running++;
          mostAtOnce = Math.max(mostAtOnce, running);
          await new Promise((resolve) => setTimeout(resolve, 50));
          running--;
        },
      },
    );
    await setup.pool.start();
    expect(setup.pool.stats().warm).toBe(8);
    expect(mostAtOnce).toBe(2);
  });

  it("starts callers' sessions within startConcurrency too, the rest waiting their turn", async () => {
    let running = 0;
    let mostAtOnce = 0;
    const { pool } = demandPool(
      { size: 0, startConcurrency: 2, maxSessions: 10 },
      {
        onStart: async () => {
          running++;
          mostAtOnce = Math.max(mostAtOnce, running);
          await new Promise((resolve) => setTimeout(resolve, 50));
          running--;
        },
      },
    );
    const sessions = await Promise.all(Array.from({ length: 6 }, () => pool.acquire()));
    expect(new Set(sessions.map((session) => session.id)).size).toBe(6);
    expect(mostAtOnce).toBe(2);
  });

  it('fails a waiting caller with the error that stopped its start', async () => {
    const { pool } = demandPool(
      { size: 0 },
      {
        onStart: ({ attempt }) => {
          if (attempt === 1) throw new ResourceExhaustedError('data-budget-exhausted', 'the data budget is full');
        },
      },
    );
    await expect(pool.acquire()).rejects.toMatchObject({ code: 'data-budget-exhausted' });
    // The next caller is not held back by the back-off after a failure.
    expect((await pool.acquire()).closed).toBe(false);
  });

  it('hands a caller a session already starting rather than starting another', async () => {
    let release: () => void = () => undefined;
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    const { pool, backend } = demandPool({ size: 1 }, { onStart: () => gate });
    void pool.start();
    const acquiring = pool.acquire();
    release();
    const session = await acquiring;
    expect(session.closed).toBe(false);
    // Only the pool's start so far; the refill comes after the hand-out.
    expect(backend.sandboxes.length).toBeLessThanOrEqual(2);
    await expect.poll(() => pool.stats().warm, { timeout: 5_000 }).toBe(1);
    expect(backend.sandboxes).toHaveLength(2);
  });
});
