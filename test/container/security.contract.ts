/**
 * The security contract, run inside sandcell's own container by test/container-image.test.ts, under
 * the security settings deploy/kubernetes gives the pod: the sandboxes are bubblewrap's in the
 * container, as `sandcell serve` there makes them.
 */
import { createBubblewrapBackend } from '../../src/backends/bubblewrap/index.js';
import { runSecurityContract } from '../contract/security-contract.js';

runSecurityContract({ name: "bubblewrap in sandcell's container", createBackend: () => createBubblewrapBackend() });
