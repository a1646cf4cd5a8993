import { createDockerBackend } from '../src/backends/docker/index.js';
import { runVolumesContract } from './contract/volumes-contract.js';
import { describeWhenAvailable, unavailableReason } from './support/backends.js';

const backend = createDockerBackend();
const reason = await unavailableReason(backend);

describeWhenAvailable('docker volumes', 'docker', reason, () => {
  runVolumesContract({ name: 'docker', createBackend: () => backend });
});
