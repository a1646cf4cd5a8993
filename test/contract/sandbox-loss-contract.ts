/**
 * Nothing waits forever (issue 44): a sandbox's processes killed or stopped
 * from outside — its kernel, its supervisor, or every process of it; with
 * SIGKILL, or with SIGSTOP, which leaves the channel open and silent — while
 * a run is outstanding, and the run settles, saying what happened, with the
 * session usable after. A stopped sandbox is found by the liveness check
 * alone: the run's own time limit is ten minutes here, far past the test's,
 * so the test fails if anything but the check ends it. Pending requests
 * (a file read) and commands of a lost sandbox fail with SandboxCrashedError.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { SandboxCrashedError } from '../../src/errors.js';
import { Session } from '../../src/session/session.js';
import type { ContractOptions } from './contract-support.js';

type Target = 'kernel' | 'supervisor' | 'sandbox';
type Signal = 'SIGKILL' | 'SIGSTOP';

/** What the run's error says, per case: the words a user reads. */
const SAID: Record<Target, Record<Signal, RegExp>> = {
  kernel: { SIGKILL: /The kernel died \(killed by SIGKILL\)/, SIGSTOP: /kernel was stopped \(SIGSTOP/ },
  supervisor: { SIGKILL: /The sandbox ended/, SIGSTOP: /did not answer a liveness check/ },
  sandbox: { SIGKILL: /The sandbox ended/, SIGSTOP: /did not answer a liveness check/ },
};

/** A process's pid in its innermost PID namespace (the sandbox's), from the host's /proc. */
function innerPid(pid: number): number | undefined {
  try {
    const line = /^NSpid:\s+(.*)$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
    return line === undefined ? undefined : Number(line.trim().split(/\s+/).at(-1));
  } catch {
    return undefined;
  }
}

/** The host pids of the session's supervisor (PID 1 inside), its python kernel, and every process of it. */
async function sandboxProcesses(session: Session) {
  const kernelInside = Number((await session.run('import os\nos.getpid()')).results[0]?.data['text/plain']);
  const all = (await session.usage()).processIds ?? [];
  const supervisor = all.find((pid) => innerPid(pid) === 1);
  const kernel = all.find((pid) => innerPid(pid) === kernelInside);
  if (supervisor === undefined || kernel === undefined || kernelInside === 1) {
    throw new Error(
      `The backend must name the sandbox's processes (usage().processIds: ${all.join(', ') || 'none'}); bubblewrap needs root for its cgroups.`,
    );
  }
  return { supervisor, kernel, all };
}

export function runSandboxLossContract({ name, createBackend }: ContractOptions): void {
  describe(`a sandbox lost while a run is outstanding: ${name}`, () => {
    const backend = createBackend();
    for (const target of ['kernel', 'supervisor', 'sandbox'] as const) {
      for (const signal of ['SIGKILL', 'SIGSTOP'] as const) {
        it(`settles the run, saying what happened, when the ${target} gets ${signal}`, async () => {
          const session = await Session.create({
            backend,
            timeoutMs: 10 * 60_000,
            livenessCheckMs: 500,
            livenessTimeoutMs: 2_000,
          });
          let processes: number[] = [];
          try {
            const { supervisor, kernel, all } = await sandboxProcesses(session);
            processes = all;
            let started: () => void = () => undefined;
            const running = new Promise<void>((resolve) => {
              started = resolve;
            });
            const run = session.run('import time\nprint("started", flush=True)\ntime.sleep(600)', {
              onStdout: (text) => {
                if (text.includes('started')) started();
              },
            });
            await running;
            const whole = target === 'sandbox';
            // A command beside the run, when the whole sandbox goes: it ends with it.
            const command = whole ? session.commands.run('sleep 600') : undefined;
            if (command) await new Promise((resolve) => setTimeout(resolve, 300));
            const victims = target === 'kernel' ? [kernel] : target === 'supervisor' ? [supervisor] : all;
            for (const pid of victims) process.kill(pid, signal);
            // A file read sent to a stopped supervisor is answered by no one: it fails with the sandbox.
            const reading =
              signal === 'SIGSTOP' && target !== 'kernel'
                ? session.files.read('anything.txt').then(
                    () => undefined,
                    (error: unknown) => error,
                  )
                : undefined;

            const execution = await run;
            expect(execution.status).toBe('error');
            expect(execution.stateLost).toBe(true);
            expect(execution.error?.name).toBe('KernelDied');
            expect(execution.error?.value).toMatch(SAID[target][signal]);
            if (reading) {
              const error = await reading;
              expect(error).toBeInstanceOf(SandboxCrashedError);
              expect((error as Error).message).toMatch(/liveness check/);
            }
            if (command) await expect(command).rejects.toBeInstanceOf(SandboxCrashedError);
            // What is lost is replaced: the session runs again.
            expect((await session.run('1+1')).results[0]?.data['text/plain']).toBe('2');
          } finally {
            for (const pid of processes) {
              try {
                process.kill(pid, 'SIGCONT');
              } catch {
                // ended
              }
            }
            await session.close();
          }
        }, 60_000);
      }
    }
  });
}
