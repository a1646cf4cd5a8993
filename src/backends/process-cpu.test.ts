/** The CPU a process used, read from /proc the way the bubblewrap backend counts a sandbox's. */
import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { processCpuSeconds, processesCpuSeconds } from './process-cpu.js';

describe('processCpuSeconds', () => {
  it('counts the CPU this process used, and the children it reaped', async () => {
    // A child that spins for 0.3 s of CPU, reaped by this process before it is read.
    spawnSync(process.execPath, [
      '-e',
      'const end = process.cpuUsage().user + 300000; while (process.cpuUsage().user < end);',
    ]);
    const usage = process.cpuUsage();
    const own = (usage.user + usage.system) / 1e6;
    // /proc counts in 10 ms ticks; the child's 0.3 s are on top of this process's own.
    expect(await processCpuSeconds(process.pid)).toBeGreaterThanOrEqual(own + 0.3 - 0.05);
  });

  it('counts a process that is gone as 0, and adds up several', async () => {
    expect(await processCpuSeconds(2 ** 30)).toBe(0);
    const own = await processCpuSeconds(process.pid);
    expect(await processesCpuSeconds([process.pid, 2 ** 30])).toBeGreaterThanOrEqual(own);
  });
});
