/**
 * A real `sandcell serve` process on bubblewrap with a state directory, stopped
 * and started again: SIGTERM pauses its sessions and the next process resumes
 * each at its first request with its DataFrame; `kill -9` leaves no pause, and
 * the next process says the session was lost (410) rather than handing out an
 * empty sandbox; `kill -9` in the middle of a pause leaves either the whole
 * snapshot (resumed) or a clear "lost", never half a state.
 */
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createDockerBackend } from '../src/backends/docker/index.js';
import { describeWhenAvailable, unavailableReason } from './support/backends.js';
import {
  callServe as call,
  type Json,
  killServes,
  type Serve,
  startServe as startProcess,
  stopServe as stop,
} from './support/serve-process.js';

const stateDirectory = mkdtempSync(path.join(os.tmpdir(), 'sandcell-server-snapshots-'));

function startServe(backend: 'bubblewrap' | 'docker' = 'bubblewrap', directory = stateDirectory): Promise<Serve> {
  return startProcess([
    '--pool-size',
    '1',
    '--preload',
    'numpy,pandas',
    '--state-dir',
    directory,
    '--backend',
    backend,
  ]);
}

const run = (serve: Serve, id: string, code: string) => call(serve, `/v1/sessions/${id}/executions`, { code });

/** Whether the session's record (`paused/<owner>/<id>.json` in the store) is on disk. */
function recordOnDisk(id: string): boolean {
  const paused = path.join(stateDirectory, 'store', 'paused');
  return existsSync(paused) && readdirSync(paused).some((owner) => existsSync(path.join(paused, owner, `${id}.json`)));
}

afterAll(() => {
  killServes();
  rmSync(stateDirectory, { recursive: true, force: true });
});

/** SIGTERM pauses every session; the next server resumes each at its first request, DataFrame and files included. */
async function pausedAcrossRestart(backend: 'bubblewrap' | 'docker', directory: string): Promise<void> {
  const first = await startServe(backend, directory);
  const { json: session } = await call(first, '/v1/sessions', {});
  const made = await run(
    first,
    session.id,
    'import pandas as pd, socket\ndf = pd.DataFrame({"a": range(1000)})\nconn = socket.socket()\nopen("notes.txt", "w").write("kept")',
  );
  expect(made.json.status).toBe('ok');
  await stop(first, 'SIGTERM');
  expect(first.logs).toContainEqual(expect.objectContaining({ msg: 'session paused', session: session.id }));

  const second = await startServe(backend, directory);
  try {
    const listed = await call(second, `/v1/sessions/${session.id}`);
    expect(listed.json).toMatchObject({ state: 'paused', pauseReason: 'shutdown' });
    const resumed = await run(second, session.id, 'print(df.a.sum(), open("notes.txt").read())');
    expect(resumed.json.stdout).toBe('499500 kept\n');
    const live = await call(second, `/v1/sessions/${session.id}`);
    expect(live.json.state).toBe('running');
    const python = live.json.restored.contexts.find((context: Json) => context.id === 'python');
    expect(python.restored).toEqual(expect.arrayContaining(['df', 'pd']));
    expect(python.skipped).toEqual([{ name: 'conn', reason: 'socket' }]);
  } finally {
    await stop(second, 'SIGTERM');
  }
}

describe('sandcell serve stopped and started again, on one state directory (bubblewrap)', () => {
  it('SIGTERM pauses every session; the next server resumes each at its first request, DataFrame and files included', async () => {
    await pausedAcrossRestart('bubblewrap', stateDirectory);
  }, 120_000);

  it('kill -9 pauses nothing: the next server says the session was lost (410), and never runs it empty', async () => {
    const first = await startServe();
    const { json: session } = await call(first, '/v1/sessions', {});
    expect((await run(first, session.id, 'x = 1')).json.status).toBe('ok');
    // The session's record is written beside its start, not before it is answered: the kill comes
    // once it is on disk (a kill before it would find nothing of the session to report).
    await expect.poll(() => recordOnDisk(session.id), { timeout: 10_000 }).toBe(true);
    await stop(first, 'SIGKILL');
    const second = await startServe();
    try {
      const listed = await call(second, `/v1/sessions/${session.id}`);
      expect(listed.json).toMatchObject({ state: 'lost', lostReason: expect.stringContaining('without pausing it') });
      const refused = await run(second, session.id, 'x');
      expect(refused.status).toBe(410);
      expect(refused.json.error.code).toBe('session-lost');
    } finally {
      await stop(second, 'SIGTERM');
    }
  }, 120_000);

  it('kill -9 in the middle of a pause leaves the whole snapshot or a clear "lost", never half a state', async () => {
    const first = await startServe();
    const { json: session } = await call(first, '/v1/sessions', {});
    const big = 'import numpy as np\nbig = np.arange(6_000_000, dtype="float64")\nexpected = float(big.sum())';
    expect((await run(first, session.id, big)).json.status).toBe('ok');
    const pausing = fetch(`${first.url}/v1/sessions/${session.id}/pause`, { method: 'POST' }).catch(() => undefined);
    await new Promise((resolve) => setTimeout(resolve, 150));
    await stop(first, 'SIGKILL');
    await pausing;
    const second = await startServe();
    try {
      const listed = await call(second, `/v1/sessions/${session.id}`);
      expect(['paused', 'lost']).toContain(listed.json.state);
      const next = await run(second, session.id, 'float(big.sum()) == expected');
      if (listed.json.state === 'paused') {
        expect(next.json.results[0].data['text/plain']).toBe('True');
      } else {
        expect(next.status).toBe(410);
        expect(next.json.error.code).toBe('session-lost');
      }
    } finally {
      await stop(second, 'SIGTERM');
    }
  }, 120_000);
});

// The same over Docker: the archive crosses the container's attach stream as it crosses bubblewrap's pipes.
const docker = createDockerBackend();
describeWhenAvailable(
  'sandcell serve stopped and started again (docker)',
  'docker',
  await unavailableReason(docker),
  () => {
    it('SIGTERM pauses every session; the next server resumes each at its first request (docker)', async () => {
      const directory = mkdtempSync(path.join(os.tmpdir(), 'sandcell-server-snapshots-docker-'));
      try {
        await pausedAcrossRestart('docker', directory);
      } finally {
        rmSync(directory, { recursive: true, force: true });
      }
    }, 180_000);
  },
);
