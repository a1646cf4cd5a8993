/**
 * The server's Jupyter kernels, each owned by the key that started it (another
 * key's kernel is "not found"). A kernel's session comes from the registry,
 * so it counts against the key's session limit; when the pool closes the
 * session for idling, the kernel is culled: its sockets close and it leaves
 * every listing (a gateway client then counts it as culled).
 */
import type { Owner } from '../core/auth.js';
import type { ServerContext } from '../core/context.js';
import { JupyterHttpError } from './jupyter-errors.js';
import { JupyterKernel } from './jupyter-kernel.js';
import { DEFAULT_KERNEL_NAME, findKernelSpec } from './kernel-specs.js';
import { PasswordLogins } from './password-login.js';

export class KernelStore {
  private readonly kernels = new Map<string, JupyterKernel>();
  readonly started = new Date();
  /** Logins by password, which the REST routes and the channels socket both accept. */
  readonly logins: PasswordLogins;

  constructor(private readonly server: ServerContext) {
    this.logins = new PasswordLogins(server.apiKeys);
    server.pool.onIdleClose((session) => {
      for (const kernel of this.kernels.values()) if (kernel.entry.session === session) this.forget(kernel);
    });
  }

  async create(owner: Owner, name: string | undefined): Promise<JupyterKernel> {
    const spec = findKernelSpec(name ?? DEFAULT_KERNEL_NAME);
    if (!spec) throw new JupyterHttpError(404, `No such kernel spec ${JSON.stringify(name)}; see /api/kernelspecs.`);
    const { registry } = this.server;
    const entry = await registry.create(owner, 'jupyter', spec.environment ? { environment: spec.environment } : {});
    let contextId = 'python';
    try {
      if (spec.language !== 'python') contextId = (await entry.session.createContext({ language: spec.language })).id;
    } catch (error) {
      await registry.remove(entry, 'kernel-failed').catch(() => undefined);
      throw error;
    }
    const kernel = new JupyterKernel(spec, entry, contextId, registry, this.server.version);
    this.kernels.set(kernel.id, kernel);
    return kernel;
  }

  /** The owner's kernel with this id; 404 for another key's, a culled or an unknown one. */
  get(owner: Owner, id: string): JupyterKernel {
    const kernel = this.kernels.get(id);
    if (kernel?.dead) this.forget(kernel);
    if (!kernel || kernel.dead || kernel.entry.owner.id !== owner.id) {
      throw new JupyterHttpError(404, `Kernel does not exist: ${id}`);
    }
    return kernel;
  }

  list(owner: Owner): JupyterKernel[] {
    return this.all().filter((kernel) => kernel.entry.owner.id === owner.id);
  }

  /** Every live kernel (culled ones are dropped on the way). */
  all(): JupyterKernel[] {
    for (const kernel of this.kernels.values()) if (kernel.dead) this.forget(kernel);
    return [...this.kernels.values()];
  }

  async remove(kernel: JupyterKernel): Promise<void> {
    this.forget(kernel);
    await this.server.registry.remove(kernel.entry, 'deleted');
  }

  private forget(kernel: JupyterKernel): void {
    this.kernels.delete(kernel.id);
    kernel.shutDown();
  }
}
