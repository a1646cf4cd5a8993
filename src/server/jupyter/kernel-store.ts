/**
 * The server's Jupyter kernels, each owned by the key that started it (another
 * key's kernel is "not found"). A kernel's session comes from the registry
 * under the kernel's id, so it counts against the key's session limit.
 *
 * When the pool idles the session out, the registry pauses it (`--on-idle
 * pause`, the default): the kernel stays, dormant, listed as idle, its sockets
 * open, and its next use resumes it (jupyter-kernel.ts). A server that stops
 * pauses it too; the next server on the same state directory finds the kernel
 * again from its paused record and what the kernel kept there (kernel-keep.ts),
 * at a listing, a request for it, or its channels websocket. With `--on-idle
 * close`, or when its session is gone for good, the kernel is culled: its
 * sockets close and it leaves every listing (a gateway client then counts it
 * as culled).
 */
import { randomUUID } from 'node:crypto';
import { SessionLostError } from '../../snapshots/snapshot-errors.js';
import type { Owner } from '../core/auth.js';
import type { ServerContext } from '../core/context.js';
import type { ManagedSession, PausedRecord } from '../core/managed-session.js';
import { JupyterHttpError } from './jupyter-errors.js';
import { JupyterKernel, type KernelInit } from './jupyter-kernel.js';
import { JupyterTerminals } from './jupyter-terminals.js';
import { readKernelKeep } from './kernel-keep.js';
import { DEFAULT_KERNEL_NAME, findKernelSpec } from './kernel-specs.js';
import { NotebookSessions } from './notebook-sessions.js';
import { PasswordLogins } from './password-login.js';

const notFound = (id: string) => new JupyterHttpError(404, `Kernel does not exist: ${id}`);

export class KernelStore {
  private readonly kernels = new Map<string, JupyterKernel>();
  readonly started = new Date();
  /** Logins by password, which the REST routes and the channels socket both accept. */
  readonly logins: PasswordLogins;
  /** The notebook sessions (`/api/sessions`) bound to these kernels. */
  readonly sessions: NotebookSessions;
  /** The terminals (`/api/terminals`), each a sandbox of its own. */
  readonly terminals: JupyterTerminals;

  constructor(private readonly server: ServerContext) {
    this.logins = new PasswordLogins(server.apiKeys);
    this.sessions = new NotebookSessions(this);
    this.terminals = new JupyterTerminals(server);
    server.pool.onIdleClose(async (session) => {
      // The pool calls every listener at once: by the next tick the registry's own has paused or forgotten the session.
      await Promise.resolve();
      for (const kernel of this.kernels.values()) {
        const entry = kernel.entry;
        if (entry?.session !== session) continue;
        // Being paused (--on-idle pause): dormant; culled if the pause loses the session.
        if (entry.pausing) void entry.pausing.catch(() => (kernel.dead ? this.forget(kernel) : undefined));
        else this.forget(kernel);
      }
    });
  }

  async create(owner: Owner, name: string | undefined): Promise<JupyterKernel> {
    const spec = findKernelSpec(name ?? DEFAULT_KERNEL_NAME);
    if (!spec) throw new JupyterHttpError(404, `No such kernel spec ${JSON.stringify(name)}; see /api/kernelspecs.`);
    const { registry } = this.server;
    // Jupyter's kernel ids are UUIDs, which fit the registry's session ids: the kernel's id is its session's.
    const id = registry.ownId(randomUUID());
    const entry = await registry.create(owner, 'jupyter', {
      id,
      ...(spec.environment ? { environment: spec.environment } : {}),
    });
    let contextId = 'python';
    try {
      if (spec.language !== 'python') contextId = (await entry.session.createContext({ language: spec.language })).id;
    } catch (error) {
      await registry.remove(entry, 'kernel-failed').catch(() => undefined);
      throw error;
    }
    const kernel = this.kernel({ id, owner, spec, contextId, entry });
    this.kernels.set(kernel.id, kernel);
    return kernel;
  }

  /**
   * The owner's kernel with this id, live or dormant (not resumed: Jupyter Server's gateway asks
   * for each notebook's kernel at every listing, which must not keep it from pausing); 404 for
   * another key's, a culled or an unknown one. After a restart it is read back from its paused record.
   */
  async get(owner: Owner, id: string): Promise<JupyterKernel> {
    const kernel = this.kernels.get(id);
    if (kernel) {
      if (kernel.owner.id !== owner.id) throw notFound(id);
      if (kernel.dead) {
        this.forget(kernel);
        throw notFound(id);
      }
      return kernel;
    }
    const adopted = await this.adopt(owner, id);
    if (!adopted) throw notFound(id);
    return adopted;
  }

  /** The owner's kernel with this id, its session resumed when it is dormant (a 404 when it is gone for good). */
  async use(owner: Owner, id: string): Promise<JupyterKernel> {
    const kernel = await this.get(owner, id);
    try {
      await kernel.live();
    } catch (error) {
      if (kernel.dead) this.forget(kernel);
      throw error;
    }
    return kernel;
  }

