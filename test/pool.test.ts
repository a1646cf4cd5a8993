import { afterEach, describe, expect, it } from 'vitest';
import { PoolExhaustedError } from '../src/errors.js';
import { SessionPool } from '../src/session/pool.js';
import { isAlive } from './contract/backend-contract.js';

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

  it('caps the total number of sessions', async () => {
    pool = new SessionPool({ size: 0, maxSessions: 2, sessionOptions: { preloadModules: [] } });
    const first = await pool.acquire();
    const second = await pool.acquire();
    await expect(pool.acquire()).rejects.toBeInstanceOf(PoolExhaustedError);
    await first.close();
    const third = await pool.acquire();
    expect(third.id).not.toBe(first.id);
    expect(second.closed).toBe(false);
  });

  it('closes handed-out sessions that sit idle past the timeout, telling its listeners first', async () => {
    pool = new SessionPool({ size: 0, idleTimeoutMs: 300, sessionOptions: { preloadModules: [] } });
    const told: { id: string; closed: boolean }[] = [];
    pool.onIdleClose((idle) => told.push({ id: idle.id, closed: idle.closed }));
    const session = await pool.acquire();
    await session.run('1');
    await expect.poll(() => session.closed, { timeout: 5_000, interval: 100 }).toBe(true);
    expect(pool.stats().leased).toBe(0);
    expect(told).toEqual([{ id: session.id, closed: false }]);
  });

  it('counts idleness from the hand-out, not from the time a session sat warm', async () => {
    pool = new SessionPool({ size: 1, idleTimeoutMs: 400, sessionOptions: { preloadModules: [] } });
    await pool.start();
    // Warm for longer than the idle timeout before anyone takes it.
    await new Promise((resolve) => setTimeout(resolve, 800));
    const session = await pool.acquire();
    const handedOut = Date.now();
    await new Promise((resolve) => setTimeout(resolve, 200));
    // Still within the timeout counted from the hand-out: it runs.
    const execution = await session.run('21 * 2');
    expect(execution.results[0]?.data['text/plain']).toBe('42');
    await expect.poll(() => session.closed, { timeout: 5_000, interval: 50 }).toBe(true);
    expect(Date.now() - handedOut).toBeGreaterThanOrEqual(400);
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
});
