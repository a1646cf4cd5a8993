/**
 * The bwrap command line for one sandbox. Pure: everything it needs is passed
 * in, so the isolation flags can be read (and unit-tested) in one place.
 */

export interface BubblewrapArgumentsInput {
  /** Host directory holding the session's files, mounted at /mnt/data. */
  dataDirectory: string;
  /** Host directory with the synthetic /etc files (passwd, group, hosts, …). */
  etcDirectory: string;
  /** Host directory with the kernel program, mounted read-only at /opt/sandcell. */
  kernelDirectory: string;
  /** Descriptor (in the child) carrying the compiled seccomp filter. */
  seccompDescriptor: number;
  tmpBytes: number;
  environment: Record<string, string>;
  pythonPath: string;
}

/** Files from the host's /etc that Python and its packages read; nothing else of /etc is visible. */
export const HOST_ETC_FILES = [
  'ld.so.cache',
  'ld.so.conf',
  'ld.so.conf.d',
  'alternatives',
  'localtime',
  'matplotlibrc',
  'mime.types',
  'python3',
  'python3.11',
  'python3.12',
  'python3.13',
  'fonts',
] as const;

/** Synthetic files written by sandcell, replacing the host's. */
export const SYNTHETIC_ETC_FILES = ['passwd', 'group', 'hostname', 'hosts', 'nsswitch.conf', 'resolv.conf'] as const;

export const SANDBOX_UID = 1000;
export const SANDBOX_GID = 1000;
export const SANDBOX_HOSTNAME = 'sandbox';
export const KERNEL_MOUNT = '/opt/sandcell';
export const KERNEL_SCRIPT = 'sandcell_kernel.py';

export function buildBubblewrapArguments(input: BubblewrapArgumentsInput): string[] {
  const args: string[] = [
    // Namespaces: every kind, and no further user namespaces from inside.
    '--unshare-user',
    '--unshare-ipc',
    '--unshare-pid',
    '--unshare-net',
    '--unshare-uts',
    '--unshare-cgroup',
    '--disable-userns',
    '--uid',
    String(SANDBOX_UID),
    '--gid',
    String(SANDBOX_GID),
    '--hostname',
    SANDBOX_HOSTNAME,
    '--new-session',
    '--die-with-parent',
    '--cap-drop',
    'ALL',
    '--seccomp',
    String(input.seccompDescriptor),
    // A read-only, minimal system.
    '--ro-bind',
    '/usr',
    '/usr',
    '--symlink',
    'usr/bin',
    '/bin',
    '--symlink',
    'usr/sbin',
    '/sbin',
    '--symlink',
    'usr/lib',
    '/lib',
    '--symlink',
    'usr/lib64',
    '/lib64',
    '--proc',
    '/proc',
    // Read-only over the sandbox's own /proc. Sysctl values are per reader's namespaces, so this shows the sandbox's.
    '--ro-bind',
    '/proc/sys',
    '/proc/sys',
    '--dev',
    '/dev',
  ];
  for (const name of HOST_ETC_FILES) args.push('--ro-bind-try', `/etc/${name}`, `/etc/${name}`);
  for (const name of SYNTHETIC_ETC_FILES) args.push('--ro-bind', `${input.etcDirectory}/${name}`, `/etc/${name}`);
  args.push(
    '--ro-bind',
    input.kernelDirectory,
    KERNEL_MOUNT,
    // The only writable places: the session's files and a scratch /tmp, both capped.
    '--size',
    String(input.tmpBytes),
    '--tmpfs',
    '/tmp',
    '--bind',
    input.dataDirectory,
    '/mnt/data',
    // bwrap's own root and /dev are tmpfs: make them read-only once everything is mounted.
    '--remount-ro',
    '/dev',
    '--remount-ro',
    '/',
    '--chdir',
    '/mnt/data',
    '--clearenv',
  );
  for (const [name, value] of Object.entries(input.environment)) args.push('--setenv', name, value);
  args.push('--', input.pythonPath, '-I', '-B', `${KERNEL_MOUNT}/${KERNEL_SCRIPT}`);
  return args;
}

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
    USER: 'sandbox',
    LOGNAME: 'sandbox',
    LANG: 'C.UTF-8',
    LC_ALL: 'C.UTF-8',
    TMPDIR: '/tmp',
    TERM: 'dumb',
    MPLBACKEND: 'module://matplotlib_inline.backend_inline',
    MPLCONFIGDIR: '/tmp/.config/matplotlib',
    IPYTHONDIR: '/tmp/.ipython',
    OPENBLAS_NUM_THREADS: threads,
    OMP_NUM_THREADS: threads,
    MKL_NUM_THREADS: threads,
    ...options.extra,
    SANDCELL_KERNEL_OPTIONS: JSON.stringify(options.kernelOptions),
  };
}
