/**
 * The bubblewrap backend (the default): each sandbox is a bwrap process with
 * every namespace unshared, a seccomp filter, no capabilities, a read-only
 * minimal system and capped writable /mnt/data and /tmp. As root, each
 * session's sandboxes run as its own leased, unprivileged host uid, inside
 * their own cgroups.
 */

import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { access, type FileHandle, open } from 'node:fs/promises';
import path from 'node:path';
import type { Writable } from 'node:stream';
import { promisify } from 'node:util';
import { BackendUnavailableError, SandboxStartError } from '../../errors.js';
import { runtimeRootfsDirectory } from '../../image/recipe.js';
import { onceUntilFailure } from '../../internal/once-until-failure.js';
import { SANDBOX_OOM_SCORE_ADJ } from '../../internal/oom-score.js';
import { DEFAULT_PRELOAD_MODULES, kernelFiles } from '../../kernel/index.js';
import { certificateBundle } from '../../network/certificate-bundle.js';
import { CERTIFICATE_BUNDLE, forwarderOptions, proxyEnvironment } from '../../network/sandbox-proxy.js';
import { sharedDataBudget } from '../data-budget.js';
import { DEFAULT_LIMITS, dataCapacityBytes, type SandboxLimits } from '../limits.js';
import { KERNEL_MOUNT, sandboxEnvironment } from '../sandbox-environment.js';
import type {
  CreateVolumeOptions,
  Sandbox,
  SandboxBackend,
  SandboxExit,
  SandboxUsage,
  StartSandboxOptions,
} from '../spec.js';
import { checkUidRangeIsFree, resolveUidRange, type UidLease, UidLeases, type UidRange } from '../uid-leases.js';
import { buildBubblewrapArguments, encodeArguments, sandboxFileSources } from './arguments.js';
import { type CgroupLayout, detectCgroups, SandboxCgroup, SessionCgroup, sweepStaleCgroups } from './cgroup.js';
import { cgroupUsage, exitReason, ForkedSandbox } from './forked-sandbox.js';
import {
  defaultCacheDirectory,
  defaultRuntimeDirectory,
  ensureSeccompFilter,
  isRoot,
  prepareRuntime,
  type RuntimeLayout,
  which,
} from './host-setup.js';
import { BubblewrapVolume, sweepStaleVolumes } from './volume.js';
import { sweepStaleTemplateSockets, Zygote } from './zygote.js';

const execFileAsync = promisify(execFile);

/** The child's descriptors beyond stdio: the seccomp filter, bwrap's options (`--args`), then files copied in. */
const SECCOMP_DESCRIPTOR = 3;
const OPTIONS_DESCRIPTOR = 4;
const FIRST_FILE_DESCRIPTOR = 5;

export interface BubblewrapBackendOptions {
  /** The bwrap executable. @default `bwrap` on PATH (env SANDCELL_BWRAP) */
  bwrapPath?: string;
  /** Python inside the sandbox. @default `/usr/bin/python3` */
  pythonPath?: string;
  /**
   * Host uids leased to sessions when sandcell runs as root, one each, as
   * `START-END` or a range; no account or subordinate id range may overlap it.
   * @default 1974206464-1974271999 (DEFAULT_UID_RANGE; env SANDCELL_UID_RANGE)
   */
  uidRange?: string | UidRange;
  /** Where volumes and runtime files live. @default `/run/sandcell` as root, else `$XDG_RUNTIME_DIR/sandcell` (env SANDCELL_RUNTIME_DIR) */
  runtimeDirectory?: string;
  /** Where the compiled seccomp filter is cached. @default `~/.cache/sandcell` (env SANDCELL_CACHE_DIR) */
  cacheDirectory?: string;
  /** Use cgroups for memory/pids/CPU when the host lets us. @default 'auto' */
  cgroups?: 'auto' | 'off';
  /**
   * Run on a runtime root filesystem instead of the host's /usr: a directory,
   * or `runtime` for the one `sandcell image build --backend bubblewrap` built
   * for this version of sandcell. @default the host (env SANDCELL_ROOTFS)
   */
  rootfs?: string;
  /**
   * How a session's sandbox starts: `fork`, from a warm template of its root
   * filesystem (as root only: each fork becomes its session's host uid), or
   * `exec`, a new bwrap and Python each time. `auto` forks where it can and
   * execs where it cannot (see forkTemplate). @default 'auto' (env SANDCELL_START)
   */
  start?: StartMode;
}

