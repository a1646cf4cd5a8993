/** The server contract (test/contract/server-contract.ts) on the scripted backend. */
import { runServerContract } from '../../test/contract/server-contract.js';
import { createScriptedBackend } from '../backends/scripted/index.js';

runServerContract({ name: 'scripted', createBackend: () => createScriptedBackend() });