  /** The owner's kernels, live and dormant (those paused before a restart included), oldest first. */
  async list(owner: Owner): Promise<JupyterKernel[]> {
    const recorded = new Set<string>();
    for (const record of await this.server.registry.pauses.list(owner)) {
      if (record.source !== 'jupyter' || record.snapshotId === undefined) continue;
      recorded.add(record.id);
      if (!this.kernels.has(record.id)) this.adoptRecord(owner, record);
    }
    const listed: JupyterKernel[] = [];
    for (const kernel of [...this.kernels.values()]) {
      if (kernel.owner.id !== owner.id) continue;
      if (kernel.dead) {
        this.forget(kernel);
        continue;
      }
      const pausingNow = kernel.entry?.pausing !== undefined && kernel.entry.closedAt === undefined;
      if (kernel.dormant && !pausingNow && !recorded.has(kernel.id)) {
        // Resumed through another door (/v1): the kernel takes it; deleted there: the kernel goes.
        const live = this.server.registry.find(owner, kernel.id);
        if (live?.source !== 'jupyter') {
          this.forget(kernel);
          continue;
        }
        kernel.bind(live);
      }
      listed.push(kernel);
    }
    return listed;
  }

  /** Shuts the kernel down: its session is closed, or its paused state deleted. */
  async remove(kernel: JupyterKernel): Promise<void> {
    this.forget(kernel);
    const { registry } = this.server;
    const entry = kernel.entry;
    if (entry && !kernel.dormant && !entry.session.closed) {
      await registry.remove(entry, 'deleted');
      return;
    }
    await entry?.pausing?.catch(() => undefined);
    const live = registry.find(kernel.owner, kernel.id);
    if (live) await registry.remove(live, 'deleted');
    else await registry.pauses.remove(kernel.owner, kernel.id);
  }

  /** Writes what the kernel keeps (its counters, its notebook sessions) into its live session's keep. */
  syncKeep(kernel: JupyterKernel): void {
    const entry = kernel.entry;
    if (!entry || kernel.dormant || kernel.dead) return;
    entry.keep = { ...kernel.keep(), sessions: this.sessions.keptOf(kernel) };
  }

  /** A kernel this server does not hold: resumed meanwhile through another door, or paused (a restart). */
  private async adopt(owner: Owner, id: string): Promise<JupyterKernel | undefined> {
    const { registry } = this.server;
    const live = registry.find(owner, id);
    const record = live ? undefined : await registry.pauses.find(owner, id);
    // Two requests may have looked it up at once: the first one's kernel is the kernel.
    const known = this.kernels.get(id);
    if (known) return known.owner.id === owner.id && !known.dead ? known : undefined;
    if (live) return live.source === 'jupyter' ? this.adoptKept(owner, id, live.keep, live) : undefined;
    if (record?.source !== 'jupyter') return undefined;
    // A kernel whose state is gone is culled, in Jupyter's words (a gateway client counts a 404 so), saying why.
    if (record.snapshotId === undefined)
      await registry.pauses.resumable(owner, id).catch((error: unknown) => {
        if (error instanceof SessionLostError)
          throw new JupyterHttpError(404, `Kernel does not exist: ${id}. ${error.message}`);
        throw error;
      });
    return this.adoptRecord(owner, record);
  }

  private adoptRecord(owner: Owner, record: PausedRecord): JupyterKernel | undefined {
    return this.adoptKept(owner, record.id, record.keep);
  }

  /** A kernel rebuilt from what it kept; undefined when that is not a kernel's (or names an unknown spec). */
  private adoptKept(
    owner: Owner,
    id: string,
    kept: Record<string, unknown> | undefined,
    entry?: ManagedSession,
  ): JupyterKernel | undefined {
    const keep = readKernelKeep(kept);
    const spec = keep && findKernelSpec(keep.spec);
    if (!keep || !spec) return undefined;
    const kernel = this.kernel({ id, owner, spec, contextId: keep.context, kept: keep, ...(entry ? { entry } : {}) });
    this.kernels.set(id, kernel);
    this.sessions.restore(kernel, keep.sessions);
    return kernel;
  }

  /** A kernel whose changes reach its session's keep. */
  private kernel(init: Omit<KernelInit, 'registry' | 'serverVersion' | 'onChange'>): JupyterKernel {
    const kernel: JupyterKernel = new JupyterKernel({
      ...init,
      registry: this.server.registry,
      serverVersion: this.server.version,
      onChange: () => this.syncKeep(kernel),
    });
    this.syncKeep(kernel);
    return kernel;
  }

  private forget(kernel: JupyterKernel): void {
    if (this.kernels.get(kernel.id) === kernel) this.kernels.delete(kernel.id);
    kernel.shutDown();
  }
}
