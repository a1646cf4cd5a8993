/**
 * `sandcell serve --store`: paused sessions in a store that several servers
 * share, on the most real stand-ins there are here (Azurite for Azure Blob,
 * s3rver for S3), with real `sandcell serve` processes on bubblewrap. A session
 * paused by one server resumes on another with its variables and files; of two
 * servers asked to resume one session at once, exactly one does (Azure's
 * conditional writes; s3rver ignores them, so that race runs on Azurite); a
 * session live on one server is not called lost by another; wrong credentials
 * or a missing secret stop the server at start, saying why without the secret.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Azurite, type S3Server, startAzurite, startS3rver } from './support/object-store-emulators.js';
import { runProcess } from './support/process.js';
import { readmeBlock, scratchClone, startServeLine } from './support/readme.js';
import {
  callServe as call,
  killServes,
  type Serve,
  serveRefusal,
  startServe,
  stopServe,
} from './support/serve-process.js';

const BIN = path.resolve(import.meta.dirname, '..', 'bin', 'sandcell.js');
/** The account docs/snapshots.md names, made in Azurite (which then has no other). */
const AZURITE_ACCOUNT = 'myaccount';
const AZURITE_KEY = randomBytes(64).toString('base64');
const scratch = mkdtempSync(path.join(os.tmpdir(), 'sandcell-shared-store-'));
const SECRET = randomBytes(32).toString('hex');

afterAll(() => {
  killServes();
  rmSync(scratch, { recursive: true, force: true });
});

const run = (serve: Serve, id: string, code: string) => call(serve, `/v1/sessions/${id}/executions`, { code });

/** A server on the store, named `node`, with a state directory of its own (conversations stay per server). */
function serveOn(store: string, node: string, env: Record<string, string>): Promise<Serve> {
  return startServe(
    [
      '--pool-size',
      '1',
      '--preload',
      'none',
      '--no-ui',
      '--state-dir',
      mkdtempSync(path.join(scratch, `${node}-`)),
      '--store',
      store,
    ],
    { ...env, SANDCELL_SNAPSHOT_SECRET: SECRET, SANDCELL_NODE_NAME: node },
  );
}

/** One server pauses a session; the other resumes it with its variables and files, and the first no longer has it. */
async function pausedOnOneResumedOnAnother(store: string, env: Record<string, string>): Promise<void> {
  const [first, second] = await Promise.all([serveOn(store, 'node-a', env), serveOn(store, 'node-b', env)]);
  try {
    expect(first.logs).toContainEqual(expect.objectContaining({ msg: 'paused sessions are kept in the store', store }));
    const { json: session } = await call(first, '/v1/sessions', {});
    expect((await run(first, session.id, 'x = 41\nopen("notes.txt", "w").write("kept")')).json.status).toBe('ok');

    // Live on the first server: the second says where it lives, and does not call it lost.
    const elsewhere = await run(second, session.id, 'print(1)');
    expect(elsewhere.status).toBe(409);
    expect(elsewhere.json.error).toMatchObject({ code: 'session-elsewhere' });
    expect(elsewhere.json.error.message).toContain('"node-a"');

    expect((await call(first, `/v1/sessions/${session.id}/pause`, {})).status).toBe(200);
    expect((await call(second, `/v1/sessions/${session.id}`)).json).toMatchObject({ state: 'paused' });
    const resumed = await run(second, session.id, 'print(x + 1, open("notes.txt").read())');
    expect(resumed.json.stdout).toBe('42 kept\n');
    expect((await call(second, `/v1/sessions/${session.id}`)).json.state).toBe('running');
    // Now live on the second: the first sends its requests there.
    const moved = await run(first, session.id, 'print(x)');
    expect(moved.json.error).toMatchObject({ code: 'session-elsewhere' });
    expect(moved.json.error.message).toContain('"node-b"');

    // SIGTERM pauses it into the store, and the first server resumes it.
    await stopServe(second, 'SIGTERM');
    const back = await run(first, session.id, 'print(x)');
    expect(back.json.stdout).toBe('41\n');
  } finally {
    await Promise.all([stopServe(first, 'SIGTERM'), stopServe(second, 'SIGTERM')]);
  }
}

