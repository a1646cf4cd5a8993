/**
 * The programs that run inside every sandbox, beside this file in both src/
 * and dist/: the supervisor (sandcell_supervisor.py, the sandbox's first
 * process), the kernels and their helpers (every `sandcell_*` file here), and
 * the seccomp filter every backend applies (seccomp_filter.py).
 */
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const kernelDirectory = path.dirname(fileURLToPath(import.meta.url));

/** The sandbox's first process: it owns the channel to the host and starts the kernels and commands. */
export const SUPERVISOR_SCRIPT = 'sandcell_supervisor.py';

/**
 * Python's flags for the supervisor: isolated, no bytecode written, and no
 * `site` (it uses the standard library alone, and skipping site's path
 * set-up takes milliseconds off every cold start). Its kernels get their own.
 */
export const SUPERVISOR_PYTHON_FLAGS = ['-I', '-B', '-S'] as const;

/** sandcell's seccomp filter (python3-seccomp): compiled to BPF for bwrap, or loaded in place in a container. */
export const SECCOMP_SCRIPT = path.join(kernelDirectory, 'seccomp_filter.py');

/** Loads a compiled seccomp filter with the standard library alone: in a container, and in a session template. */
export const SECCOMP_LOADER = 'seccomp_loader.py';

export const KERNEL_PROTOCOL_VERSION = 2;

/** Modules a Python kernel imports before the first cell (the pool's default preload, and what a session template warms). */
export const DEFAULT_PRELOAD_MODULES = ['numpy', 'pandas', 'matplotlib', 'matplotlib.pyplot'];

/** A file a sandbox needs: the supervisor, a kernel, or a module of theirs (not tests, not this TypeScript). */
const KERNEL_FILE = /^sandcell_[a-z0-9_]+\.(py|mjs|R)$/;

let kernelFileNames: string[] | undefined;

/**
 * The names of the files that go to /opt/sandcell in every sandbox, sorted:
 * the one list every backend and the runtime image copy from.
 */
export function kernelFiles(): string[] {
  kernelFileNames ??= readdirSync(kernelDirectory)
    .filter((name) => KERNEL_FILE.test(name))
    .sort();
  return [...kernelFileNames];
}
