/**
 * The server-wide bound on RAM held by files: every session's /mnt/data is a
 * tmpfs, and together they stay within --data-budget-bytes. Past it a write
 * fails as on a full disk, inside the sandbox, and a new session gets 503.
 */
import { afterEach, expect, it } from 'vitest';
import { createBubblewrapBackend } from '../src/backends/bubblewrap/index.js';
import { sharedDataBudget } from '../src/backends/data-budget.js';
import { createDockerBackend } from '../src/backends/docker/index.js';
import type { SandboxBackend } from '../src/backends/spec.js';
import type { SandcellServer } from '../src/server/index.js';
import { SessionPool } from '../src/session/pool.js';
import { Session } from '../src/session/session.js';
import { describeWhenAvailable, unavailableReason } from './support/backends.js';
import { client, startTestServer } from './support/server.js';

const MiB = 1024 * 1024;

/** Writes `mebibytes` in 1 MiB steps and prints how many fitted, then the error if one stopped it. */
function writeCode(name: string, mebibytes: number): string {
  return [
    'written = 0',
    'try:',
    `    with open("/mnt/data/${name}", "wb") as handle:`,
    `        for _ in range(${mebibytes}):`,
    '            handle.write(b"w" * (1 << 20))',
    '            handle.flush()',
    '            written += 1',
    '    print("wrote", written)',
    'except OSError as error:',
    '    print("stopped", written, error)',
  ].join('\n');
}

const bubblewrap = createBubblewrapBackend();
const docker = createDockerBackend();
const backends: [string, SandboxBackend, string | undefined][] = [
  ['bubblewrap', bubblewrap, await unavailableReason(bubblewrap)],
  ['docker', docker, await unavailableReason(docker)],
];

for (const [name, backend, reason] of backends) {
  describeWhenAvailable(`data budget on ${name}`, name, reason, () => {
    let server: SandcellServer | undefined;
    afterEach(async () => {
      await server?.close();
      server = undefined;
    });

    it('fails writes past the budget with ENOSPC, refuses new sessions with 503, and gives room back when files go', async () => {
      if (name === 'docker') expect((await docker.report()).dataBudget).toEqual({ enforced: true });
      server = await startTestServer({
        backend,
        poolSize: 0,
        dataBudgetBytes: 48 * MiB,
        sessionOptions: { limits: { dataBytes: 32 * MiB } },
      });
      const api = client(server);
      const run = async (sessionId: string, code: string) =>
        (
          await api.json<{ stdout: string; status: string }>(`/v1/sessions/${sessionId}/executions`, {
            method: 'POST',
            json: { code },
          })
        ).stdout.trim();

      const a = await api.json<{ id: string }>('/v1/sessions', { method: 'POST' });
      expect(await run(a.id, 'print("canary")')).toBe('canary');
      expect(await run(a.id, writeCode('a.bin', 30))).toBe('wrote 30');

      // B may have only what is left of the budget: a full disk, inside the sandbox.
      const b = await api.json<{ id: string }>('/v1/sessions', { method: 'POST' });
      const refused = await run(b.id, writeCode('b.bin', 30));
      expect(refused).toMatch(/^stopped \d+ \[Errno 28\] No space left on device/);
      expect(Number(refused.split(' ')[1])).toBeLessThanOrEqual(18);

      // Nothing is left for a third session.
      const third = await api('/v1/sessions', { method: 'POST' });
      expect(third.status).toBe(503);
      expect(third.headers.get('retry-after')).toBe('30');
      const body = (await third.json()) as { error: { code: string; message: string } };
      expect(body.error.code).toBe('data-budget-exhausted');
      expect(body.error.message).toMatch(/data budget/);
      expect(body.error.message).toContain('--data-budget-bytes');
      const metrics = await (await api('/metrics')).text();
      expect(metrics).toContain(`sandcell_data_budget_bytes ${48 * MiB}`);
      expect(metrics).toContain('sandcell_requests_rejected_total{reason="data-budget"} 1');

      // A removes its files: B can write again.
      await run(a.id, 'import os\nos.remove("/mnt/data/a.bin")');
      expect(await run(b.id, writeCode('b2.bin', 12))).toBe('wrote 12');
      expect(sharedDataBudget().snapshot().committedBytes).toBeLessThanOrEqual(48 * MiB);
    });
  });
}

describeWhenAvailable('a pool on a full data budget', 'bubblewrap', backends[0]?.[2], () => {
  let pool: SessionPool | undefined;
  let session: Session | undefined;
  afterEach(async () => {
    await pool?.close();
    await session?.close();
    pool = undefined;
  });

  it('stops warming sessions, says why, and warms again once files are removed', async () => {
    await sharedDataBudget().configure(24 * MiB);
    const sessionOptions = { backend: bubblewrap, preloadModules: [], limits: { dataBytes: 16 * MiB } };
    session = await Session.create(sessionOptions);
    expect((await session.run(writeCode('kept.bin', 14))).stdout.trim()).toBe('wrote 14');
    // 10 MiB are left, less than a new volume needs: the pool cannot warm one, and says why.
    pool = new SessionPool({ size: 1, maxSessions: 4, sessionOptions });
    await expect(pool.start()).rejects.toThrow(/data budget/);
    expect(pool.stats()).toMatchObject({ warm: 0, lastError: expect.stringMatching(/data budget/) });
    // It keeps trying, backing off, and succeeds once the files are gone.
    await session.run('import os\nos.remove("/mnt/data/kept.bin")');
    await expect.poll(() => pool?.stats().warm, { timeout: 20_000, interval: 200 }).toBe(1);
    expect(pool.stats().lastError).toBeUndefined();
  });
});
