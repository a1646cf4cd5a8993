/**
 * The bwrap command line for one sandbox. Pure: everything it needs is passed
 * in, so the isolation flags can be read (and unit-tested) in one place.
 */
import path from 'node:path';
import { KERNEL_MOUNT, KERNEL_SCRIPT, SANDBOX_GID, SANDBOX_HOSTNAME, SANDBOX_UID } from '../sandbox-environment.js';

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
  /**
   * Where /usr and the few /etc files come from: the host (`/`), or a runtime
   * root filesystem built by `sandcell image build --backend bubblewrap`.
   */
  systemRoot?: string;
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

export function buildBubblewrapArguments(input: BubblewrapArgumentsInput): string[] {
  const systemRoot = input.systemRoot ?? '/';
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
    path.join(systemRoot, 'usr'),
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
  for (const name of HOST_ETC_FILES) args.push('--ro-bind-try', path.join(systemRoot, 'etc', name), `/etc/${name}`);
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