export type StartMode = 'auto' | 'fork' | 'exec';

/** What the backend found about the host; `doctor` prints it. */
export interface BubblewrapHostReport {
  bwrapPath: string;
  /** As root: where each session's host uid comes from. Without root, sandboxes run as the caller. */
  uidLeases?: UidLeases;
  cgroups?: CgroupLayout;
  seccompFilter: string;
  runtime: RuntimeLayout;
  /** The root filesystem /usr comes from: `/` (the host) or a runtime root filesystem. */
  systemRoot: string;
}

export class BubblewrapBackend implements SandboxBackend {
  readonly specificationVersion = 'v1' as const;
  readonly name = 'bubblewrap';
  private readonly prepareOnce = onceUntilFailure(() => this.doPrepare());
  private readonly rooted = new Map<string, BubblewrapBackend>();
  /** This root's session template while it boots. */
  private template?: Promise<Zygote>;
  /** The template, once it is ready (`auto` forks only from a ready one, and never waits for one). */
  private readyTemplate?: Zygote;
  /** Sandboxes started so far: in `auto`, a process that starts one (a CLI run) never pays for a template. */
  private starts = 0;
  /** Why forking was given up (in `auto`), for doctor. */
  private forkUnavailable?: string;

  constructor(private readonly options: BubblewrapBackendOptions = {}) {}

  /** The same backend on another root filesystem (an environment's), made once per directory. */
  withRoot(root: string): BubblewrapBackend {
    let backend = this.rooted.get(root);
    if (!backend) {
      backend = new BubblewrapBackend({ ...this.options, rootfs: root });
      this.rooted.set(root, backend);
    }
    return backend;
  }

  ensureAvailable(): Promise<void> {
    return this.prepare().then(() => undefined);
  }

  /** Host facts after preparation (creates the runtime directory and seccomp filter when missing). */
  report(): Promise<BubblewrapHostReport> {
    return this.prepare();
  }

  private prepare(): Promise<BubblewrapHostReport> {
    return this.prepareOnce();
  }

  private async doPrepare(): Promise<BubblewrapHostReport> {
    const bwrapPath = which(this.options.bwrapPath ?? process.env.SANDCELL_BWRAP ?? 'bwrap');
    if (!bwrapPath) {
      throw new BackendUnavailableError(
        'bubblewrap is not installed. Install it with `apt-get install bubblewrap` (or run `npm run setup`).',
      );
    }
    let uidLeases: UidLeases | undefined;
    if (isRoot()) {
      const range = resolveUidRange(this.options.uidRange);
      await checkUidRangeIsFree(range);
      uidLeases = new UidLeases({ range });
      await uidLeases.prepare();
    }
    const systemRoot = await resolveSystemRoot(this.options.rootfs ?? process.env.SANDCELL_ROOTFS);
    const runtime = await prepareRuntime(this.options.runtimeDirectory ?? defaultRuntimeDirectory());
    const seccompFilter = await ensureSeccompFilter(this.options.cacheDirectory ?? defaultCacheDirectory());
    const cgroups = this.options.cgroups === 'off' || !isRoot() ? undefined : await detectCgroups();
    if (cgroups) await sweepStaleCgroups(cgroups);
    await sweepStaleVolumes(runtime.sessionsDirectory, uidLeases !== undefined);
    await sweepStaleTemplateSockets(runtime.root);
    await this.checkUserNamespaces(bwrapPath, uidLeases);
    return { bwrapPath, uidLeases, cgroups, seccompFilter, runtime, systemRoot };
  }

