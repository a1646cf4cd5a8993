/**
 * doctor's gVisor checks: runsc, the platform it runs on and why, and a trial
 * session. gVisor is optional: without `--backend gvisor` a missing or broken
 * runsc is a warning, since bubblewrap (the default) does not need it.
 */
import { createGvisorBackend } from '../backends/gvisor/index.js';
import { createSession } from '../session/session.js';

type Add = (level: 'ok' | 'warn' | 'fail', title: string, detail?: string) => void;

export async function checkGvisor(add: Add, required: boolean, rootfs: string | undefined): Promise<void> {
  const problem = required ? 'fail' : 'warn';
  const backend = createGvisorBackend(rootfs ? { rootfs } : {});
  let report: Awaited<ReturnType<typeof backend.report>>;
  try {
    report = await backend.report();
  } catch (error) {
    add(problem, 'the gVisor backend (--backend gvisor) is unavailable', (error as Error).message);
    return;
  }
  add('ok', `gVisor: ${report.version} (${report.runscPath})`);
  add(
    report.platform === 'ptrace' ? 'warn' : 'ok',
    `gVisor platform: ${report.platform} (${report.platformReason})`,
    report.platform === 'ptrace'
      ? 'ptrace is the slowest platform: every system call costs a round trip through the host. A machine with hardware virtualisation (kvm) or a newer runsc (systrap) is faster. SANDCELL_GVISOR_PLATFORM chooses one.'
      : undefined,
  );
  if (report.statxShim) {
    add('ok', "gVisor: statx's AT_NO_AUTOMOUNT is cleared by a preloaded shim, so `ls -l` and `stat` work");
  } else {
    add(
      'warn',
      'gVisor: no C compiler to build the statx shim: `ls -l` and `stat` fail with "Invalid argument" under this runsc',
      'Install gcc (or run `npm run setup`), or a runsc from 2023 or later.',
    );
  }
  try {
    const started = performance.now();
    const session = await createSession({ backend, timeoutMs: 60_000 });
    try {
      const startMs = performance.now() - started;
      const result = await session.run('1 + 1');
      if (result.results[0]?.data['text/plain'] !== '2') throw new Error(`1 + 1 gave ${JSON.stringify(result)}`);
      add('ok', `gVisor: a trial session started in ${Math.round(startMs)} ms and ran code`);
    } finally {
      await session.close();
    }
  } catch (error) {
    add(problem, 'gVisor: a trial session failed', (error as Error).message);
  }
}
