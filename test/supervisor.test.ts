import { createBubblewrapBackend } from '../src/backends/bubblewrap/index.js';
import { createDockerBackend } from '../src/backends/docker/index.js';
import { runSupervisorContract } from './contract/supervisor-contract.js';
import { describeWhenAvailable, unavailableReason } from './support/backends.js';

runSupervisorContract({ name: 'bubblewrap', createBackend: () => createBubblewrapBackend() });

const docker = createDockerBackend();
describeWhenAvailable('supervisor on docker', 'docker', await unavailableReason(docker), () => {
  runSupervisorContract({ name: 'docker', createBackend: () => docker });
});
