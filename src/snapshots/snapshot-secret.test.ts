/**
 * The snapshot secret on a real file system: made once, 0600, the same for a
 * restarted server and for two processes racing to make it; the cluster's
 * variable instead of the file; a file others can read, or that is not a
 * secret, refused without its contents in the message.
 */
import { chmod, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { SNAPSHOT_SECRET_VARIABLE, snapshotSecret } from './snapshot-secret.js';

let directory: string;

beforeEach(async () => {
  directory = await mkdtemp(path.join(os.tmpdir(), 'sandcell-secret-'));
});
afterEach(async () => {
  await rm(directory, { recursive: true, force: true });
});

describe('snapshotSecret', () => {
  it('makes 32 random bytes once, 0600, and reads the same ones after', async () => {
    const state = path.join(directory, 'state');
    const [first, racing] = await Promise.all([snapshotSecret(state, {}), snapshotSecret(state, {})]);
    expect(first.length).toBe(32);
    expect(racing.equals(first)).toBe(true);
    expect((await snapshotSecret(state, {})).equals(first)).toBe(true);
    expect((await stat(path.join(state, 'snapshot-secret'))).mode & 0o777).toBe(0o600);
    expect((await stat(state)).mode & 0o777).toBe(0o700);
    expect(first.equals(await snapshotSecret(path.join(directory, 'other'), {}))).toBe(false);
  });

  it("takes a cluster's secret from the variable, in hex, and refuses one too short without echoing it", async () => {
    const hex = 'ab'.repeat(40);
    expect((await snapshotSecret(directory, { [SNAPSHOT_SECRET_VARIABLE]: hex })).toString('hex')).toBe(hex);
    for (const bad of [
      'ab'.repeat(31),
      'not hex at all, but long enough to pass a length check!!!!!!!!!!!!!!',
      'abc',
    ]) {
      const refusal = snapshotSecret(directory, { [SNAPSHOT_SECRET_VARIABLE]: bad });
      await expect(refusal).rejects.toThrow(`${SNAPSHOT_SECRET_VARIABLE} must be at least 32 bytes written in hex`);
      await expect(refusal).rejects.not.toThrow(bad);
    }
  });

  it('refuses a secret file other accounts can read, or one that is not a secret', async () => {
    const file = path.join(directory, 'snapshot-secret');
    await snapshotSecret(directory, {});
    await chmod(file, 0o644);
    await expect(snapshotSecret(directory, {})).rejects.toThrow('can be read by other accounts (mode 644)');
    await writeFile(file, 'short');
    await chmod(file, 0o600);
    await expect(snapshotSecret(directory, {})).rejects.toThrow('is not a snapshot secret (5 bytes, not 32)');
    expect(await readFile(file, 'utf8')).toBe('short');
  });
});
