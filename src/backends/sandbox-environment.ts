/**
 * What every backend's sandbox looks like from inside: the user, host name,
 * where the kernel lives, and an environment built explicitly (nothing is
 * inherited from the host).
 */
export { kernelFiles, SUPERVISOR_PYTHON_FLAGS, SUPERVISOR_SCRIPT } from '../kernel/index.js';

export const SANDBOX_UID = 1000;
export const SANDBOX_GID = 1000;
export const SANDBOX_USER = 'sandbox';
export const SANDBOX_HOSTNAME = 'sandbox';
/** Where the supervisor and the kernels are inside the sandbox. */
export const KERNEL_MOUNT = '/opt/sandcell';
export const DATA_MOUNT = '/mnt/data';
/**
 * E2B's home and working directory, bound to the same storage as /mnt/data: code written for
 * E2B finds its files at /home/user, and they are the session's files under both names.
 */
export const HOME_USER_MOUNT = '/home/user';
/**
 * The workspace root of the OpenAI Agents SDK's sandboxes (its default `Manifest` root), bound to
 * the same storage too: its `mkdir -p /workspace` finds it, and what it writes there is the
 * session's files, kept by pauses and snapshots like the rest.
 */
export const WORKSPACE_MOUNT = '/workspace';
/** Python's user base inside the sandbox (PYTHONUSERBASE): packages installed with pip during a session. */
export const USER_BASE = '/tmp/.local';

/** The environment inside the sandbox: explicit, nothing inherited from the host. */
export function sandboxEnvironment(options: {
  kernelOptions: Record<string, unknown>;
  threads: number;
  extra?: Record<string, string>;
}): Record<string, string> {
  const threads = String(Math.max(1, Math.floor(options.threads)));
  return {
    PATH: '/usr/local/bin:/usr/bin:/bin',
    HOME: '/tmp',
    USER: SANDBOX_USER,
    LOGNAME: SANDBOX_USER,
    LANG: 'C.UTF-8',
    LC_ALL: 'C.UTF-8',
    TMPDIR: '/tmp',
    TERM: 'dumb',
    MPLBACKEND: 'module://matplotlib_inline.backend_inline',
    MPLCONFIGDIR: '/tmp/.config/matplotlib',
    IPYTHONDIR: '/tmp/.ipython',
    // What `pip install` adds (a user install: the system's packages are read-only) and its cache live in the
    // sandbox's own /tmp, never under HOME: E2B's commands run with HOME=/home/user, the session's files.
    PYTHONUSERBASE: USER_BASE,
    PIP_CACHE_DIR: '/tmp/.cache/pip',
    // The system's packages are read-only in every sandbox, so pip cannot break them: a plain `pip install`
    // says "Requirement already satisfied" or falls back to a user install instead of refusing (PEP 668).
    // smolagents' E2B executor runs `!pip install` of what it needs at every run.
    PIP_BREAK_SYSTEM_PACKAGES: '1',
    OPENBLAS_NUM_THREADS: threads,
    OMP_NUM_THREADS: threads,
    MKL_NUM_THREADS: threads,
    ...options.extra,
    SANDCELL_KERNEL_OPTIONS: JSON.stringify(options.kernelOptions),
  };
}