  /** A trial bwrap, as the uid a sandbox would have. */
  private async checkUserNamespaces(bwrapPath: string, uidLeases: UidLeases | undefined): Promise<void> {
    const trialUid = await uidLeases?.acquire('bubblewrap trial run');
    try {
      await execFileAsync(
        bwrapPath,
        [
          '--unshare-user',
          '--ro-bind',
          '/usr',
          '/usr',
          '--symlink',
          'usr/lib',
          '/lib',
          '--symlink',
          'usr/lib64',
          '/lib64',
          '--',
          '/usr/bin/true',
        ],
        {
          timeout: 10_000,
          cwd: '/',
          ...(trialUid ? { uid: trialUid.uid, gid: trialUid.gid } : {}),
        },
      );
    } catch (error) {
      const detail = (error as { stderr?: string }).stderr?.trim() || String(error);
      if (!/namespace|permission|not permitted/i.test(detail)) {
        throw new BackendUnavailableError(`bubblewrap failed a trial run: ${detail}. Run \`sandcell doctor\`.`, {
          cause: error,
        });
      }
      throw new BackendUnavailableError(
        `bubblewrap cannot create a user namespace here (${detail}). Enable unprivileged user namespaces: ` +
          '`sysctl -w kernel.unprivileged_userns_clone=1` (Debian) or `sysctl -w user.max_user_namespaces=15000`, ' +
          'and on Ubuntu 24.04+ `sysctl -w kernel.apparmor_restrict_unprivileged_userns=0`.',
        { cause: error },
      );
    } finally {
      await trialUid?.release();
    }
  }

  /** The session's storage, which holds the session's host uid (as root) for its whole life. */
  async createVolume(options: CreateVolumeOptions): Promise<BubblewrapVolume> {
    const prepared = await this.prepare();
    const owner = await prepared.uidLeases?.acquire(`bubblewrap session ${options.sessionId}`);
    // The session's memory budget: every kernel it starts, and its files, stay within memoryBytes together.
    const memoryBudget = prepared.cgroups
      ? await SessionCgroup.create(
          prepared.cgroups,
          `sandcell-${process.pid}-${options.sessionId.slice(0, 16)}-${randomUUID().slice(0, 6)}`,
          options.limits.memoryBytes,
        ).catch(async (error) => {
          await owner?.release();
          throw error;
        })
      : undefined;
    try {
      return await BubblewrapVolume.create({
        sessionsDirectory: prepared.runtime.sessionsDirectory,
        sessionId: options.sessionId,
        dataBytes: dataCapacityBytes(options.limits),
        owner,
        memoryBudget,
        dataBudget: sharedDataBudget(),
      });
    } catch (error) {
      await memoryBudget?.remove();
      await owner?.release();
      throw error;
    }
  }

