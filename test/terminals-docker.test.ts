import { createDockerBackend } from '../src/backends/docker/index.js';
import { runTerminalsContract } from './contract/terminals-contract.js';
import { describeWhenAvailable, unavailableReason } from './support/backends.js';

const backend = createDockerBackend();
const reason = await unavailableReason(backend);

describeWhenAvailable('docker terminals', 'docker', reason, () => {
  runTerminalsContract({ name: 'docker', createBackend: () => backend });
});
