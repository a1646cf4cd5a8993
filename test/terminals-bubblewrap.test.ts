import { createBubblewrapBackend } from '../src/backends/bubblewrap/index.js';
import { runTerminalsContract } from './contract/terminals-contract.js';

runTerminalsContract({ name: 'bubblewrap', createBackend: () => createBubblewrapBackend({ start: 'exec' }) });
runTerminalsContract({
  name: 'bubblewrap, forked sessions',
  createBackend: () => createBubblewrapBackend({ start: 'fork' }),
});
