import { createDockerBackend } from '../src/backends/docker/index.js';
import { runPortsContract } from './contract/ports-contract.js';
import { describeWhenAvailable, unavailableReason } from './support/backends.js';

const backend = createDockerBackend();
const reason = await unavailableReason(backend);

describeWhenAvailable('docker ports', 'docker', reason, () => {
  runPortsContract({ name: 'docker', createBackend: () => backend });
});
