/**
 * The pool's own logic on the scripted backend: warming, refilling, the cap,
 * backing off from a broken host, idle reaping. test/pool.test.ts keeps what
 * needs a real sandbox (modules really imported, no process left behind).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createScriptedBackend, type ScriptedBackendOptions } from '../backends/scripted/index.js';
import { PoolExhaustedError, SandboxStartError, SessionClosedError } from '../errors.js';
import { DEFAULT_PRELOAD_MODULES, SessionPool, type SessionPoolOptions } from './pool.js';

let pool: SessionPool | undefined;
afterEach(async () => {
  await pool?.close();
  pool = undefined;
});

function scriptedPool(options: SessionPoolOptions, backendOptions: ScriptedBackendOptions = {}) {
  const backend = createScriptedBackend(backendOptions);
  pool = new SessionPool({ ...options, sessionOptions: { ...options.sessionOptions, backend } });
  return { backend, pool };
}

describe('SessionPool on the scripted backend', () => {
  it('warms `size` sessions with the data modules preloaded, hands one out and refills', async () => {
    const preloaded: unknown[] = [];
    const { pool } = scriptedPool(
      { size: 2, maxSessions: 4 },
      { onStart: ({ options }) => void preloaded.push(options.kernelOptions.preloadModules) },
    );
    await pool.start();
    expect(pool.stats()).toMatchObject({ warm: 2, leased: 0, starting: 0 });
    expect(preloaded).toEqual([DEFAULT_PRELOAD_MODULES, DEFAULT_PRELOAD_MODULES]);
    const session = await pool.acquire();
    expect(pool.stats()).toMatchObject({ warm: 1, leased: 1 });
    expect((await session.run('1')).status).toBe('ok');
    await expect.poll(() => pool.stats().warm).toBe(2);
    expect(pool.stats().leased).toBe(1);
  });

  it('caps the total number of sessions, and makes room when one closes', async () => {
    const { pool } = scriptedPool({ size: 0, maxSessions: 2 });
    const first = await pool.acquire();
    const second = await pool.acquire();
    await expect(pool.acquire()).rejects.toBeInstanceOf(PoolExhaustedError);
    await first.close();
    const third = await pool.acquire();
    expect(third.id).not.toBe(first.id);
    expect(second.closed).toBe(false);
  });

  it('at the cap, hands out a session that is still starting instead of failing', async () => {
    let release: () => void = () => undefined;
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    const { pool } = scriptedPool({ size: 1, maxSessions: 1 }, { onStart: () => gate });
    void pool.start();
    expect(pool.stats().starting).toBe(1);
    const acquiring = pool.acquire();
    release();
    const session = await acquiring;
    expect(session.closed).toBe(false);
    expect(pool.stats()).toMatchObject({ warm: 0, leased: 1, starting: 0 });
  });

  it('reports a failed start, backs off, and fills once the host works again', async () => {
    const { backend, pool } = scriptedPool(
      { size: 1 },
      {
        onStart: ({ attempt }) => {
          if (attempt === 1) throw new SandboxStartError('the host is broken for now');
        },
      },
    );
    await expect(pool.start()).rejects.toThrow('the host is broken for now');
    expect(pool.stats().lastError).toBe('the host is broken for now');
    // No retry storm: the next attempt waits for the back-off.
    expect(backend.sandboxes).toHaveLength(0);
    await expect.poll(() => pool.stats().warm, { timeout: 5_000 }).toBe(1);
    expect(pool.stats().lastError).toBeUndefined();
    expect(backend.sandboxes).toHaveLength(1);
  });

  it('closes handed-out sessions idle past the timeout, counting from the hand-out, telling its listeners first', async () => {
    const { pool } = scriptedPool({ size: 1, idleTimeoutMs: 200 });
    const told: { id: string; closed: boolean }[] = [];
    pool.onIdleClose((idle) => {
      told.push({ id: idle.id, closed: idle.closed });
    });
    await pool.start();
    // Warm for longer than the idle timeout before anyone takes it.
    await new Promise((resolve) => setTimeout(resolve, 400));
    const session = await pool.acquire();
    // Counted from the hand-out, it is not idle yet: it runs.
    expect((await session.run('1')).status).toBe('ok');
    await expect.poll(() => session.closed, { timeout: 5_000, interval: 20 }).toBe(true);
    expect(pool.stats().leased).toBe(0);
    expect(told).toEqual([{ id: session.id, closed: false }]);
  });

  it('does not close a session while it runs, however long', async () => {
    const { pool } = scriptedPool({ size: 0, idleTimeoutMs: 50 }, { execute: [[{ type: 'sleep', ms: 300 }]] });
    const session = await pool.acquire();
    const execution = await session.run('long');
    expect(execution.status).toBe('ok');
    expect(session.closed).toBe(false);
  });

  it('close ends warm, handed-out and starting sessions, and refuses to hand out more', async () => {
    const { backend, pool } = scriptedPool({ size: 2 });
    await pool.start();
    const leased = await pool.acquire();
    await pool.close();
    expect(leased.closed).toBe(true);
    expect(backend.liveSandboxes).toHaveLength(0);
    expect(backend.volumes.every((volume) => volume.disposed)).toBe(true);
    await expect(pool.acquire()).rejects.toThrow(/closed/);
  });

  it('hands out sessions with python alone, and takes every context down with an idle session', async () => {
    const { pool } = scriptedPool({ size: 1, idleTimeoutMs: 100 });
    await pool.start();
    const session = await pool.acquire();
    expect(session.listContexts().map((context) => context.id)).toEqual(['python']);
    expect(await session.commands.list()).toEqual([]);
    await session.run('1', { language: 'javascript' });
    await expect.poll(() => session.closed, { timeout: 5_000, interval: 20 }).toBe(true);
    await expect(session.run('1', { language: 'javascript' })).rejects.toBeInstanceOf(SessionClosedError);
  });

  it('does not close a session while a background command runs in it; its end restarts the idle clock', async () => {
    const { pool } = scriptedPool({ size: 0, idleTimeoutMs: 300 }, { command: () => [{ type: 'hang' }] });
    const told: string[] = [];
    pool.onIdleClose((idle) => {
      told.push(idle.id);
    });
    const session = await pool.acquire();
    const server = await session.commands.run('serve forever', { background: true });
    expect(session.busy).toBe(false); // nobody waits for it…
    expect(session.active).toBe(true); // …but it runs, so the session is not idle
    // Several idle timeouts (and many reaper rounds) pass: the command still runs.
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    expect(session.closed).toBe(false);
    expect(await session.commands.list()).toHaveLength(1);
    await server.kill();
    expect(await server.wait()).toMatchObject({ signal: 'SIGKILL' });
    expect(session.active).toBe(false);
    await expect.poll(() => session.closed, { timeout: 5_000, interval: 20 }).toBe(true);
    expect(told).toEqual([session.id]);
  });

  it('does not close a session while a command someone waits for runs', async () => {
    const { pool } = scriptedPool({ size: 0, idleTimeoutMs: 50 }, { command: () => [{ type: 'sleep', ms: 300 }] });
    const session = await pool.acquire();
    expect((await session.commands.run('long')).exitCode).toBe(0);
    expect(session.closed).toBe(false);
  });

  it("never hands a warm session to a holder that asks for network: it starts one with the channel, in a warm one's room at the cap", async () => {
    const channels: string[] = [];
    const networkGate = {
      openChannel: async ({ sessionId }: { sessionId: string }) => {
        channels.push(sessionId);
        return { socketPath: `/run/gates/${sessionId}.sock`, close: async () => undefined };
      },
    };
    const started: (string | undefined)[] = [];
    const { pool } = scriptedPool(
      { size: 1, maxSessions: 1, sessionOptions: { networkGate } },
      { onStart: ({ options }) => void started.push(options.network?.socketPath) },
    );
    await pool.start();
    const warm = started.length;
    const session = await pool.acquire({ network: { allow: ['pypi.org'] } });
    expect(channels).toEqual([session.id]);
    expect(started.slice(warm)).toEqual([`/run/gates/${session.id}.sock`]);
    expect(pool.stats()).toMatchObject({ warm: 0, leased: 1 });
    // The pool's own kind ('none', like its warm sessions) still comes from the warm list.
    await session.close();
    await expect.poll(() => pool.stats().warm).toBe(1);
    const plain = await pool.acquire({ network: 'none' });
    expect(started.at(-1)).toBeUndefined();
    expect(channels).toHaveLength(1);
    await plain.close();
  });
});
