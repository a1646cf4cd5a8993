/**
 * What the pool needs a real sandbox for: modules really imported in warm
 * sessions, no process left behind. Its logic (caps, refill, back-off, idle
 * reaping) is tested on the scripted backend in src/session/pool.test.ts.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { SessionPool } from '../src/session/pool.js';
import { isAlive } from './contract/contract-support.js';

describe('SessionPool on bubblewrap', () => {
  let pool: SessionPool | undefined;
  afterEach(async () => {
    await pool?.close();
    pool = undefined;
  });

  it('pre-warms sessions with the data modules imported and refills after a hand-out', async () => {
    pool = new SessionPool({ size: 2, maxSessions: 4 });
    await pool.start();
    expect(pool.stats()).toMatchObject({ warm: 2, leased: 0 });
    const session = await pool.acquire();
    expect(pool.stats().leased).toBe(1);
    const modules = await session.run(
      'import sys\nsorted(m for m in ("numpy", "pandas", "matplotlib.pyplot") if m in sys.modules)',
    );
    expect(modules.results[0]?.data['text/plain']).toBe("['matplotlib.pyplot', 'numpy', 'pandas']");
    // The pool refills in the background.
    await expect.poll(() => pool?.stats().warm, { timeout: 20_000 }).toBe(2);
  });

  it('leaves no process behind after close', async () => {
    pool = new SessionPool({ size: 2, sessionOptions: { preloadModules: [] } });
    await pool.start();
    const session = await pool.acquire();
    await session.run('import subprocess\nsubprocess.Popen(["sleep", "600"])');
    const processIds = (await session.usage()).processIds ?? [];
    await pool.close();
    pool = undefined;
    for (const pid of processIds) expect(isAlive(pid)).toBe(false);
    expect(session.closed).toBe(true);
  });

  it('keeps a session with a background command past the idle timeout, and kills what still runs at close', async () => {
    pool = new SessionPool({ size: 0, idleTimeoutMs: 1_000, sessionOptions: { preloadModules: [] } });
    const session = await pool.acquire();
    const sleeper = await session.commands.run('sleep 4 && echo slept > /mnt/data/slept.txt', { background: true });
    const sleeping = (await session.usage()).processIds ?? [];
    expect(sleeping.length).toBeGreaterThan(1);
    // Four idle timeouts pass while it sleeps; nothing else happens in the session.
    expect(await sleeper.wait()).toMatchObject({ exitCode: 0, timedOut: false });
    expect(session.closed).toBe(false);
    expect((await session.files.read('slept.txt')).toString()).toBe('slept\n');
    // Idle once it has ended: closed, with every process of the sandbox.
    await expect.poll(() => session.closed, { timeout: 20_000 }).toBe(true);
    await expect.poll(() => sleeping.filter(isAlive), { timeout: 5_000 }).toEqual([]);

    const other = await pool.acquire();
    const forever = await other.commands.run('sleep 600', { background: true });
    const running = (await other.usage()).processIds ?? [];
    const waited = forever.wait();
    await pool.close();
    pool = undefined;
    await expect(waited).rejects.toThrow(/closed/);
    for (const pid of running) expect(isAlive(pid)).toBe(false);
  });
});
