/**
 * A sandbox started by exec (the start without a template): a new bwrap, and
 * Python in it, as a child of ours. A tiny shell launches it, inside the
 * sandbox's cgroups and, as root, as the session's host uid; its descriptors
 * carry the seccomp filter, bwrap's options and the files copied in, and its
 * end is the child's.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { type FileHandle, open } from 'node:fs/promises';
import type { Writable } from 'node:stream';
import { SandboxStartError } from '../../errors.js';
import { SANDBOX_OOM_SCORE_ADJ } from '../../internal/oom-score.js';
import { CERTIFICATE_BUNDLE } from '../../network/sandbox-proxy.js';
import type { Sandbox, SandboxExit, SandboxUsage, StartSandboxOptions } from '../spec.js';
import type { UidLease } from '../uid-leases.js';
import { buildBubblewrapArguments, encodeArguments, sandboxFileSources } from './arguments.js';
import type { SandboxCgroup } from './cgroup.js';
import { cgroupUsage, exitReason } from './forked-sandbox.js';
import type { BubblewrapHostReport } from './host-preparation.js';
import type { BubblewrapVolume } from './volume.js';

/** The child's descriptors beyond stdio: the seccomp filter, bwrap's options (`--args`), then files copied in. */
const SECCOMP_DESCRIPTOR = 3;
const OPTIONS_DESCRIPTOR = 4;
const FIRST_FILE_DESCRIPTOR = 5;

export interface ExecStart {
  prepared: BubblewrapHostReport;
  options: StartSandboxOptions;
  cgroup: SandboxCgroup | undefined;
  /** The sandbox's environment variables. */
  environment: Record<string, string>;
  /** The certificates the sandbox trusts, when it has network access. */
  bundle: string | undefined;
  /** Python inside the sandbox. */
  pythonPath: string;
}

/** A new bwrap (and Python) for the sandbox: the start without a template. */
export async function startByExec({
  prepared,
  options,
  cgroup,
  environment,
  bundle,
  pythonPath,
}: ExecStart): Promise<Sandbox> {
  const volume = options.volume as BubblewrapVolume;
  const network = options.network;
  // Descriptors of the child: 3 the seccomp filter, 4 bwrap's options, then the files copied in.
  const opened: FileHandle[] = [];
  const openForChild = async (file: string) => {
    const handle = await open(file, 'r');
    opened.push(handle);
    return handle.fd;
  };
  try {
    const filter = await openForChild(prepared.seccompFilter);
    const files: Record<string, number> = {};
    const copied: number[] = [];
    for (const [target, source] of Object.entries(sandboxFileSources(prepared.runtime))) {
      files[target] = FIRST_FILE_DESCRIPTOR + copied.length;
      copied.push(await openForChild(source));
    }
    // The certificate bundle goes in through a pipe of its own, after the copied files: it is made per session.
    const bundleDescriptor = FIRST_FILE_DESCRIPTOR + copied.length;
    if (network) files[CERTIFICATE_BUNDLE] = bundleDescriptor;
    const commandLine = buildBubblewrapArguments({
      dataDirectory: volume.directory,
      files,
      seccompDescriptor: SECCOMP_DESCRIPTOR,
      tmpBytes: options.limits.tmpBytes,
      environment,
      pythonPath,
      systemRoot: prepared.systemRoot,
      ...(network ? { gateSocket: network.socketPath } : {}),
      ...(options.ingress ? { ingressSocket: options.ingress.socketPath } : {}),
      ...(options.mounts?.length ? { mounts: options.mounts } : {}),
    });
    const encodedOptions = encodeArguments(commandLine.options);
    const bwrap = [prepared.bwrapPath, '--args', String(OPTIONS_DESCRIPTOR), '--', ...commandLine.command];
    const [command, ...commandArguments] = launchCommand(volume.owner, cgroup, bwrap);
    const child = spawn(command as string, commandArguments, {
      stdio: ['pipe', 'pipe', 'pipe', filter, 'pipe', ...copied, ...(network ? ['pipe' as const] : [])],
      cwd: '/',
      env: { PATH: '/usr/sbin:/usr/bin:/sbin:/bin' },
      // Its own session and process group: a terminal's Ctrl-C (SIGINT to the foreground group) must reach
      // sandcell, which interrupts the code, not bwrap, which would die. --die-with-parent still ties it to us.
      detached: true,
    });
    const optionsPipe = child.stdio[OPTIONS_DESCRIPTOR] as Writable;
    // A bwrap that fails to start, or dies before reading, breaks the pipe: `exited` reports that, not a crash here.
    optionsPipe.on('error', () => undefined);
    optionsPipe.end(encodedOptions);
    if (bundle !== undefined) {
      const bundlePipe = child.stdio[bundleDescriptor] as Writable;
      bundlePipe.on('error', () => undefined);
      bundlePipe.end(bundle);
    }
    return await BubblewrapSandbox.started(child, cgroup);
  } finally {
    await Promise.all(opened.map((file) => file.close()));
  }
}

