import { createBubblewrapBackend } from '../src/backends/bubblewrap/index.js';
import { runNetworkContract } from './contract/network-contract.js';

runNetworkContract({ name: 'bubblewrap', createBackend: () => createBubblewrapBackend() });
