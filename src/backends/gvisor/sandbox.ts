/**
 * A running gVisor sandbox: `runsc run` as our child, attached, so its stdin
 * and stdout are the supervisor's (runsc hands the descriptors to the
 * sandbox's first process) and its end is the sandbox's. It starts through
 * bubblewrap's launcher, which joins the sandbox's cgroups first: the Sentry,
 * which holds every page the sandbox's processes use, and the gofer are in
 * them, so memory, pids and CPU are bounded on the host.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { SandboxStartError } from '../../errors.js';
import type { SandboxCgroup } from '../bubblewrap/cgroup.js';
import { launchCommand } from '../bubblewrap/exec-sandbox.js';
import { cgroupUsage, exitReason } from '../bubblewrap/forked-sandbox.js';
import type { CheckpointAbout, Sandbox, SandboxExit, SandboxUsage } from '../spec.js';
import type { SandboxBundle } from './bundle.js';
import { checkpointSandbox, deleteSandbox, killSandbox, type RunscHost, runscFlags } from './runsc.js';

export class GvisorSandbox implements Sandbox {
  readonly exited: Promise<SandboxExit>;
  private killedByUs = false;
  private released?: Promise<void>;

  private constructor(
    private readonly child: ChildProcess,
    private readonly host: RunscHost,
    private readonly bundle: SandboxBundle,
    private readonly cgroup: SandboxCgroup | undefined,
    private readonly about: CheckpointAbout,
  ) {
    this.exited = new Promise<SandboxExit>((resolve) => {
      child.once('close', async (code, signal) => {
        const oomKills = (await this.cgroup?.oomKills()) ?? 0;
        await this.release();
        resolve({ code, signal, reason: exitReason(code, null, oomKills, this.killedByUs) });
      });
    });
  }

  /**
   * Starts the bundle's sandbox, or restores one from the checkpoint image in `imageDirectory`; the
   * bundle and the cgroup are the sandbox's from here on.
   */
  static async start(
    host: RunscHost,
    bundle: SandboxBundle,
    cgroup: SandboxCgroup | undefined,
    about: CheckpointAbout,
    imageDirectory?: string,
  ): Promise<GvisorSandbox> {
    const command = imageDirectory === undefined ? ['run'] : ['restore', `--image-path=${imageDirectory}`];
    const runsc = [host.runscPath, ...runscFlags(host), ...command, '--bundle', bundle.directory, bundle.id];
    const [launcher, ...commandArguments] = launchCommand(undefined, cgroup, runsc);
    const child = spawn(launcher as string, commandArguments, {
      stdio: ['pipe', 'pipe', 'pipe'],
      cwd: '/',
      env: { PATH: '/usr/sbin:/usr/bin:/sbin:/bin' },
      // Its own process group: a terminal's Ctrl-C must reach sandcell, which interrupts the code, not runsc.
      detached: true,
    });
    await new Promise<void>((resolve, reject) => {
      child.once('spawn', resolve);
      child.once('error', (error) =>
        reject(new SandboxStartError(`Could not start runsc: ${error.message}`, { cause: error })),
      );
    });
    return new GvisorSandbox(child, host, bundle, cgroup, about);
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
      await deleteSandbox(this.host, this.bundle.id);
      await this.cgroup?.killAll();
      await this.cgroup?.remove();
      await this.bundle.remove();
    })();
    return this.released;
  }

  async kill(): Promise<SandboxExit> {
    if (this.child.exitCode === null && this.child.signalCode === null) {
      this.killedByUs = true;
      // The first process's death ends the sandbox; runsc run's own death takes the Sentry with it, and the
      // cgroup's kill whatever is left.
      await killSandbox(this.host, this.bundle.id);
      // Its end comes within milliseconds; killing the Sentry's processes meanwhile would only slow it.
      if (!(await settlesWithin(this.exited, KILL_SETTLE_MS))) {
        this.child.kill('SIGKILL');
        await this.cgroup?.killAll();
      }
    }
    return this.exited;
  }

  /**
   * runsc's checkpoint of the whole sandbox into `directory`, which ends it. What its restore needs
   * beside the image: the uid its processes run as (their credentials are in the image) and the runsc
   * that wrote it (an image is read only by the runsc version that wrote it).
   */
  async checkpoint(directory: string): Promise<CheckpointAbout> {
    this.killedByUs = true;
    await checkpointSandbox(this.host, this.bundle.id, directory);
    await this.exited;
    return { ...this.about };
  }

  async oomKills(): Promise<number> {
    return (await this.cgroup?.oomKills()) ?? 0;
  }

  usage(): Promise<SandboxUsage> {
    return cgroupUsage(this.cgroup);
  }
}

/** How long a sandbox sent SIGKILL through runsc has to end before its processes are killed on the host. */
const KILL_SETTLE_MS = 2_000;

function settlesWithin(promise: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<boolean>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
  });
  return Promise.race([promise.then(() => true), late]).finally(() => clearTimeout(timer));
}
