/**
 * Choosing the wall: a server on bubblewrap whose key named by `--gvisor-key` has its sessions on
 * gVisor (and its pauses are checkpoints), beside a key whose sessions stay on bubblewrap; and an
 * environment whose description asks for `"isolation": "gvisor"`, built for bubblewrap, whose
 * sessions run on gVisor whatever the backend asked for. Real sandboxes: gVisor's kernel reports its
 * own release (4.4.0), never the host's.
 */
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createBubblewrapBackend } from '../src/backends/bubblewrap/index.js';
import { createGvisorBackend } from '../src/backends/gvisor/index.js';
import { buildEnvironment } from '../src/environments/build.js';
import type { SandcellServer } from '../src/server/index.js';
import { createSession } from '../src/session/session.js';
import { describeWhenAvailable, unavailableReason } from './support/backends.js';
import { client, startTestServer } from './support/server.js';

const gvisorReason = await unavailableReason(createGvisorBackend());
const rootfsReason = await unavailableReason(createBubblewrapBackend({ rootfs: 'runtime' }));
const reason = gvisorReason ?? rootfsReason;

const RELEASE = 'import platform\nprint(platform.release())';
const TEAM_KEY = 'team-key-12345';
const GUEST_KEY = 'guest-key-6789';

describeWhenAvailable('choosing gVisor per key and per environment', 'gvisor', reason, () => {
  let server: SandcellServer;
  let directory: string;
  const previousStore = process.env.SANDCELL_ENVIRONMENT_DIR;

  beforeAll(async () => {
    directory = await mkdtemp(path.join(os.tmpdir(), 'sandcell-isolation-'));
    // The sandboxes' uids reach the environment's /usr through it.
    await chmod(directory, 0o755);
    process.env.SANDCELL_ENVIRONMENT_DIR = path.join(directory, 'store');
    server = await startTestServer({
      backend: createBubblewrapBackend(),
      apiKeys: [`team:${TEAM_KEY}`, `guest:${GUEST_KEY}`],
      gvisorKeys: ['guest'],
    });
  }, 600_000);

  afterAll(async () => {
    await server?.close();
    if (previousStore === undefined) delete process.env.SANDCELL_ENVIRONMENT_DIR;
    else process.env.SANDCELL_ENVIRONMENT_DIR = previousStore;
    await rm(directory, { recursive: true, force: true });
  });

  it("a key named by --gvisor-key has its sessions on gVisor, its pauses checkpoints; another key's stay on bubblewrap", async () => {
    const run = async (key: string) => {
      const api = client(server, key);
      const { id } = await api.json<{ id: string }>('/v1/sessions', { method: 'POST', json: {} });
      const execution = await api.json<{ stdout: string }>(`/v1/sessions/${id}/executions`, {
        method: 'POST',
        json: { code: RELEASE },
      });
      return { api, id, release: execution.stdout.trim() };
    };
    const team = await run(TEAM_KEY);
    const guest = await run(GUEST_KEY);
    expect(team.release).toBe(os.release());
    expect(guest.release).toBe('4.4.0');
    const paused = await guest.api.json<{ kind: string }>(`/v1/sessions/${guest.id}/snapshots`, {
      method: 'POST',
      json: {},
    });
    expect(paused.kind).toBe('checkpoint');
    for (const { api, id } of [team, guest]) {
      expect((await api(`/v1/sessions/${id}`, { method: 'DELETE' })).status).toBe(204);
    }
  });

  it('an environment that asks for gVisor runs its sessions there, on its bubblewrap build', async () => {
    const descriptionFile = path.join(directory, 'walled.env.json');
    await writeFile(descriptionFile, JSON.stringify({ name: 'walled', isolation: 'gvisor', env: { WALL: 'gvisor' } }));
    await buildEnvironment({ file: descriptionFile, backend: 'bubblewrap' });
    const session = await createSession({ backend: 'bubblewrap', environmentName: 'walled', preloadModules: [] });
    try {
      expect(session.environment).toMatchObject({ name: 'walled', backend: 'gvisor', isolation: 'gvisor' });
      const execution = await session.run(`${RELEASE}\nimport os\nprint(os.environ["WALL"])`);
      expect(execution.stdout).toBe('4.4.0\ngvisor\n');
    } finally {
      await session.close();
    }
  }, 600_000);
});
