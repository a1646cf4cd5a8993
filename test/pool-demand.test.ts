/**
 * The pool keeps up with demand on real bubblewrap: after a spell of new
 * sessions arriving, it has grown, and a burst of callers all get sessions
 * whose kernels were running before the burst began (warm ones, not cold
 * starts). Sizing's own arithmetic is tested on the scripted backend in
 * src/session/pool-demand.test.ts; how fast is measured by `npm run bench`.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { SessionPool } from '../src/session/pool.js';

/** How long ago (in seconds) the kernel answering this was started, from its process's start time. */
const KERNEL_AGE = `
import os
start_ticks = int(open('/proc/self/stat').read().rsplit(')', 1)[1].split()[19])
uptime = float(open('/proc/uptime').read().split()[0])
round(uptime - start_ticks / os.sysconf('SC_CLK_TCK'), 3)
`;

describe('SessionPool sized by demand, on bubblewrap', () => {
  let pool: SessionPool | undefined;
  afterEach(async () => {
    await pool?.close();
    pool = undefined;
  });

  it('after new sessions have been arriving, serves a burst of four from warm sessions', async () => {
    // The arrival rate reads a fake clock (arrivals 50 ms apart, about 9 a second by the end, without
    // waiting for it); cold starts are real, and timed for real. Rate × cold start then asks for four or
    // more however fast this machine starts a session (0.1 s would still be four), up to maxWarm.
    const clock = { now: 0 };
    pool = new SessionPool({
      size: 1,
      maxWarm: 6,
      rateWindowMs: 1_000,
      sizingIntervalMs: 100,
      now: () => clock.now,
      sessionOptions: { preloadModules: [] },
    });
    await pool.start();
    for (let index = 0; index < 12; index++) {
      clock.now += 50;
      const session = await pool.acquire();
      expect((await session.run('1+1')).results[0]?.data['text/plain']).toBe('2');
      await session.close();
    }
    const target = pool.stats().environments.default?.target ?? 0;
    expect(target).toBeGreaterThanOrEqual(4);
    await expect.poll(() => pool?.stats().warm, { timeout: 60_000, interval: 100 }).toBeGreaterThanOrEqual(4);

    const burstBegan = performance.now();
    const sessions = await Promise.all(Array.from({ length: 4 }, () => pool?.acquire()));
    const ages = await Promise.all(
      sessions.map(async (session) => {
        const execution = await session?.run(KERNEL_AGE);
        const age = Number(execution?.results[0]?.data['text/plain']);
        return { age, sinceBurst: (performance.now() - burstBegan) / 1000 };
      }),
    );
    // Each kernel is older than the burst (to the 10 ms the kernel's clock ticks in): none was a cold start.
    for (const { age, sinceBurst } of ages) expect(age).toBeGreaterThan(sinceBurst - 0.02);
    await Promise.all(sessions.map((session) => session?.close()));
  });
});
