/**
 * Control groups for memory, process count and CPU, on cgroup v2 or v1,
 * whichever the host offers and lets us write. Each session has a memory
 * cgroup holding its budget (kernel memory and the tmpfs pages of /mnt/data,
 * which stay charged to it after a kernel dies); each kernel start gets its
 * own cgroups inside it, for its processes, pids and CPU, and for counting
 * its OOM kills. When no cgroup is usable the sandbox falls back to rlimits
 * (see the kernel's _apply_rlimits).
 */
import { readFileSync } from 'node:fs';
import { mkdir, readFile, rmdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { type MountEntry, readMountInfo } from '../../internal/mount-info.js';
import { sweepDeadOwnersEntries } from '../../internal/process-alive.js';
import { CGROUP_REMOVAL_MS, removeCgroupTree } from '../cgroup-files.js';
import type { SandboxLimits } from '../limits.js';

export type CgroupController = 'memory' | 'pids' | 'cpu';

export interface CgroupLayout {
  version: 1 | 2;
  /** Directory under which sandcell creates one cgroup per sandbox, per controller (v2: one entry). */
  parents: Partial<Record<CgroupController, string>>;
}

function ownCgroups(): Map<string, string> {
  const own = new Map<string, string>();
  for (const line of readFileSync('/proc/self/cgroup', 'utf8').trim().split('\n')) {
    const [, controllers = '', cgroupPath = '/'] = line.split(':');
    own.set(controllers, cgroupPath);
  }
  return own;
}

function hostPath(mount: MountEntry, cgroupPath: string): string | undefined {
  const relative = path.posix.relative(mount.root, cgroupPath);
  if (relative.startsWith('..')) return undefined;
  return path.join(mount.mountPoint, relative);
}

async function probeWritable(directory: string): Promise<boolean> {
  const probe = path.join(directory, `sandcell-probe-${process.pid}`);
  try {
    await mkdir(probe);
    await rmdir(probe);
    return true;
  } catch {
    return false;
  }
}

/** Finds where sandcell may create cgroups; undefined when it may not. */
export async function detectCgroups(): Promise<CgroupLayout | undefined> {
  let mounts: MountEntry[];
  let own: Map<string, string>;
  try {
    mounts = readMountInfo();
    own = ownCgroups();
  } catch {
    return undefined;
  }
  // cgroup v1: one hierarchy per controller.
  const parents: CgroupLayout['parents'] = {};
  for (const controller of ['memory', 'pids', 'cpu'] as const) {
    const mount = mounts.find((entry) => entry.type === 'cgroup' && entry.superOptions.includes(controller));
    const ownPath = [...own.entries()].find(([controllers]) => controllers.split(',').includes(controller))?.[1];
    if (!mount || ownPath === undefined) continue;
    const directory = hostPath(mount, ownPath);
    if (directory && (await probeWritable(directory))) parents[controller] = directory;
  }
  if (parents.memory) return { version: 1, parents };
  // cgroup v2: a delegated subtree in which memory and pids are enabled for children: our own cgroup, or
  // SANDCELL_CGROUP_PARENT (set by the container image's entrypoint, which moved the server into a leaf beside it).
  const unified = mounts.find((entry) => entry.type === 'cgroup2');
  const ownPath = own.get('');
  if (!unified || ownPath === undefined) return undefined;
  const directory = process.env.SANDCELL_CGROUP_PARENT ?? hostPath(unified, ownPath);
  if (!directory) return undefined;
  try {
    const available = (await readFile(path.join(directory, 'cgroup.controllers'), 'utf8')).trim().split(/\s+/);
    if (!available.includes('memory')) return undefined;
    const wanted = ['memory', 'pids', 'cpu'].filter((name) => available.includes(name));
    await writeFile(path.join(directory, 'cgroup.subtree_control'), wanted.map((name) => `+${name}`).join(' '));
    if (!(await probeWritable(directory))) return undefined;
    return { version: 2, parents: { memory: directory } };
  } catch {
    // Typically "no internal processes": our own cgroup holds processes, so it cannot delegate.
    return undefined;
  }
}

/**
 * A session's memory budget: `memoryBytes` (and no swap beyond it) for every
 * kernel of the session together with the files in /mnt/data. It lives as
 * long as the volume; kernels come and go inside it.
 */
export class SessionCgroup {
  private constructor(
    private readonly layout: CgroupLayout,
    readonly directory: string,
  ) {}

  static async create(layout: CgroupLayout, name: string, memoryBytes: number): Promise<SessionCgroup | undefined> {
    if (!layout.parents.memory) return undefined;
    const cgroup = new SessionCgroup(layout, path.join(layout.parents.memory, name));
    const memory = String(Math.floor(memoryBytes));
    await mkdir(cgroup.directory);
    try {
      if (layout.version === 1) {
        await writeFile(path.join(cgroup.directory, 'memory.limit_in_bytes'), memory);
        await writeFile(path.join(cgroup.directory, 'memory.memsw.limit_in_bytes'), memory).catch(() => undefined);
      } else {
        await writeFile(path.join(cgroup.directory, 'memory.max'), memory);
        await writeFile(path.join(cgroup.directory, 'memory.swap.max'), '0').catch(() => undefined);
        // Kernel cgroups inside get the controllers their parent has.
        const available = (await readFile(path.join(layout.parents.memory, 'cgroup.subtree_control'), 'utf8'))
          .trim()
          .split(/\s+/)
          .filter((name) => ['memory', 'pids', 'cpu'].includes(name));
        await writeFile(
          path.join(cgroup.directory, 'cgroup.subtree_control'),
          available.map((controller) => `+${controller}`).join(' '),
        );
      }
    } catch (error) {
      await cgroup.remove();
      throw error;
    }
    return cgroup;
  }

  /** Memory of the session: its kernel's, and what its files in /mnt/data hold. */
  memoryBytes(): Promise<number | undefined> {
    return readMemoryUsage(this.layout, this.directory);
  }

  /** Removes the budget once the volume is gone (kernel cgroups inside were removed with their kernels). */
  async remove(): Promise<void> {
    await removeCgroupTree(this.directory);
  }
}

async function readMemoryUsage(layout: CgroupLayout, directory: string): Promise<number | undefined> {
  const file = layout.version === 1 ? 'memory.usage_in_bytes' : 'memory.current';
  try {
    return Number((await readFile(path.join(directory, file), 'utf8')).trim());
  } catch {
    return undefined;
  }
}

/** One sandbox's cgroups (one kernel start). */
export class SandboxCgroup {
  readonly directories: string[];

  /** OOM kills counted before this kernel started (a reused counter must not blame it for earlier ones). */
  private oomKillsBefore = 0;

  private constructor(
    private readonly layout: CgroupLayout,
    private readonly byController: Partial<Record<CgroupController, string>>,
    private readonly session: SessionCgroup | undefined,
  ) {
    this.directories = [...new Set(Object.values(byController))];
  }

  /** With `session`, the memory cgroup goes inside the session's budget (on v2, every controller does). */
  static async create(
    layout: CgroupLayout,
    name: string,
    limits: SandboxLimits,
    session?: SessionCgroup,
  ): Promise<SandboxCgroup> {
    const byController: Partial<Record<CgroupController, string>> = {};
    for (const [controller, parent] of Object.entries(layout.parents) as [CgroupController, string][]) {
      byController[controller] = path.join(parent, name);
    }
    if (session) byController.memory = path.join(session.directory, name);
    if (layout.version === 2) {
      const directory = byController.memory as string;
      byController.pids = directory;
      byController.cpu = directory;
    }
    const cgroup = new SandboxCgroup(layout, byController, session);
    try {
      for (const directory of cgroup.directories) await mkdir(directory);
      await cgroup.applyLimits(limits);
      cgroup.oomKillsBefore = await cgroup.oomKillsSoFar();
    } catch (error) {
      await cgroup.remove();
      throw error;
    }
    return cgroup;
  }

  /** The files a starting process writes its pid into to join. */
  get procsFiles(): string[] {
    return this.directories.map((directory) => path.join(directory, 'cgroup.procs'));
  }

  private async write(controller: CgroupController, file: string, value: string, optional = false): Promise<void> {
    const directory = this.byController[controller];
    if (!directory) return;
    try {
      await writeFile(path.join(directory, file), value);
    } catch (error) {
      if (!optional) throw error;
    }
  }

  private async applyLimits(limits: SandboxLimits): Promise<void> {
    const memory = String(Math.floor(limits.memoryBytes));
    const periodMicroseconds = 100_000;
    const quotaMicroseconds = Math.max(1000, Math.round(limits.cpus * periodMicroseconds));
    if (this.layout.version === 1) {
      await this.write('memory', 'memory.limit_in_bytes', memory);
      // No swap beyond the limit, where the host accounts for swap.
      await this.write('memory', 'memory.memsw.limit_in_bytes', memory, true);
      await this.write('pids', 'pids.max', String(limits.processes), true);
      await this.write('cpu', 'cpu.cfs_period_us', String(periodMicroseconds), true);
      await this.write('cpu', 'cpu.cfs_quota_us', String(quotaMicroseconds), true);
    } else {
      await this.write('memory', 'memory.max', memory);
      await this.write('memory', 'memory.swap.max', '0', true);
      await this.write('pids', 'pids.max', String(limits.processes), true);
      await this.write('cpu', 'cpu.max', `${quotaMicroseconds} ${periodMicroseconds}`, true);
    }
  }

  get limitsMemory(): boolean {
    return this.byController.memory !== undefined;
  }

  /** Process ids in the sandbox's cgroups. */
  async processIds(): Promise<number[]> {
    const ids = new Set<number>();
    for (const file of this.procsFiles) {
      try {
        for (const line of (await readFile(file, 'utf8')).split('\n')) if (line) ids.add(Number(line));
      } catch {
        // already removed
      }
    }
    return [...ids];
  }

  /** Memory of the session (kernel and files) when it has a budget, else of this sandbox. */
  async memoryBytes(): Promise<number | undefined> {
    if (this.session) return this.session.memoryBytes();
    const directory = this.byController.memory;
    return directory ? readMemoryUsage(this.layout, directory) : undefined;
  }

  /**
   * How many times the OOM killer acted on this kernel since it started. The
   * kill is counted where the victim was (v1: only there), which is this cgroup
   * even when the session's budget, above it, was what ran out.
   */
  async oomKills(): Promise<number> {
    return (await this.oomKillsSoFar()) - this.oomKillsBefore;
  }

  private async oomKillsSoFar(): Promise<number> {
    const directory = this.byController.memory;
    if (!directory) return 0;
    const file = this.layout.version === 1 ? 'memory.oom_control' : 'memory.events';
    try {
      const match = /^oom_kill (\d+)$/m.exec(await readFile(path.join(directory, file), 'utf8'));
      return match ? Number(match[1]) : 0;
    } catch {
      return 0;
    }
  }

  /** SIGKILLs every process left, until none is (or the removal deadline passes). */
  async killAll(): Promise<void> {
    const deadline = Date.now() + CGROUP_REMOVAL_MS;
    while (Date.now() <= deadline) {
      const ids = await this.processIds();
      if (ids.length === 0) return;
      if (this.layout.version === 2) {
        await this.write('memory', 'cgroup.kill', '1', true);
      }
      for (const id of ids) {
        try {
          process.kill(id, 'SIGKILL');
        } catch {
          // already gone
        }
      }
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  }

  async remove(): Promise<void> {
    await this.killAll();
    for (const directory of this.directories) await removeCgroupTree(directory);
  }
}

/** Removes cgroups (sandboxes' and sessions' budgets) that a sandcell process which is no longer alive left behind. */
export async function sweepStaleCgroups(layout: CgroupLayout): Promise<void> {
  for (const parent of new Set(Object.values(layout.parents))) {
    await sweepDeadOwnersEntries(parent, /^sandcell-(\d+)-/, removeCgroupTree);
  }
}
