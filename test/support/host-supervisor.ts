/**
 * The supervisor started straight from a directory of kernel files on the
 * host, in a minimal bwrap (its own PID namespace, a private /mnt/data, the
 * host's root otherwise): for testing the supervisor's handling of kernels
 * that no runtime has yet, such as the fd-3/4 fixture kernel. Not a sandbox.
 */
import { spawn } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Sandbox, SandboxExit } from '../../src/backends/spec.js';
import { kernelDirectory, kernelFiles } from '../../src/kernel/index.js';
import { RawSandbox } from './raw-sandbox.js';

/** `extraFiles`: kernel file name → its source, on top of (or instead of) the project's kernel files. */
export async function startHostSupervisor(options: {
  extraFiles?: Record<string, string>;
  kernelOptions?: Record<string, unknown>;
}): Promise<RawSandbox> {
  const root = mkdtempSync(path.join(os.tmpdir(), 'sandcell-supervisor-'));
  const kernel = path.join(root, 'kernel');
  const data = path.join(root, 'data');
  mkdirSync(kernel);
  mkdirSync(data);
  for (const name of kernelFiles()) copyFileSync(path.join(kernelDirectory, name), path.join(kernel, name));
  for (const [name, source] of Object.entries(options.extraFiles ?? {})) copyFileSync(source, path.join(kernel, name));
  const child = spawn(
    'bwrap',
    [
      '--dev-bind',
      '/',
      '/',
      '--tmpfs',
      '/mnt',
      '--bind',
      data,
      '/mnt/data',
      '--unshare-pid',
      '--die-with-parent',
      '--',
      '/usr/bin/python3',
      '-I',
      '-B',
      path.join(kernel, 'sandcell_supervisor.py'),
    ],
    {
      stdio: ['pipe', 'pipe', 'pipe'],
      env: {
        PATH: '/usr/bin:/bin',
        LANG: 'C.UTF-8',
        SANDCELL_KERNEL_OPTIONS: JSON.stringify({ outputBytes: 1 << 20, ...options.kernelOptions }),
      },
    },
  );
  const exited = new Promise<SandboxExit>((resolve) =>
    child.once('close', (code, signal) => resolve({ code, signal, reason: 'exited' })),
  );
  const sandbox: Sandbox = {
    input: child.stdin,
    output: child.stdout,
    diagnostics: child.stderr,
    exited,
    kill: async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      return exited;
    },
  };
  return new RawSandbox(sandbox, async () => {
    rmSync(root, { recursive: true, force: true });
  });
}
