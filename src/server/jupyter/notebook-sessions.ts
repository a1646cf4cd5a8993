/**
 * Jupyter's sessions (`/api/sessions`): a notebook or console path bound to a
 * kernel, which is all JupyterLab and the classic Notebook keep there. They
 * live as long as their kernel: one culled or shut down takes its sessions along.
 */
import { randomUUID } from 'node:crypto';
import type { Owner } from '../core/auth.js';
import { JupyterHttpError } from './jupyter-errors.js';
import type { JupyterKernel } from './jupyter-kernel.js';
import type { KernelStore } from './kernel-store.js';

export interface NotebookSession {
  readonly id: string;
  readonly owner: Owner;
  path: string;
  name: string;
  type: string;
  kernel: JupyterKernel;
}

/** Sessions one key may hold; each names a kernel, which its own limits bound, but several may share one. */
const MAX_SESSIONS_PER_OWNER = 1_000;

export class NotebookSessions {
  private readonly sessions = new Map<string, NotebookSession>();

  constructor(private readonly kernels: KernelStore) {}

  list(owner: Owner): NotebookSession[] {
    return [...this.sessions.values()].filter((session) => {
      if (!session.kernel.dead) return session.owner.id === owner.id;
      this.sessions.delete(session.id);
      return false;
    });
  }

  get(owner: Owner, id: string): NotebookSession {
    const session = this.list(owner).find((candidate) => candidate.id === id);
    if (!session) throw new JupyterHttpError(404, `Session not found: ${id}`);
    return session;
  }

  add(owner: Owner, fields: Omit<NotebookSession, 'id' | 'owner'>): NotebookSession {
    if (this.list(owner).length >= MAX_SESSIONS_PER_OWNER) {
      throw new JupyterHttpError(429, `This key holds ${MAX_SESSIONS_PER_OWNER} sessions, the limit.`);
    }
    const session = { id: randomUUID(), owner, ...fields };
    this.sessions.set(session.id, session);
    return session;
  }

  /** Forgets the session and shuts its kernel down unless another session still uses it. */
  async remove(session: NotebookSession): Promise<void> {
    this.sessions.delete(session.id);
    await this.releaseKernel(session.kernel);
  }

  async releaseKernel(kernel: JupyterKernel): Promise<void> {
    const shared = [...this.sessions.values()].some((other) => other.kernel === kernel);
    if (!shared && !kernel.dead) await this.kernels.remove(kernel);
  }
}
