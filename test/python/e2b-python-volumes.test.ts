/**
 * E2B's Python SDK (`e2b` 2.63, as test/python/requirements/clients.txt pins it), unmodified, with
 * sandcell's volumes and named snapshots against a real `sandcell serve` on bubblewrap with a state
 * directory of its own: a volume created, mounted in one sandbox, written there, read by the next and
 * through the content API, a named snapshot started from by its name, the volume destroyed.
 */
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { KEY } from '../support/e2b.js';
import { runPythonClient } from '../support/python-clients.js';
import { killServes, type Serve, startServe, stopServe } from '../support/serve-process.js';
import { removeStateDirectory } from '../support/volumes.js';

const stateDirectory = mkdtempSync(path.join(os.tmpdir(), 'sandcell-python-volumes-'));
let serve: Serve;

beforeAll(async () => {
  serve = await startServe(['--pool-size', '0'], { SANDCELL_API_KEYS: KEY, SANDCELL_STATE_DIR: stateDirectory });
});
afterAll(async () => {
  if (serve) await stopServe(serve, 'SIGTERM');
  killServes();
  removeStateDirectory(stateDirectory);
});

it('volumes and named snapshots through the sync Python SDK', async () => {
  const url = `${serve.url}/e2b`;
  const seen = await runPythonClient('clients', 'e2b_volumes.py', {
    E2B_API_KEY: KEY,
    E2B_API_URL: url,
    E2B_VOLUME_API_URL: url,
    E2B_SANDBOX_URL: url,
  });
  expect(seen).toEqual({
    created: { name: 'py-data', token: 'svt_' },
    listed: ['py-data'],
    read_in_sandbox: 'a,b\n1,2\n',
    read_by_api: 'a,b\n1,2\n',
    written_seen: 'from python',
    entries: ['/in', '/in/table.csv', '/out', '/out/result.txt'],
    missing: expect.stringMatching(/NotFound/),
    snapshot_names: ['py-prepared'],
    from_name: 'snapshotted',
    destroyed: true,
    after_destroy: expect.stringMatching(/NotFound/),
  });
}, 240_000);
