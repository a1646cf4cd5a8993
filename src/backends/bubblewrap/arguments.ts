/**
 * The bwrap command line for one sandbox. Pure: everything it needs is passed
 * in, so the isolation flags can be read (and unit-tested) in one place.
 *
 * What the sandbox sees of the host is decided here too: the options travel
 * through a pipe (`--args`), so bwrap's command line on the host holds only
 * that and the command, and the sandbox's /proc/1/cmdline only the command;
 * synthetic files are copies from descriptors, so no host path of them shows
 * in mountinfo; /proc/cmdline and /usr/local are empty. Only /mnt/data (also at /home/user and /workspace) and /tmp are
 * writable: /dev is remounted read-only, /dev/shm with it, so Python's
 * multiprocessing locks are unavailable (joblib falls back to serial).
 */
import path from 'node:path';
import { SandboxStartError } from '../../errors.js';
import { INGRESS_SOCKET_MOUNT } from '../../network/ingress.js';
import { GATE_SOCKET_MOUNT } from '../../network/sandbox-proxy.js';
import {
  HOME_USER_MOUNT,
  KERNEL_MOUNT,
  kernelFiles,
  SANDBOX_GID,
  SANDBOX_HOSTNAME,
  SANDBOX_UID,
  SUPERVISOR_PYTHON_FLAGS,
  SUPERVISOR_SCRIPT,
  WORKSPACE_MOUNT,
} from '../sandbox-environment.js';
import type { SandboxMount } from '../spec.js';

export interface BubblewrapArgumentsInput {
  /** Host directory holding the session's files, mounted at /mnt/data. */
  dataDirectory: string;
  /**
   * Files copied into the sandbox read-only from descriptors (in the child):
   * path inside → descriptor. Copies, not binds, so no host path of them shows
   * in the sandbox's /proc/self/mountinfo (see sandboxFileSources).
   */
  files: Record<string, number>;
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
  /** The host path of the session's network gate socket, bound in at GATE_SOCKET_MOUNT; absent, no network. */
  gateSocket?: string;
  /** The host path of the session's ingress socket, bound in at INGRESS_SOCKET_MOUNT; absent, its ports cannot be reached. */
  ingressSocket?: string;
  /** Host directories bound in (volumes), after the session's own files. */
  mounts?: SandboxMount[];
}

/** Files from the host's /etc that the kernels and their packages read (R's configuration is /etc/R); nothing else of /etc is visible. */
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
  'R',
] as const;

/** Synthetic files written by sandcell, replacing the host's. */
export const SYNTHETIC_ETC_FILES = ['passwd', 'group', 'hostname', 'hosts', 'nsswitch.conf', 'resolv.conf'] as const;

/**
 * The host files whose content the sandbox gets as read-only files: the
 * synthetic /etc files, the supervisor and the kernels, and an empty /proc/cmdline (the host's
 * boot arguments are none of the sandbox's business).
 */
export function sandboxFileSources(runtime: { etcDirectory: string; kernelDirectory: string }): Record<string, string> {
  const sources: Record<string, string> = {};
  for (const name of SYNTHETIC_ETC_FILES) sources[`/etc/${name}`] = path.join(runtime.etcDirectory, name);
  for (const name of kernelFiles()) sources[`${KERNEL_MOUNT}/${name}`] = path.join(runtime.kernelDirectory, name);
  sources['/proc/cmdline'] = '/dev/null';
  return sources;
}

/**
 * bwrap's command line in two parts. Every option goes through a descriptor
 * (`--args FD`): bwrap's own argument list is what the sandbox reads in
 * /proc/1/cmdline, so only the command, with paths inside the sandbox, is left
 * on it.
 */
export interface BubblewrapCommandLine {
  options: string[];
  command: string[];
}

export function buildBubblewrapArguments(input: BubblewrapArgumentsInput): BubblewrapCommandLine {
  const systemRoot = input.systemRoot ?? '/';
  const args: string[] = [
    // Namespaces: every kind, and no further user namespaces from inside.
    '--unshare-user',
    '--unshare-ipc',
    '--unshare-pid',
    // The supervisor is the PID namespace's init, not bwrap's reaper: the kernel delivers to an init only the
    // signals it handles, so the code it runs cannot kill it (SIGKILL, SIGSTOP, kill(-1) pass it by).
    '--as-pid-1',
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
    // The host's (or the runtime's) /usr/local holds whatever was installed by hand: none of it is the sandbox's.
    '--size',
    String(EMPTY_DIRECTORY_BYTES),
    '--tmpfs',
    '/usr/local',
    '--remount-ro',
    '/usr/local',
  ];
  for (const name of HOST_ETC_FILES) args.push('--ro-bind-try', path.join(systemRoot, 'etc', name), `/etc/${name}`);
  for (const [target, descriptor] of Object.entries(input.files)) {
    // A file of bwrap's own root (read-only with it, below) costs no mounts; only /proc/cmdline, over a file of
    // procfs, needs a bind of its own. Either way a copy: no host path of it shows in mountinfo.
    const copy = target.startsWith('/proc/') ? '--ro-bind-data' : '--file';
    args.push('--perms', '0444', copy, String(descriptor), target);
  }
  args.push(
    // The only writable places: the session's files and a scratch /tmp, both capped.
    '--size',
    String(input.tmpBytes),
    '--tmpfs',
    '/tmp',
    '--bind',
    input.dataDirectory,
    '/mnt/data',
    // The same files at E2B's working directory (its SDKs' paths are /home/user/…) and at /workspace.
    '--bind',
    input.dataDirectory,
    HOME_USER_MOUNT,
    '--bind',
    input.dataDirectory,
    WORKSPACE_MOUNT,
  );
  // Internet access is this socket alone (to the session's gate): the network namespace keeps only loopback.
  if (input.gateSocket !== undefined) args.push('--bind', input.gateSocket, GATE_SOCKET_MOUNT);
  // The host's way in to the ports something listens on inside: the supervisor connects out to this socket.
  if (input.ingressSocket !== undefined) args.push('--bind', input.ingressSocket, INGRESS_SOCKET_MOUNT);
  // Volumes: bwrap makes each mount point in its root (or in the session's files, below /home/user).
  for (const mount of input.mounts ?? [])
    args.push(mount.readOnly ? '--ro-bind' : '--bind', mount.source, mount.target);
  args.push(
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
  return {
    options: args,
    command: [input.pythonPath, ...SUPERVISOR_PYTHON_FLAGS, `${KERNEL_MOUNT}/${SUPERVISOR_SCRIPT}`],
  };
}

/** The size of the empty read-only tmpfs over /usr/local: one page is all it needs. */
const EMPTY_DIRECTORY_BYTES = 4096;

/** The options as `--args` reads them: each one followed by a NUL. */
export function encodeArguments(options: string[]): Buffer {
  const broken = options.find((option) => option.includes('\0'));
  if (broken !== undefined) throw new SandboxStartError(`A sandbox option holds a NUL byte: ${JSON.stringify(broken)}`);
  return Buffer.from(options.map((option) => `${option}\0`).join(''));
}
