/**
 * What a gVisor sandbox offers beside code, as the other backends offer it: the network gate, ports
 * reached from the host and terminals, each through its own contract on real runsc sandboxes (the
 * terminal cases this runsc's pseudo-terminals fail are marked, and must fail). Volumes are refused on
 * this backend for now (GvisorBackend.mountsDirectories says why), with a typed error.
 */
import { describe, expect, it } from 'vitest';
import { createGvisorBackend } from '../src/backends/gvisor/index.js';
import { Session } from '../src/session/session.js';
import { VolumesUnavailableError } from '../src/volumes/volume-errors.js';
import { markKnownGaps } from './contract/contract-support.js';
import { runNetworkContract } from './contract/network-contract.js';
import { runPortsContract } from './contract/ports-contract.js';
import { runTerminalsContract } from './contract/terminals-contract.js';
import { describeWhenAvailable, unavailableReason } from './support/backends.js';

const reason = await unavailableReason(createGvisorBackend());

describeWhenAvailable('gvisor backend: network, ports, terminals, volumes', 'gvisor', reason, () => {
  runNetworkContract({ name: 'gvisor', createBackend: () => createGvisorBackend() });
  runPortsContract({ name: 'gvisor', createBackend: () => createGvisorBackend() });
  describe('terminals', () => {
    markKnownGaps({
      'a shell on a real terminal, as the session’s user, in its directory and environment; resize; Ctrl-C':
        "Ctrl-C on this runsc's pseudo-terminal does not interrupt the foreground job",
      '20 MiB of output arrive whole through a client that holds and releases':
        "this runsc's pseudo-terminal loses output the supervisor has not read yet when the program ends",
    });
    runTerminalsContract({ name: 'gvisor', createBackend: () => createGvisorBackend() });
  });

  it('refuses a session with volumes, saying the backend mounts none', async () => {
    const attempt = Session.create({
      backend: createGvisorBackend(),
      mounts: [{ volume: 'anything', path: '/mnt/anything' }],
    });
    await expect(attempt).rejects.toThrow(VolumesUnavailableError);
    await expect(attempt).rejects.toThrow(/gvisor backend mounts no volumes/);
  });
});
