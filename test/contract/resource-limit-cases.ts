/**
 * The security contract's resource limits: code that forks, allocates, fills the disk or sleeps
 * forever stays within its session's limits, and the session goes on. Run from
 * runSecurityContract (security-contract.ts).
 */
import { expect, it } from 'vitest';
import type { SandboxBackend } from '../../src/backends/spec.js';
import { attempt, canary } from './canary.js';
import { withSession } from './contract-support.js';

/**
 * Fills /mnt/data with 100 MiB, then allocates until the kernel dies, twice:
 * the restarted kernel must get only what the files leave of the session's
 * 256 MiB budget (not a whole new 256 MiB), and the death says why.
 */
export async function expectOneMemoryBudget(backend: SandboxBackend): Promise<void> {
  const MiB = 1024 * 1024;
  const budgetMiB = 256;
  const dataMiB = 100;
  // Allocates until the kernel dies, writing its progress into /mnt/data (output in flight dies with it).
  const hog =
    'import os\nfd = os.open("/mnt/data/progress", os.O_WRONLY | os.O_CREAT)\nhog = []\n' +
    'while True:\n    hog.append(b"x" * (8 << 20))\n    os.pwrite(fd, str(len(hog) * 8).encode().ljust(12), 0)';
  await withSession(backend, { limits: { memoryBytes: budgetMiB * MiB } }, async (session) => {
    await canary(session);
    const write = await session.run(
      `with open("/mnt/data/ballast.bin", "wb") as handle:\n    for _ in range(${dataMiB}):\n        handle.write(b"d" * (1 << 20))`,
    );
    expect(write.status).toBe('ok');
    const first = await session.run(hog, { timeoutMs: 30_000 });
    expect(first.error?.name).toBe('KernelDied');
    expect(first.error?.value).toMatch(/more memory than its limit/);
    expect(first.error?.value).toMatch(
      /files in \/mnt\/data use 10\d(\.\d)? MiB of the session's 256 MiB memory budget/,
    );
    // The restarted kernel keeps the files, and gets only what they leave of the budget.
    const second = await session.run(hog, { timeoutMs: 30_000 });
    expect(second.error?.name).toBe('KernelDied');
    const after = await session.run(
      'import os\nprint(os.path.getsize("/mnt/data/ballast.bin") >> 20, int(open("/mnt/data/progress").read()))',
    );
    const [keptMiB, allocatedMiB] = after.stdout.trim().split(' ').map(Number);
    expect(keptMiB).toBe(dataMiB);
    expect(allocatedMiB).toBeGreaterThan(0);
    expect((keptMiB as number) + (allocatedMiB as number)).toBeLessThanOrEqual(budgetMiB + 8);
  });
}

export function resourceLimitCases(backend: SandboxBackend): void {
  it('survives a fork bomb within the process limit', async () => {
    await withSession(backend, { limits: { processes: 64 } }, async (session) => {
      await canary(session);
      const execution = await session.run(
        'import os\nchildren = 0\ntry:\n    while True:\n        if os.fork() == 0:\n            import time; time.sleep(30); os._exit(0)\n        children += 1\nexcept OSError as error:\n    print("stopped after", children, type(error).__name__)',
        { timeoutMs: 15_000 },
      );
      const stopped = Number(/stopped after (\d+)/.exec(execution.stdout)?.[1]);
      expect(stopped).toBeGreaterThan(0);
      expect(stopped).toBeLessThan(64);
      await session.restart();
      await canary(session);
    });
  });

  it('survives a memory bomb within the memory limit', async () => {
    await withSession(backend, { limits: { memoryBytes: 256 * 1024 * 1024 } }, async (session) => {
      await canary(session);
      const execution = await session.run('hog = []\nwhile True:\n    hog.append(b"x" * (32 * 1024 * 1024))', {
        timeoutMs: 30_000,
      });
      expect(execution.status).toBe('error');
      // With a memory cgroup the kernel is OOM-killed; with RLIMIT_AS Python raises MemoryError.
      expect(['MemoryError', 'KernelDied']).toContain(execution.error?.name);
      if (execution.error?.name === 'KernelDied') expect(execution.error.value).toMatch(/memory/);
      await canary(session);
    });
  });

  it('keeps kernel memory and /mnt/data within one memory budget, whatever restarts', async () => {
    await expectOneMemoryBudget(backend);
  });

  it('cannot fill the disk: /mnt/data and /tmp are capped', async () => {
    const execution = await attempt(
      backend,
      `import os
for directory in ["/mnt/data", "/tmp"]:
  written = 0
  try:
      with open(os.path.join(directory, "fill.bin"), "wb") as handle:
          while written < 512 * 1024 * 1024:
              handle.write(b"\\0" * (1024 * 1024))
              handle.flush()
              written += 1024 * 1024
      print(directory, "UNCAPPED", written)
  except OSError as error:
      print(directory, "capped", written // (1024 * 1024))
  try:
      os.remove(os.path.join(directory, "fill.bin"))
  except OSError:
      pass`,
      { limits: { dataBytes: 16 * 1024 * 1024, tmpBytes: 16 * 1024 * 1024, fileSizeBytes: 16 * 1024 * 1024 } },
    );
    expect(execution.stdout).not.toContain('UNCAPPED');
    for (const line of execution.stdout.trim().split('\n')) {
      expect(Number(line.split(' ').pop())).toBeLessThanOrEqual(16);
    }
  });

  it('stops an endless sleep at the timeout', async () => {
    await withSession(backend, {}, async (session) => {
      await canary(session);
      const execution = await session.run('import time\ntime.sleep(3600)', { timeoutMs: 800 });
      expect(execution.status).toBe('timeout');
      expect(execution.durationMs).toBeLessThan(10_000);
      await canary(session);
    });
  });
}
