/**
 * A sandbox's processes killed or stopped while a run is outstanding, on every backend (issue 44): the run
 * settles with what happened (test/contract/sandbox-loss-contract.ts). Bubblewrap by exec and forked from a
 * template (as root), and Docker where it runs.
 */
import { createBubblewrapBackend } from '../src/backends/bubblewrap/index.js';
import { createDockerBackend } from '../src/backends/docker/index.js';
import { runSandboxLossContract } from './contract/sandbox-loss-contract.js';
import { describeWhenAvailable, unavailableReason } from './support/backends.js';

runSandboxLossContract({ name: 'bubblewrap', createBackend: () => createBubblewrapBackend({ start: 'exec' }) });

const forking = createBubblewrapBackend({ start: 'fork' });
const forkingUnavailable =
  process.getuid?.() === 0
    ? await unavailableReason(forking)
    : 'forked sessions need root (each fork is its own host uid)';
describeWhenAvailable('sandbox loss on forked sessions', 'bubblewrap', forkingUnavailable, () => {
  runSandboxLossContract({ name: 'bubblewrap (forked)', createBackend: () => forking });
});

const docker = createDockerBackend();
describeWhenAvailable('sandbox loss on docker', 'docker', await unavailableReason(docker), () => {
  runSandboxLossContract({ name: 'docker', createBackend: () => docker });
});
