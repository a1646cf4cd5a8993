/**
 * E2B pause and resume through the unmodified SDK on Docker sandboxes: the
 * snapshot crosses the container's attach stream, and connect brings the
 * variables and files back. The same flows on bubblewrap, and the rest of
 * pausing, are in e2b-pause.test.ts.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Sandbox } from '@e2b/code-interpreter';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createDockerBackend } from '../../src/backends/docker/index.js';
import { describeWhenAvailable, unavailableReason } from '../support/backends.js';
import { startE2bServer, type TestServer } from '../support/e2b.js';

const backend = createDockerBackend();

describeWhenAvailable('E2B pause and resume (docker)', 'docker', await unavailableReason(backend), () => {
  const stateDirectory = mkdtempSync(path.join(os.tmpdir(), 'sandcell-e2b-pause-docker-'));
  let server: TestServer;

  beforeAll(async () => {
    server = await startE2bServer({ stateDirectory, backend });
  });
  afterAll(async () => {
    await server?.close();
    rmSync(stateDirectory, { recursive: true, force: true });
  });

  it('pauses a sandbox and connect brings back its variables and files (docker)', async () => {
    const sandbox = await Sandbox.create();
    try {
      await sandbox.runCode('import pandas as pd\ndf = pd.DataFrame({"a": range(100)})');
      await sandbox.files.write('/home/user/kept.txt', 'written before the pause');
      expect(await sandbox.pause()).toBe(true);
      expect((await Sandbox.getInfo(sandbox.sandboxId)).state).toBe('paused');
      const resumed = await Sandbox.connect(sandbox.sandboxId);
      expect((await resumed.runCode('int(df.a.sum())')).text).toBe('4950');
      expect(await resumed.files.read('/home/user/kept.txt')).toBe('written before the pause');
      expect((await Sandbox.getInfo(sandbox.sandboxId)).state).toBe('running');
    } finally {
      await sandbox.kill();
    }
  }, 120_000);
});
