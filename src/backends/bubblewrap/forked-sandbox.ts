/**
 * A sandbox forked from a session template (zygote.ts): the same contract as
 * one bwrap starts, with the session's channel on a socket instead of pipes,
 * and its end reported by the template (which reaps it) rather than by a
 * child of ours.
 */
import { SandboxStartError } from '../../errors.js';
import { processesCpuSeconds } from '../process-cpu.js';
import type { Sandbox, SandboxExit, SandboxUsage } from '../spec.js';
import type { SandboxCgroup } from './cgroup.js';
import type { ForkedSession, SessionExit } from './zygote.js';

/**
 * Once a session's channel has closed, how long its template's report of its end is waited for. The
 * channel closes as the session's last process dies, so the report follows at once from a template that is
 * well; one that is stopped or stuck must not hold the session's end (its cgroup says what is left).
 */
const TEMPLATE_REPORT_WAIT_MS = 2_000;

export class ForkedSandbox implements Sandbox {
  readonly exited: Promise<SandboxExit>;
  private killedByUs = false;

  private constructor(
    private readonly session: ForkedSession,
    private readonly cgroup: SandboxCgroup | undefined,
  ) {
    // A channel can close before this sandbox exists (its session died as it started): 'close' was then missed.
    const channelClosed = session.channel.closed
      ? Promise.resolve()
      : new Promise<void>((resolve) => session.channel.once('close', () => resolve()));
    this.exited = (async () => {
      await channelClosed;
      const exit = await reportOrNothing(session.exited, TEMPLATE_REPORT_WAIT_MS);
      session.forget();
      const oomKills = (await this.cgroup?.oomKills()) ?? 0;
      // A session whose template died first is no child of anyone we hear from: its cgroup holds what is left.
      await this.cgroup?.remove();
      session.diagnostics.destroy();
      const code = exit?.code ?? null;
      const signal = exit?.signal ?? null;
      return { code, signal, reason: exitReason(code, signal, oomKills, this.killedByUs) };
    })();
  }

  static async started(forking: Promise<ForkedSession>, cgroup: SandboxCgroup | undefined): Promise<ForkedSandbox> {
    try {
      return new ForkedSandbox(await forking, cgroup);
    } catch (error) {
      throw error instanceof SandboxStartError
        ? error
        : new SandboxStartError(`Could not fork a session: ${String(error)}`, { cause: error });
    }
  }

  get input() {
    return this.session.channel;
  }

  get output() {
    return this.session.channel;
  }

  get diagnostics() {
    return this.session.diagnostics;
  }

  async kill(): Promise<SandboxExit> {
    if (!this.killedByUs) {
      this.killedByUs = true;
      this.session.kill();
      await this.cgroup?.killAll();
      // Without a template to ask or a cgroup to empty, the closed channel ends the supervisor, and with it PID 1.
      this.session.channel.destroy();
    }
    return this.exited;
  }

  async oomKills(): Promise<number> {
    return (await this.cgroup?.oomKills()) ?? 0;
  }

  usage(): Promise<SandboxUsage> {
    return cgroupUsage(this.cgroup, this.session.startCpuSeconds);
  }
}

/** The template's report of a session's end, or undefined once `waitMs` passed without it (a held timer). */
function reportOrNothing(report: Promise<SessionExit | undefined>, waitMs: number): Promise<SessionExit | undefined> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<undefined>((resolve) => {
    timer = setTimeout(() => resolve(undefined), waitMs);
  });
  return Promise.race([report, late]).finally(() => clearTimeout(timer));
}

/**
 * A bubblewrap sandbox's usage, read from its cgroups (none without them); `startCpuSeconds`: CPU its start
 * spent in a process no longer among them (a fork's helper).
 */
export async function cgroupUsage(cgroup: SandboxCgroup | undefined, startCpuSeconds = 0): Promise<SandboxUsage> {
  const processIds = cgroup ? await cgroup.processIds() : undefined;
  return {
    memoryBytes: await cgroup?.memoryBytes(),
    processIds,
    cpuSeconds: processIds ? (await processesCpuSeconds(processIds)) + startCpuSeconds : undefined,
  };
}

/**
 * Why a sandbox ended, from the status of its first process: bwrap's, which
 * passes on its child's (128 + signal for one killed by a signal), or a forked
 * session's PID 1, which the supervisor gives the same meaning.
 */
export function exitReason(
  code: number | null,
  signal: NodeJS.Signals | null,
  oomKills: number,
  killedByUs: boolean,
): SandboxExit['reason'] {
  if (oomKills > 0) return 'out-of-memory';
  if (killedByUs) return 'killed';
  // SIGXCPU is the CPU-time limit.
  if (code === 128 + 24 || signal === 'SIGXCPU') return 'cpu-limit';
  if (code === 128 + 9 || signal === 'SIGKILL') return 'killed';
  return 'exited';
}
