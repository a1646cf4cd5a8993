import { createDockerBackend } from '../src/backends/docker/index.js';
import { runNetworkContract } from './contract/network-contract.js';
import { describeWhenAvailable, unavailableReason } from './support/backends.js';

const backend = createDockerBackend();
const reason = await unavailableReason(backend);

describeWhenAvailable('docker network', 'docker', reason, () => {
  runNetworkContract({ name: 'docker', createBackend: () => backend });
});
