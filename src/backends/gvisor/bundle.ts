/**
 * One sandbox's OCI bundle on the host: `<runtime>/gvisor/bundles/<id>/`,
 * holding config.json, a skeleton root of its own (runsc makes the mount
 * points of the sandbox's binds in it, so no two sandboxes share one) and the
 * per-session files bound in (the certificate bundle). Removed with the sandbox.
 */
import { mkdir, rm, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { sweepDeadOwnersEntries } from '../../internal/process-alive.js';
import { SKELETON_DIRECTORIES, SKELETON_LINKS } from './oci-spec.js';
import { deleteSandbox, type RunscHost } from './runsc.js';

export class SandboxBundle {
  private constructor(
    readonly id: string,
    readonly directory: string,
  ) {}

  get rootDirectory(): string {
    return path.join(this.directory, 'root');
  }

  /** A new bundle directory with its skeleton root; config.json is written by `writeSpec`. */
  static async create(bundlesDirectory: string, id: string): Promise<SandboxBundle> {
    const bundle = new SandboxBundle(id, path.join(bundlesDirectory, id));
    await mkdir(bundle.directory, { recursive: true, mode: 0o711 });
    try {
      for (const directory of SKELETON_DIRECTORIES) {
        await mkdir(path.join(bundle.rootDirectory, directory), { recursive: true, mode: 0o755 });
      }
      for (const [name, target] of Object.entries(SKELETON_LINKS))
        await symlink(target, path.join(bundle.rootDirectory, name));
    } catch (error) {
      await bundle.remove();
      throw error;
    }
    return bundle;
  }

  writeSpec(spec: Record<string, unknown>): Promise<void> {
    return writeFile(path.join(this.directory, 'config.json'), JSON.stringify(spec), { mode: 0o600 });
  }

  /** A file of this sandbox's own (the certificate bundle), readable by the sandbox's uid. */
  async addFile(name: string, content: string | Buffer): Promise<string> {
    const file = path.join(this.directory, name);
    await writeFile(file, content, { mode: 0o644 });
    return file;
  }

  remove(): Promise<void> {
    return rm(this.directory, { recursive: true, force: true });
  }
}

/** The bundles and runsc state that sandcell processes no longer alive left behind. */
export function sweepStaleBundles(bundlesDirectory: string, host: RunscHost): Promise<void> {
  return sweepDeadOwnersEntries(bundlesDirectory, /^sandcell-(\d+)-/, async (entry) => {
    await deleteSandbox(host, path.basename(entry));
    await rm(entry, { recursive: true, force: true });
  });
}
