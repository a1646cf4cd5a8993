import { createBubblewrapBackend } from '../src/backends/bubblewrap/index.js';
import { runVolumesContract } from './contract/volumes-contract.js';

runVolumesContract({ name: 'bubblewrap', createBackend: () => createBubblewrapBackend({ start: 'exec' }) });
runVolumesContract({
  name: 'bubblewrap, forked sessions',
  createBackend: () => createBubblewrapBackend({ start: 'fork' }),
});