  async start(options: StartSandboxOptions): Promise<Sandbox> {
    const prepared = await this.prepare();
    if (!(options.volume instanceof BubblewrapVolume)) {
      throw new SandboxStartError('The bubblewrap backend needs a volume it created (createVolume).');
    }
    options.signal?.throwIfAborted();
    const limits = options.limits;
    const cgroup = prepared.cgroups
      ? await SandboxCgroup.create(
          prepared.cgroups,
          `sandcell-${process.pid}-${randomUUID().slice(0, 8)}`,
          limits,
          options.volume.memoryBudget,
        )
      : undefined;
    try {
      const network = options.network;
      const kernelOptions = {
        ...options.kernelOptions,
        limits: rlimitsFor(limits, cgroup),
        ...(network ? { network: forwarderOptions() } : {}),
      };
      const extra = network ? { ...options.environment, ...proxyEnvironment() } : options.environment;
      const environment = sandboxEnvironment({ kernelOptions, threads: limits.cpus, extra });
      const bundle = network ? await certificateBundle(prepared.systemRoot, network.trustedCertificates) : undefined;
      const owner = options.volume.owner;
      if (!owner && this.startMode() === 'fork') {
        throw new BackendUnavailableError(
          "Forked sessions (SANDCELL_START=fork) need sandcell to run as root: each fork becomes its session's own host uid. Use SANDCELL_START=auto or exec.",
        );
      }
      const template = owner ? await this.forkTemplate(prepared, options.kernelOptions) : undefined;
      if (template && owner) {
        const files = sandboxFileSources(prepared.runtime);
        for (const name of kernelFiles()) delete files[`${KERNEL_MOUNT}/${name}`];
        const forking = template.fork({
          uid: owner.uid,
          gid: owner.gid,
          cgroupProcs: cgroup?.procsFiles ?? [],
          dataDirectory: options.volume.directory,
          tmpBytes: limits.tmpBytes,
          ...(network ? { gateSocket: network.socketPath } : {}),
          environment,
          files,
          ...(bundle !== undefined ? { contents: { [CERTIFICATE_BUNDLE]: Buffer.from(bundle) } } : {}),
        });
        try {
          return await ForkedSandbox.started(forking, cgroup);
        } catch (error) {
          if (this.startMode() !== 'auto' || !(error instanceof SandboxStartError)) throw error;
          // A fork that fails costs this start its speed, not its session: it starts by exec, and so does every
          // later one (a fork that fails here would fail again, and each try would add its cost); doctor says why.
          this.forkUnavailable = `a forked session could not start: ${error.message}`;
          this.readyTemplate?.close();
          // Whatever of the fork got as far as the cgroups is not the exec's to share them with.
          await cgroup?.killAll();
        }
      }
      return await this.execute(prepared, options, cgroup, environment, bundle);
    } catch (error) {
      await cgroup?.remove();
      throw error;
    }
  }

  private startMode(): StartMode {
    const mode = this.options.start ?? process.env.SANDCELL_START ?? 'auto';
    if (mode !== 'auto' && mode !== 'fork' && mode !== 'exec') {
      throw new BackendUnavailableError(`SANDCELL_START must be auto, fork or exec (got ${JSON.stringify(mode)}).`);
    }
    return mode;
  }

  /**
   * The session template to fork from, or undefined to exec. `fork` starts
   * the template at first use (and again after it died) and waits for it.
   * `auto` starts it at the second start of the process (one start alone, a
   * CLI run, is cheaper by exec than a template's imports) and execs until it
   * is ready; a template that cannot start makes it exec from then on, and
   * doctor says why.
   */
  private async forkTemplate(
    prepared: BubblewrapHostReport,
    kernelOptions: Record<string, unknown> | undefined,
  ): Promise<Zygote | undefined> {
    const mode = this.startMode();
    if (mode === 'exec' || this.forkUnavailable !== undefined) return undefined;
    this.starts++;
    if (this.readyTemplate?.alive) return this.readyTemplate;
    if (mode === 'fork') return this.startTemplate(prepared, kernelOptions);
    if (this.starts >= 2) this.startTemplate(prepared, kernelOptions).catch(() => undefined);
    return undefined;
  }

  /** Starts a template, or gives the one booting (concurrent starts share it). */
  private startTemplate(
    prepared: BubblewrapHostReport,
    kernelOptions: Record<string, unknown> | undefined,
  ): Promise<Zygote> {
    if (this.template) return this.template;
    const warmImports = Array.isArray(kernelOptions?.warmImports) ? (kernelOptions.warmImports as string[]) : [];
    const template = Zygote.start({
      bwrapPath: prepared.bwrapPath,
      systemRoot: prepared.systemRoot,
      runtime: prepared.runtime,
      seccompFilter: prepared.seccompFilter,
      environment: sandboxEnvironment({ kernelOptions: {}, threads: DEFAULT_LIMITS.cpus }),
      warmModules: [...new Set([...DEFAULT_PRELOAD_MODULES, ...warmImports])],
    });
    this.template = template;
    template.then(
      (ready) => {
        this.template = undefined;
        this.readyTemplate = ready;
      },
      (error: unknown) => {
        this.template = undefined;
        if (this.startMode() === 'auto') this.forkUnavailable = error instanceof Error ? error.message : String(error);
      },
    );
    return template;
  }

