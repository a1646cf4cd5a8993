/**
 * What every contract suite shares: the options a suite is run with, a
 * session opened and closed around a body, and whether a process still runs.
 * A leaf, so the suites and their case files import it without a cycle.
 */
import { readFileSync } from 'node:fs';
import { beforeEach } from 'vitest';
import type { SandboxBackend } from '../../src/backends/spec.js';
import type { SessionOptions } from '../../src/session/options.js';
import { Session } from '../../src/session/session.js';

export interface ContractOptions {
  name: string;
  createBackend: () => SandboxBackend;
}

/** True while `pid` runs; a zombie (ended, waiting for its parent to reap it) counts as ended. */
export function isAlive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return false;
  }
}

export async function withSession<T>(
  backend: SandboxBackend,
  options: SessionOptions,
  body: (session: Session) => Promise<T>,
): Promise<T> {
  const session = await Session.create({ ...options, backend });
  try {
    return await body(session);
  } finally {
    await session.close();
  }
}

/**
 * Python that finds the kernel's object running the cell (its Runner, sandcell_python_runner.py: the
 * channel and the current execution), as hostile code could: the shell's display hook holds it.
 */
export const KERNEL_FROM_SHELL =
  "kernel = next(cell.cell_contents for cell in type(get_ipython().displayhook).finish_displayhook.__closure__ if type(cell.cell_contents).__name__ == 'Runner')";

/**
 * Marks the cases of the enclosing describe that a backend is known to fail, by name, each with why: they run
 * and must fail (what vitest's `it.fails` sets, set here once the name is known), so a gap closed without its
 * entry removed fails too. For a backend being built, never to hide a failure.
 */
export function markKnownGaps(gaps: Record<string, string>): void {
  beforeEach((context) => {
    if (Object.hasOwn(gaps, context.task.name)) (context.task as { fails?: boolean }).fails = true;
  });
}
