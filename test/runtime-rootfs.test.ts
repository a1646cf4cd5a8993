/**
 * bubblewrap on the runtime root filesystem (`--rootfs runtime`): the same
 * contracts as on the host's /usr, and the same Python environment as the
 * Docker image, since both come from one build.
 */
import { expect, it } from 'vitest';
import { createBubblewrapBackend } from '../src/backends/bubblewrap/index.js';
import { createDockerBackend } from '../src/backends/docker/index.js';
import type { SandboxBackend } from '../src/backends/spec.js';
import { runtimeRootfsDirectory } from '../src/image/recipe.js';
import { runBackendContract } from './contract/backend-contract.js';
import { withSession } from './contract/contract-support.js';
import { runSecurityContract } from './contract/security-contract.js';
import { describeWhenAvailable, requiredBackends, unavailableReason } from './support/backends.js';

const backend = createBubblewrapBackend({ rootfs: 'runtime' });
const reason = await unavailableReason(backend);

const ENVIRONMENT_PROBE = `import sys, importlib.metadata as m
print(sys.version.split()[0], *(f"{name}={m.version(name)}" for name in ["ipython", "numpy", "pandas", "matplotlib", "scikit-learn", "scipy", "seaborn", "statsmodels"]))`;

async function environmentOf(target: SandboxBackend): Promise<string> {
  return withSession(target, {}, async (session) => {
    const execution = await session.run(ENVIRONMENT_PROBE);
    expect(execution.status).toBe('ok');
    return execution.stdout.trim();
  });
}

describeWhenAvailable('bubblewrap on the runtime root filesystem', 'bubblewrap-rootfs', reason, () => {
  runBackendContract({ name: 'bubblewrap --rootfs runtime', createBackend: () => backend });
  runSecurityContract({ name: 'bubblewrap --rootfs runtime', createBackend: () => backend });

  it("runs on the runtime's /usr, not the host's", async () => {
    const report = await backend.report();
    expect(report.systemRoot).toBe(runtimeRootfsDirectory());
    await withSession(backend, {}, async (session) => {
      const execution = await session.run(
        'import os\nprint(open("/etc/sandcell-runtime-version").read().strip() if os.path.exists("/etc/sandcell-runtime-version") else "no marker", os.path.exists("/usr/bin/bwrap"))',
      );
      // /etc comes from the host only file by file, so the marker is not visible; /usr is the runtime's (no bwrap in it).
      expect(execution.stdout).toBe('no marker False\n');
    });
  });

  it('has the same Python environment as the Docker image, when Docker is here', async () => {
    const docker = createDockerBackend();
    const dockerReason = await unavailableReason(docker);
    if (dockerReason) {
      if (requiredBackends().includes('docker'))
        throw new Error(`docker is required here but unavailable: ${dockerReason}`);
      process.stderr.write(`[skipped] comparison with Docker: ${dockerReason}\n`);
      return;
    }
    const [onRootfs, onDocker] = await Promise.all([environmentOf(backend), environmentOf(docker)]);
    expect(onRootfs).toMatch(/^3\.\d+\.\d+ ipython=/);
    expect(onRootfs).toBe(onDocker);
  });
});