  /** How this backend's sessions start, and why not by fork when they do not (for doctor). */
  startPath(): { mode: 'fork' | 'exec'; reason?: string } {
    const mode = this.startMode();
    if (mode === 'exec') return { mode: 'exec', reason: 'SANDCELL_START=exec' };
    if (!isRoot()) return { mode: 'exec', reason: "forking needs root (each fork becomes its session's own host uid)" };
    if (this.forkUnavailable !== undefined) return { mode: 'exec', reason: this.forkUnavailable };
    return { mode: 'fork' };
  }

  /** A new bwrap (and Python) for the sandbox: the start without a template. */
  private async execute(
    prepared: BubblewrapHostReport,
    options: StartSandboxOptions,
    cgroup: SandboxCgroup | undefined,
    environment: Record<string, string>,
    bundle: string | undefined,
  ): Promise<Sandbox> {
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
        pythonPath: this.options.pythonPath ?? '/usr/bin/python3',
        systemRoot: prepared.systemRoot,
        ...(network ? { gateSocket: network.socketPath } : {}),
      });
      const encodedOptions = encodeArguments(commandLine.options);
      const bwrap = [prepared.bwrapPath, '--args', String(OPTIONS_DESCRIPTOR), '--', ...commandLine.command];
      const [command, ...commandArguments] = launcher(volume.owner, cgroup, bwrap);
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
}

/** Checks a runtime root filesystem option and returns its directory (`/` for the host). */
async function resolveSystemRoot(option: string | undefined): Promise<string> {
  if (!option || option === '/' || option === 'host') return '/';
  const directory = option === 'runtime' ? runtimeRootfsDirectory() : path.resolve(option);
  const python = path.join(directory, 'usr', 'bin', 'python3');
  if (
    !(await access(python).then(
      () => true,
      () => false,
    ))
  ) {
    throw new BackendUnavailableError(
      option === 'runtime'
        ? `The runtime root filesystem for this version of sandcell is not built (${directory}). Build it with \`sandcell image build --backend bubblewrap\`.`
        : `${directory} is not a root filesystem with Python (${python} is missing). Build one with \`sandcell image build --backend bubblewrap\`.`,
    );
  }
  return directory;
}

/** Limits the kernel applies to itself with setrlimit before user code runs. */
function rlimitsFor(limits: SandboxLimits, cgroup: SandboxCgroup | undefined): Record<string, number> {
  return {
    processes: limits.processes,
    cpuSeconds: limits.cpuSeconds,
    fileSizeBytes: limits.fileSizeBytes,
    openFiles: limits.openFiles,
    // Without a memory cgroup, the address space of each process is the bound.
    ...(cgroup?.limitsMemory ? {} : { addressSpaceBytes: limits.memoryBytes }),
  };
}

/**
 * A tiny shell raises its OOM score to the top (inherited by everything in
 * the sandbox; set as root it is also the floor the sandbox cannot go below),
 * joins the cgroups (before anything forks, so nothing escapes them), then, as
 * root, setpriv drops to the session's host uid; and it execs bwrap.
 */
function launcher(owner: UidLease | undefined, cgroup: SandboxCgroup | undefined, bwrap: string[]): string[] {
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

/** Creates the default backend. Reads environment defaults lazily, when first used. */
export function createBubblewrapBackend(options: BubblewrapBackendOptions = {}): BubblewrapBackend {
  return new BubblewrapBackend(options);
}
