/**
 * A sandbox's processes killed or stopped while a run is outstanding, on every backend (issue 44): the run
 * settles with what happened (test/contract/sandbox-loss-contract.ts). Bubblewrap by exec and forked from a
 * template (as root), and Docker where it runs.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { expect, it } from 'vitest';
import { createBubblewrapBackend } from '../src/backends/bubblewrap/index.js';
import { createDockerBackend } from '../src/backends/docker/index.js';
import { Session } from '../src/session/session.js';
import { runSandboxLossContract } from './contract/sandbox-loss-contract.js';
import { describeWhenAvailable, unavailableReason } from './support/backends.js';

runSandboxLossContract({ name: 'bubblewrap', createBackend: () => createBubblewrapBackend({ start: 'exec' }) });

const forking = createBubblewrapBackend({ start: 'fork' });
const forkingUnavailable =
  process.getuid?.() === 0
    ? await unavailableReason(forking)
    : 'forked sessions need root (each fork is its own host uid)';
describeWhenAvailable('sandbox loss on forked sessions', 'bubblewrap', forkingUnavailable, () => {
  runSandboxLossContract({ name: 'bubblewrap (forked)', createBackend: () => forking });

  // The cause of issue 44: a forked session's end waited for its template's report, so a template slow to
  // report (here: stopped) held session.close() — and, with nothing else open, let Node exit mid-await.
  it('closes a forked session whose template is stopped', async () => {
    const session = await Session.create({ backend: forking });
    const [template] = templates();
    if (template === undefined) throw new Error('no session template of this process was found');
    process.kill(template, 'SIGSTOP');
    try {
      await session.close();
      await expect(session.run('1+1')).rejects.toMatchObject({ code: 'session-closed' });
    } finally {
      process.kill(template, 'SIGCONT');
    }
  }, 30_000);
});

function parentOf(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
}

function commandLine(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8');
  } catch {
    return '';
  }
}

/** This process's session templates: the Python under each bwrap it started to run sandcell_zygote.py. */
function templates(): number[] {
  return readdirSync('/proc')
    .map(Number)
    .filter((pid) => {
      if (!Number.isInteger(pid) || !commandLine(pid).includes('sandcell_zygote.py')) return false;
      try {
        const bwrap = parentOf(pid);
        return parentOf(bwrap) === process.pid && commandLine(bwrap).startsWith('/usr/bin/bwrap');
      } catch {
        return false;
      }
    });
}

const docker = createDockerBackend();
describeWhenAvailable('sandbox loss on docker', 'docker', await unavailableReason(docker), () => {
  runSandboxLossContract({ name: 'docker', createBackend: () => docker });
});
