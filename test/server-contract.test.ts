/** The server contract (test/contract/server-contract.ts) on bubblewrap. */
import { createBubblewrapBackend } from '../src/backends/bubblewrap/index.js';
import { runServerContract } from './contract/server-contract.js';

runServerContract({ name: 'bubblewrap', createBackend: () => createBubblewrapBackend() });
