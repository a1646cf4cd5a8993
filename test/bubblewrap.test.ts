import { createBubblewrapBackend } from '../src/backends/bubblewrap/index.js';
import { runBackendContract } from './contract/backend-contract.js';
import { runSecurityContract } from './contract/security-contract.js';

runBackendContract({ name: 'bubblewrap', createBackend: () => createBubblewrapBackend() });
runSecurityContract({ name: 'bubblewrap', createBackend: () => createBubblewrapBackend() });
