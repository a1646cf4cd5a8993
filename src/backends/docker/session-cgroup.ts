/**
 * A session's memory budget on Docker: a cgroup that sandcell creates and
 * limits (`memoryBytes`, no swap beyond it) and hands to the engine as every
 * container's `CgroupParent`. The kernel containers inside it, and the tmpfs
 * pages of /mnt/data they wrote (charged to them, and kept in the budget after
 * they are gone), share that one limit, whatever restarts.
 *
 * It needs what only a local engine gives: the cgroupfs driver (which puts a
 * container at `<hierarchy>/<CgroupParent>/<id>`), the same cgroup tree as
 * sandcell, and root to write it. The first container of each session is
 * checked to have landed inside; otherwise the backend falls back to lowering
 * each kernel's own limit by what /mnt/data holds (see DockerBackend).
 */
import { existsSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { readMountInfo } from '../../internal/mount-info.js';
import { sweepDeadOwnersEntries } from '../../internal/process-alive.js';
import { removeCgroupTree } from '../cgroup-files.js';

/** Every session cgroup lives under this one at the root of each hierarchy. */
export const CGROUP_PARENT_ROOT = 'sandcell';

export interface DockerCgroupTree {
  version: 1 | 2;
  /** Where the memory controller's hierarchy (v2: the unified one) is mounted. */
  memoryMount: string;
  /** Every hierarchy the engine creates container cgroups in; each gets the session's directory. */
  mounts: string[];
}

export interface EngineCgroupFacts {
  /** Whether the engine runs on this machine (a unix socket); a remote engine's cgroups are not ours to write. */
  local: boolean;
  driver?: string;
  version?: string;
}

/** Where sandcell can create session cgroups for the engine, or why it cannot. */
export async function detectDockerCgroupTree(
  facts: EngineCgroupFacts,
): Promise<{ tree: DockerCgroupTree } | { reason: string }> {
  if (!facts.local) return { reason: 'the engine is not on this machine (DOCKER_HOST)' };
  if (process.getuid?.() !== 0)
    return { reason: 'sandcell does not run as root, so it cannot create cgroups for the engine' };
  if (facts.driver !== 'cgroupfs') {
    return { reason: `the engine uses the ${facts.driver ?? 'unknown'} cgroup driver, not cgroupfs` };
  }
  // Only hierarchies mounted at their root show the paths the engine uses.
  const mounts = readMountInfo().filter((mount) => mount.root === '/');
  const version = facts.version === '2' ? 2 : 1;
  const memory =
    version === 1
      ? mounts.find((mount) => mount.type === 'cgroup' && mount.superOptions.includes('memory'))
      : mounts.find((mount) => mount.type === 'cgroup2');
  if (!memory) return { reason: `sandcell sees no cgroup v${version} memory hierarchy at its root` };
  const root = path.join(memory.mountPoint, CGROUP_PARENT_ROOT);
  try {
    await mkdir(root, { recursive: true });
    if (version === 2) await enableControllers(memory.mountPoint, root);
  } catch (error) {
    return { reason: `sandcell cannot create ${root} (${(error as Error).message})` };
  }
  return {
    tree: {
      version,
      memoryMount: memory.mountPoint,
      mounts: mounts
        .filter((mount) => mount.type === 'cgroup' || mount.type === 'cgroup2')
        .map((mount) => mount.mountPoint),
    },
  };
}

/** cgroup v2: the session cgroups under `root` get the memory, pids and CPU controllers. */
async function enableControllers(mountPoint: string, root: string): Promise<void> {
  const available = (await readFile(path.join(mountPoint, 'cgroup.subtree_control'), 'utf8')).trim().split(/\s+/);
  if (!available.includes('memory')) throw new Error('the memory controller is not enabled at the root');
  const wanted = ['memory', 'pids', 'cpu'].filter((name) => available.includes(name));
  await writeFile(path.join(root, 'cgroup.subtree_control'), wanted.map((name) => `+${name}`).join(' '));
}

export class DockerSessionCgroup {
  private constructor(
    private readonly tree: DockerCgroupTree,
    private readonly name: string,
  ) {}

  /** `name` starts with the owning process id, so a sweep can tell when it was left behind. */
  static async create(tree: DockerCgroupTree, name: string, memoryBytes: number): Promise<DockerSessionCgroup> {
    const cgroup = new DockerSessionCgroup(tree, name);
    const directory = cgroup.memoryDirectory;
    const memory = String(Math.floor(memoryBytes));
    await mkdir(directory);
    try {
      if (tree.version === 1) {
        await writeFile(path.join(directory, 'memory.limit_in_bytes'), memory);
        await writeFile(path.join(directory, 'memory.memsw.limit_in_bytes'), memory).catch(() => undefined);
      } else {
        await writeFile(path.join(directory, 'memory.max'), memory);
        await writeFile(path.join(directory, 'memory.swap.max'), '0').catch(() => undefined);
      }
    } catch (error) {
      await cgroup.remove();
      throw error;
    }
    return cgroup;
  }

  /** The `HostConfig.CgroupParent` of the session's containers. */
  get parent(): string {
    return `/${CGROUP_PARENT_ROOT}/${this.name}`;
  }

  private get memoryDirectory(): string {
    return path.join(this.tree.memoryMount, CGROUP_PARENT_ROOT, this.name);
  }

  /** Whether the engine put this container inside the budget (and not somewhere sandcell cannot see). */
  holds(containerId: string): boolean {
    return existsSync(path.join(this.memoryDirectory, containerId));
  }

  /** Memory of the whole session: its kernels and its files. */
  async memoryBytes(): Promise<number | undefined> {
    const file = this.tree.version === 1 ? 'memory.usage_in_bytes' : 'memory.current';
    try {
      return Number((await readFile(path.join(this.memoryDirectory, file), 'utf8')).trim());
    } catch {
      return undefined;
    }
  }

  /** Removes the session's directory from every hierarchy (the engine created those it needed). */
  async remove(): Promise<void> {
    for (const mount of this.tree.mounts) await removeCgroupTree(path.join(mount, CGROUP_PARENT_ROOT, this.name));
  }
}

/** Removes session cgroups whose owning sandcell process is gone (after their containers were removed). */
export async function sweepStaleDockerCgroups(tree: DockerCgroupTree): Promise<void> {
  for (const mount of tree.mounts) {
    await sweepDeadOwnersEntries(path.join(mount, CGROUP_PARENT_ROOT), /^(\d+)-/, removeCgroupTree);
  }
}
