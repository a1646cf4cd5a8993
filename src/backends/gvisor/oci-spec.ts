/**
 * The OCI runtime spec (config.json) of one gVisor sandbox. Pure: everything
 * it needs is passed in, so what the sandbox sees can be read (and
 * unit-tested) in one place, as bubblewrap's arguments.ts is for bwrap.
 *
 * The root is a skeleton made for this sandbox alone (bundle.ts): read-only,
 * with the system's /usr, the few /etc files the kernels read and the
 * synthetic ones, sandcell's kernel files, all bound read-only. Only
 * /mnt/data (also at /home/user and /workspace, links to it) and a capped /tmp are
 * writable. gVisor's Sentry gives the sandbox its own /proc, /sys and /dev,
 * none of them the host's. No capabilities, no new privileges, and the
 * session's host uid as the sandbox's user, so its files on the host are the
 * session's alone.
 */
import path from 'node:path';
import { SECCOMP_LOADER } from '../../kernel/index.js';
import { INGRESS_SOCKET_MOUNT } from '../../network/ingress.js';
import { GATE_SOCKET_MOUNT } from '../../network/sandbox-proxy.js';
import {
  DATA_MOUNT,
  HOME_USER_MOUNT,
  KERNEL_MOUNT,
  SANDBOX_HOSTNAME,
  SUPERVISOR_PYTHON_FLAGS,
  SUPERVISOR_SCRIPT,
  WORKSPACE_MOUNT,
} from '../sandbox-environment.js';
import type { SandboxMount } from '../spec.js';

export interface OciSpecInput {
  /** The sandbox's own skeleton root directory (bundle.ts). */
  rootDirectory: string;
  /** Where /usr and the host's /etc files come from: `/` or a runtime root filesystem. */
  systemRoot: string;
  /** The host /etc entries of bubblewrap's HOST_ETC_FILES that exist under systemRoot (bound only when present). */
  presentEtcFiles: readonly string[];
  /** Files bound in read-only: path inside → host path. */
  files: Record<string, string>;
  dataDirectory: string;
  tmpBytes: number;
  environment: Record<string, string>;
  /** The command; by default the supervisor on `pythonPath`. */
  command: string[];
  uid: number;
  gid: number;
  gateSocket?: string;
  ingressSocket?: string;
  mounts?: SandboxMount[];
}

interface OciMount {
  destination: string;
  type: string;
  source: string;
  options?: string[];
}

/** sandcell's compiled seccomp filter, copied beside the kernel files (host-preparation.ts). */
export const SECCOMP_FILTER_NAME = 'seccomp.bpf';
const SECCOMP_FILTER_MOUNT = `${KERNEL_MOUNT}/${SECCOMP_FILTER_NAME}`;

/**
 * The supervisor's command line on `pythonPath`, under sandcell's seccomp filter: the Sentry keeps seccomp
 * filters as Linux does, so the filter every other backend stacks (which, among others, refuses setting
 * another process's limits) holds here too, loaded by seccomp_loader.py before it execs the supervisor.
 */
export function supervisorCommand(pythonPath: string): string[] {
  return [
    pythonPath,
    '-I',
    '-B',
    `${KERNEL_MOUNT}/${SECCOMP_LOADER}`,
    SECCOMP_FILTER_MOUNT,
    pythonPath,
    ...SUPERVISOR_PYTHON_FLAGS,
    `${KERNEL_MOUNT}/${SUPERVISOR_SCRIPT}`,
  ];
}

const bind = (source: string, destination: string, readOnly: boolean): OciMount => ({
  destination,
  type: 'bind',
  source,
  options: ['rbind', readOnly ? 'ro' : 'rw', 'nosuid', 'nodev'],
});

export function buildOciSpec(input: OciSpecInput): Record<string, unknown> {
  const mounts: OciMount[] = [
    { destination: '/proc', type: 'proc', source: 'proc' },
    { destination: '/dev', type: 'tmpfs', source: 'tmpfs', options: ['nosuid', 'mode=755'] },
    bind(path.join(input.systemRoot, 'usr'), '/usr', true),
    // The host's (or the runtime's) /usr/local holds whatever was installed by hand: none of it is the sandbox's.
    { destination: '/usr/local', type: 'tmpfs', source: 'tmpfs', options: ['ro', 'size=4096'] },
  ];
  for (const name of input.presentEtcFiles)
    mounts.push(bind(path.join(input.systemRoot, 'etc', name), `/etc/${name}`, true));
  for (const [target, source] of Object.entries(input.files)) mounts.push(bind(source, target, true));
  mounts.push(
    {
      destination: '/tmp',
      type: 'tmpfs',
      source: 'tmpfs',
      options: ['nosuid', 'nodev', `size=${input.tmpBytes}`, 'mode=1777'],
    },
    // /home/user and /workspace are links to it in the skeleton (SKELETON_LINKS): each bind of one host
    // directory would be a mount of its own in the Sentry, the same files under other device and inode numbers.
    bind(input.dataDirectory, DATA_MOUNT, false),
  );
  if (input.gateSocket !== undefined) mounts.push(bind(input.gateSocket, GATE_SOCKET_MOUNT, false));
  if (input.ingressSocket !== undefined) mounts.push(bind(input.ingressSocket, INGRESS_SOCKET_MOUNT, false));
  for (const mount of input.mounts ?? []) mounts.push(bind(mount.source, mount.target, mount.readOnly));
  const none: string[] = [];
  return {
    ociVersion: '1.0.2',
    process: {
      terminal: false,
      user: { uid: input.uid, gid: input.gid, additionalGids: [] },
      args: input.command,
      env: Object.entries(input.environment).map(([name, value]) => `${name}=${value}`),
      cwd: DATA_MOUNT,
      capabilities: { bounding: none, effective: none, inheritable: none, permitted: none, ambient: none },
      noNewPrivileges: true,
    },
    root: { path: input.rootDirectory, readonly: true },
    hostname: SANDBOX_HOSTNAME,
    mounts,
    linux: {
      namespaces: ['pid', 'network', 'ipc', 'uts', 'mount'].map((type) => ({ type })),
      maskedPaths: [],
      readonlyPaths: ['/proc/sys'],
    },
  };
}

/** The directories and links of a skeleton root: mount points, and the merged-/usr links. */
export const SKELETON_DIRECTORIES = [
  'usr',
  'etc',
  'proc',
  'dev',
  'sys',
  'tmp',
  'mnt/data',
  'home',
  'opt/sandcell',
  'run/sandcell',
];
export const SKELETON_LINKS: Record<string, string> = {
  bin: 'usr/bin',
  sbin: 'usr/sbin',
  lib: 'usr/lib',
  lib64: 'usr/lib64',
  [HOME_USER_MOUNT.slice(1)]: `..${DATA_MOUNT}`,
  [WORKSPACE_MOUNT.slice(1)]: DATA_MOUNT.slice(1),
};
