/**
 * What a gVisor sandbox offers beside code, as the other backends offer it: the network gate, ports reached
 * from the host, terminals and volumes, each through its own contract on real runsc sandboxes.
 */
import { createGvisorBackend } from '../src/backends/gvisor/index.js';
import { runNetworkContract } from './contract/network-contract.js';
import { runPortsContract } from './contract/ports-contract.js';
import { runTerminalsContract } from './contract/terminals-contract.js';
import { runVolumesContract } from './contract/volumes-contract.js';
import { describeWhenAvailable, unavailableReason } from './support/backends.js';

const reason = await unavailableReason(createGvisorBackend());

describeWhenAvailable('gvisor backend: network, ports, terminals, volumes', 'gvisor', reason, () => {
  runNetworkContract({ name: 'gvisor', createBackend: () => createGvisorBackend() });
  runPortsContract({ name: 'gvisor', createBackend: () => createGvisorBackend() });
  runTerminalsContract({ name: 'gvisor', createBackend: () => createGvisorBackend() });
  runVolumesContract({ name: 'gvisor', createBackend: () => createGvisorBackend() });
});
