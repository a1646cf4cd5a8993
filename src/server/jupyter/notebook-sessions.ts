/**
 * Jupyter's sessions (`/api/sessions`): a notebook or console path bound to a
 * kernel, which is all JupyterLab and the classic Notebook keep there. They
 * live as long as their kernel: one culled or shut down takes its sessions
 * along; one paused keeps them (in what it keeps with its session,
 * kernel-keep.ts), also across a restart of the server.
 */
import { randomUUID } from 'node:crypto';
import type { Owner } from '../core/auth.js';
import { JupyterHttpError } from './jupyter-errors.js';
import type { JupyterKernel } from './jupyter-kernel.js';
import { type KeptNotebookSession, MAX_KEPT_SESSIONS } from './kernel-keep.js';

export interface NotebookSession {
  readonly id: string;
  readonly owner: Owner;
  path: string;
  name: string;
  type: string;
  kernel: JupyterKernel;
}

/** What the sessions ask of the kernels (kernel-store.ts, which holds them). */
export interface SessionKernels {
  /** Lists the owner's kernels, reading back those paused before a restart (and their sessions). */
  list(owner: Owner): Promise<unknown>;
  /** Writes what the kernel keeps with its session (its sessions among it). */
  syncKeep(kernel: JupyterKernel): void;
  remove(kernel: JupyterKernel): Promise<void>;
}

/** Sessions one key may hold; each names a kernel, which its own limits bound, but several may share one. */
const MAX_SESSIONS_PER_OWNER = 1_000;
/** The longest path, name or type a kept session holds (kernel-keep.ts): longer ones are not kept. */
const MAX_KEPT_TEXT = 1024;
const MAX_KEPT_TYPE = 64;

export class NotebookSessions {
  private readonly sessions = new Map<string, NotebookSession>();

  constructor(private readonly kernels: SessionKernels) {}

  /** The owner's sessions; those of kernels paused before a restart are read back first. */
  async list(owner: Owner): Promise<NotebookSession[]> {
    await this.kernels.list(owner);
    return this.known(owner);
  }

  async get(owner: Owner, id: string): Promise<NotebookSession> {
    const session = (await this.list(owner)).find((candidate) => candidate.id === id);
    if (!session) throw new JupyterHttpError(404, `Session not found: ${id}`);
    return session;
  }

  add(owner: Owner, fields: Omit<NotebookSession, 'id' | 'owner'>): NotebookSession {
    if (this.known(owner).length >= MAX_SESSIONS_PER_OWNER) {
      throw new JupyterHttpError(429, `This key holds ${MAX_SESSIONS_PER_OWNER} sessions, the limit.`);
    }
    // Tagged as its kernel's id is: in a cluster, a request for it reaches the kernel's node.
    const session = { id: fields.kernel.id.slice(0, 8) + randomUUID().slice(8), owner, ...fields };
    this.sessions.set(session.id, session);
    this.kernels.syncKeep(session.kernel);
    return session;
  }

  /** The session's path, name, type or kernel changed: what its kernels keep follows. */
  changed(session: NotebookSession, previous: JupyterKernel): void {
    this.kernels.syncKeep(session.kernel);
    if (previous !== session.kernel) this.kernels.syncKeep(previous);
  }

  /** Forgets the session and shuts its kernel down unless another session still uses it. */
  async remove(session: NotebookSession): Promise<void> {
    this.sessions.delete(session.id);
    this.kernels.syncKeep(session.kernel);
    await this.releaseKernel(session.kernel);
  }

  async releaseKernel(kernel: JupyterKernel): Promise<void> {
    const shared = [...this.sessions.values()].some((other) => other.kernel === kernel);
    if (!shared && !kernel.dead) await this.kernels.remove(kernel);
  }

  /** What the kernel keeps of its sessions across a pause (bounded: the record stays small). */
  keptOf(kernel: JupyterKernel): KeptNotebookSession[] {
    const kept: KeptNotebookSession[] = [];
    for (const session of this.sessions.values()) {
      if (session.kernel !== kernel || kept.length >= MAX_KEPT_SESSIONS) continue;
      if (session.path.length > MAX_KEPT_TEXT || session.name.length > MAX_KEPT_TEXT) continue;
      if (session.type.length > MAX_KEPT_TYPE) continue;
      kept.push({ id: session.id, path: session.path, name: session.name, type: session.type });
    }
    return kept;
  }

  /** The sessions a kernel read back from its paused record kept. */
  restore(kernel: JupyterKernel, kept: readonly KeptNotebookSession[]): void {
    for (const session of kept) {
      if (this.sessions.has(session.id)) continue;
      this.sessions.set(session.id, { ...session, owner: kernel.owner, kernel });
    }
  }

  /** The owner's sessions this server holds; those of culled kernels are dropped on the way. */
  private known(owner: Owner): NotebookSession[] {
    return [...this.sessions.values()].filter((session) => {
      if (!session.kernel.dead) return session.owner.id === owner.id;
      this.sessions.delete(session.id);
      return false;
    });
  }
}
