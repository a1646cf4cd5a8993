import { createBubblewrapBackend } from '../src/backends/bubblewrap/index.js';
import { runPortsContract } from './contract/ports-contract.js';

runPortsContract({ name: 'bubblewrap', createBackend: () => createBubblewrapBackend({ start: 'exec' }) });
runPortsContract({
  name: 'bubblewrap, forked sessions',
  createBackend: () => createBubblewrapBackend({ start: 'fork' }),
});