/**
 * A tiny shell raises its OOM score to the top (inherited by everything in
 * the sandbox; set as root it is also the floor the sandbox cannot go below),
 * joins the cgroups (before anything forks, so nothing escapes them), then, as
 * root, setpriv drops to the session's host uid; and it execs bwrap (or, for
 * gVisor, runsc, which stays root: no owner).
 */
export function launchCommand(
  owner: UidLease | undefined,
  cgroup: SandboxCgroup | undefined,
  bwrap: string[],
): string[] {
  const script =
    `echo ${SANDBOX_OOM_SCORE_ADJ} > /proc/self/oom_score_adj || exit 96; ` +
    'while [ "$1" != -- ]; do echo $$ > "$1" || exit 97; shift; done; shift; exec "$@"';
  const run = owner
    ? ['setpriv', `--reuid=${owner.uid}`, `--regid=${owner.gid}`, '--clear-groups', '--', ...bwrap]
    : bwrap;
  return ['/bin/sh', '-c', script, 'sandcell-launch', ...(cgroup?.procsFiles ?? []), '--', ...run];
}

class BubblewrapSandbox implements Sandbox {
  readonly exited: Promise<SandboxExit>;
  private killedByUs = false;
  private released?: Promise<void>;

  private constructor(
    private readonly child: ChildProcess,
    private readonly cgroup: SandboxCgroup | undefined,
  ) {
    this.exited = new Promise<SandboxExit>((resolve) => {
      child.once('close', async (code, signal) => {
        const oomKills = (await this.cgroup?.oomKills()) ?? 0;
        await this.release();
        resolve({ code, signal, reason: exitReason(code, null, oomKills, this.killedByUs) });
      });
    });
  }

  static async started(child: ChildProcess, cgroup: SandboxCgroup | undefined): Promise<BubblewrapSandbox> {
    await new Promise<void>((resolve, reject) => {
      child.once('spawn', resolve);
      child.once('error', (error) =>
        reject(new SandboxStartError(`Could not start bubblewrap: ${error.message}`, { cause: error })),
      );
    });
    return new BubblewrapSandbox(child, cgroup);
  }

  get input() {
    return this.child.stdin as NonNullable<ChildProcess['stdin']>;
  }

  get output() {
    return this.child.stdout as NonNullable<ChildProcess['stdout']>;
  }

  get diagnostics() {
    return this.child.stderr as NonNullable<ChildProcess['stderr']>;
  }

  private release(): Promise<void> {
    this.released ??= (async () => {
      await this.cgroup?.remove();
    })();
    return this.released;
  }

  async kill(): Promise<SandboxExit> {
    if (this.child.exitCode === null && this.child.signalCode === null) {
      this.killedByUs = true;
      // bwrap dies; --die-with-parent and the PID namespace take every process with it.
      this.child.kill('SIGKILL');
      await this.cgroup?.killAll();
    }
    return this.exited;
  }

  /** OOM kills in the sandbox's memory cgroup since it started (none without one: RLIMIT_AS then bounds memory). */
  async oomKills(): Promise<number> {
    return (await this.cgroup?.oomKills()) ?? 0;
  }

  usage(): Promise<SandboxUsage> {
    return cgroupUsage(this.cgroup);
  }
}