describe('sandcell serve --store azure:// (Azurite)', () => {
  let azurite: Azurite;
  let env: Record<string, string>;
  beforeAll(async () => {
    azurite = await startAzurite(['sandcell'], { name: AZURITE_ACCOUNT, key: AZURITE_KEY });
    env = { AZURE_STORAGE_CONNECTION_STRING: azurite.connectionString };
  }, 60_000);
  afterAll(() => azurite?.stop());

  it('a session paused by one server resumes on another sharing the store, variables and files included', async () => {
    await pausedOnOneResumedOnAnother(`azure://${AZURITE_ACCOUNT}/sandcell/resume`, env);
  }, 180_000);

  it('store-azure (docs/snapshots.md): doctor passes, the server keeps its paused sessions in the container, and snapshots list reads them', async () => {
    await storeBlockRuns('store-azure', `azure://${AZURITE_ACCOUNT}/sandcell`, env);
  }, 300_000);

  it('two servers asked to resume one paused session at once: exactly one does, the other says so', async () => {
    const store = `azure://${AZURITE_ACCOUNT}/sandcell/race`;
    const [first, second] = await Promise.all([serveOn(store, 'node-a', env), serveOn(store, 'node-b', env)]);
    try {
      const { json: session } = await call(first, '/v1/sessions', {});
      expect((await run(first, session.id, 'x = 7')).json.status).toBe('ok');
      expect((await call(first, `/v1/sessions/${session.id}/pause`, {})).status).toBe(200);
      const answers = await Promise.all([run(first, session.id, 'print(x)'), run(second, session.id, 'print(x)')]);
      const ran = answers.filter((answer) => answer.status === 200);
      expect(ran).toHaveLength(1);
      expect(ran[0]?.json.stdout).toBe('7\n');
      const refused = answers.find((answer) => answer.status !== 200);
      expect(refused).toMatchObject({ status: 409, json: { error: { code: 'session-elsewhere' } } });
    } finally {
      await Promise.all([stopServe(first, 'SIGTERM'), stopServe(second, 'SIGTERM')]);
    }
  }, 180_000);

  it('wrong credentials stop the server at start, naming the store and not the key', async () => {
    const wrongKey = Buffer.from(randomBytes(64)).toString('base64');
    const refused = await serveRefusal(['--preload', 'none', '--store', `azure://${AZURITE_ACCOUNT}/sandcell`], {
      AZURE_STORAGE_CONNECTION_STRING: azurite.connectionStringWithKey(wrongKey),
      SANDCELL_SNAPSHOT_SECRET: SECRET,
    });
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain(`Cannot use the store azure://${AZURITE_ACCOUNT}/sandcell`);
    expect(refused.stderr).not.toContain(wrongKey);
    expect(refused.stderr).not.toContain(AZURITE_KEY);
  }, 60_000);

  it('a shared store without SANDCELL_SNAPSHOT_SECRET stops the server at start, saying what to set', async () => {
    const refused = await serveRefusal(['--preload', 'none', '--store', `azure://${AZURITE_ACCOUNT}/sandcell`], {
      ...env,
      SANDCELL_SNAPSHOT_SECRET: '',
    });
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain('needs SANDCELL_SNAPSHOT_SECRET');
  }, 60_000);
});

/**
 * A docs/snapshots.md store block, run as written in bash (doctor, then serve) with the store's
 * credentials and the secret in the environment, as the text says to set them: doctor passes,
 * the server proves the store, and a session it held is in the store once it stopped, as
 * `sandcell snapshots list --store` reads it.
 */
