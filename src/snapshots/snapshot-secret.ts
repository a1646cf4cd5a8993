/**
 * The secret a server signs its snapshots with (snapshot-store.ts): 32 random
 * bytes made once in `<state dir>/snapshot-secret`, 0600, so a restarted server
 * verifies what it wrote before. Every node of a cluster must verify the
 * others' snapshots, so `SANDCELL_SNAPSHOT_SECRET` (hex, at least 32 bytes)
 * takes its place there. The secret never appears in a message or a log.
 */
import { randomBytes } from 'node:crypto';
import { link, mkdir, readFile, stat, unlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { InvalidInputError } from '../errors.js';

const SECRET_BYTES = 32;
const SECRET_FILE = 'snapshot-secret';
export const SNAPSHOT_SECRET_VARIABLE = 'SANDCELL_SNAPSHOT_SECRET';

/** The secret: the variable's, else the state directory's file, made if absent. */
export async function snapshotSecret(
  stateDirectory: string,
  environment: Record<string, string | undefined> = process.env,
): Promise<Buffer> {
  const given = environment[SNAPSHOT_SECRET_VARIABLE];
  if (given !== undefined && given !== '') return secretFromVariable(given);
  const file = path.join(stateDirectory, SECRET_FILE);
  await mkdir(stateDirectory, { recursive: true, mode: 0o700 });
  // Written whole under a name of its own, then linked into place: a process racing to make it
  // never reads a file that exists but is not written yet.
  const draft = `${file}.${process.pid}.${randomBytes(4).toString('hex')}`;
  await writeFile(draft, randomBytes(SECRET_BYTES), { flag: 'wx', mode: 0o600 });
  try {
    await link(draft, file);
  } catch (error) {
    // Made before (or by another process at the same moment): read that one.
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  } finally {
    await unlink(draft).catch(() => undefined);
  }
  return readSecretFile(file);
}

function secretFromVariable(value: string): Buffer {
  const trimmed = value.trim();
  if (!/^[0-9a-fA-F]+$/.test(trimmed) || trimmed.length % 2 !== 0 || trimmed.length < SECRET_BYTES * 2) {
    throw new InvalidInputError(
      `${SNAPSHOT_SECRET_VARIABLE} must be at least ${SECRET_BYTES} bytes written in hex (${SECRET_BYTES * 2} or more hex digits), e.g. the output of \`openssl rand -hex ${SECRET_BYTES}\`.`,
    );
  }
  return Buffer.from(trimmed, 'hex');
}

async function readSecretFile(file: string): Promise<Buffer> {
  const { mode, size } = await stat(file);
  if ((mode & 0o077) !== 0) {
    throw new InvalidInputError(
      `${file} can be read by other accounts (mode ${(mode & 0o777).toString(8)}); anyone who reads it can forge snapshots. Make it 0600 (chmod 600 ${file}).`,
    );
  }
  if (size !== SECRET_BYTES) {
    throw new InvalidInputError(
      `${file} is not a snapshot secret (${size} bytes, not ${SECRET_BYTES}); remove it to make a new one (the snapshots signed with it will no longer verify).`,
    );
  }
  return readFile(file);
}