async function storeBlockRuns(id: string, store: string, env: Record<string, string>): Promise<void> {
  const clone = scratchClone();
  const blockEnv = {
    ...env,
    SANDCELL_SNAPSHOT_SECRET: SECRET,
    SANDCELL_STATE_DIR: mkdtempSync(path.join(scratch, 'readme-')),
  };
  try {
    const code = readmeBlock(id).code;
    const first = await startServeLine(code, { cwd: clone, env: blockEnv });
    const url = `http://127.0.0.1:${first.port}`;
    let sessionId: string;
    try {
      expect(first.output()).toContain(`✓ Store ${store}: written, read back, listed and deleted`);
      expect(first.output()).toContain("✓ The store's clock agrees with this machine's");
      expect(first.output()).toContain('✓ Links to published outputs (--publish-outputs) download what was written');
      expect(first.output()).not.toContain('Some checks failed');
      expect(first.output()).toContain('paused sessions are kept in the store');
      const session = (await (await fetch(`${url}/v1/sessions`, { method: 'POST' })).json()) as { id: string };
      sessionId = session.id;
      const made = await fetch(`${url}/v1/sessions/${sessionId}/executions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ code: 'x = 5' }),
      });
      expect(made.status).toBe(200);
    } finally {
      await first.stop();
    }
    // Paused into the store at SIGTERM (a session paused there resumes on another server: the tests above).
    const listed = await runProcess(process.execPath, [BIN, 'snapshots', 'list', '--store', store, '--json'], {
      env: blockEnv,
    });
    expect(listed.stderr).toBe('');
    const report = JSON.parse(listed.stdout);
    expect(report.location).toBe(store);
    expect(report.snapshots).toContainEqual(expect.objectContaining({ sessionId, pausedSession: sessionId }));
  } finally {
    rmSync(clone, { recursive: true, force: true });
  }
}

describe('sandcell serve --store s3:// (s3rver)', () => {
  let s3: S3Server;
  beforeAll(async () => {
    s3 = await startS3rver(['sandcell', 'my-bucket']);
  }, 60_000);
  afterAll(() => s3?.stop());

  it('a session paused by one server resumes on another sharing the store, variables and files included', async () => {
    await pausedOnOneResumedOnAnother('s3://sandcell/resume', s3.environment);
  }, 180_000);

  it('store-s3 (docs/snapshots.md): doctor passes, the server keeps its paused sessions in the bucket, and snapshots list reads them', async () => {
    await storeBlockRuns('store-s3', 's3://my-bucket/sandcell', s3.environment);
  }, 300_000);

  it('no credentials stop the server at start, naming the store (s3rver checks no signature, so none wrong)', async () => {
    const { AWS_ACCESS_KEY_ID: _id, AWS_SECRET_ACCESS_KEY: _key, ...endpoint } = s3.environment;
    const refused = await serveRefusal(['--preload', 'none', '--store', 's3://sandcell/x'], {
      ...endpoint,
      // Nothing of the default chain is found: no variables, no shared files, no instance metadata.
      AWS_ACCESS_KEY_ID: '',
      AWS_SECRET_ACCESS_KEY: '',
      AWS_SHARED_CREDENTIALS_FILE: path.join(scratch, 'none'),
      AWS_CONFIG_FILE: path.join(scratch, 'none'),
      AWS_EC2_METADATA_DISABLED: 'true',
      SANDCELL_SNAPSHOT_SECRET: SECRET,
    });
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain('Cannot use the store s3://sandcell/x: CredentialsProviderError');
  }, 60_000);

  it('a bucket that does not exist stops the server at start', async () => {
    const refused = await serveRefusal(['--preload', 'none', '--store', 's3://no-such-bucket'], {
      ...s3.environment,
      SANDCELL_SNAPSHOT_SECRET: SECRET,
    });
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain('Cannot use the store s3://no-such-bucket: NoSuchBucket');
  }, 60_000);
});
