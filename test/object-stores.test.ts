/**
 * The object store contract (test/contract/object-store-contract.ts) on the
 * network drivers, against the most real service there is here (a directory's
 * is in src/store/fs-object-store.test.ts): Azure
 * Blob on Azurite (Microsoft's emulator, in memory, on 127.0.0.1, without
 * telemetry) through AZURE_STORAGE_CONNECTION_STRING; S3 on s3rver (an
 * S3-compatible server) through AWS_ENDPOINT_URL and the SDK's own credential
 * chain. s3rver ignores If-None-Match on a put, so the S3 driver's
 * conditional write is checked at its request in src/store/s3-object-store.test.ts.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FsObjectStore } from '../src/store/fs-object-store.js';
import { openObjectStore } from '../src/store/open-object-store.js';
import { runObjectStoreContract } from './contract/object-store-contract.js';
import {
  AZURITE_ACCOUNT,
  AZURITE_KEY,
  type Azurite,
  type S3Server,
  startAzurite,
  startS3rver,
} from './support/object-store-emulators.js';

const scratch = mkdtempSync(path.join(os.tmpdir(), 'sandcell-object-stores-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/** A prefix of its own for each case, so cases share one bucket or container. */
const casePrefix = () => `case-${randomBytes(6).toString('hex')}`;

describe('object store: Azure Blob on Azurite (azure://)', () => {
  let azurite: Azurite;
  let environment: Record<string, string>;

  beforeAll(async () => {
    azurite = await startAzurite(['sandcell']);
    environment = { AZURE_STORAGE_CONNECTION_STRING: azurite.connectionString };
  }, 60_000);
  afterAll(() => azurite?.stop());

  runObjectStoreContract({
    store: () => openObjectStore(`azure://${AZURITE_ACCOUNT}/sandcell/${casePrefix()}`, environment),
    conditionalWrites: true,
  });

  it('names the account it needs credentials for, and never a secret', async () => {
    const refused = await openObjectStore('azure://otheraccount/sandcell', environment).catch((error: Error) => error);
    expect((refused as Error).message).toContain('is for the account "devstoreaccount1", not "otheraccount"');
    expect((refused as Error).message).not.toContain(AZURITE_KEY);
  });

  it("without a connection string or a SAS, @azure/identity's default credential is used for the account", async () => {
    const store = await openObjectStore(`azure://${AZURITE_ACCOUNT}/sandcell/x`, {});
    expect(store.location).toBe(`azure://${AZURITE_ACCOUNT}/sandcell/x`);
  });
});

describe('object store: S3 on s3rver (s3://)', () => {
  let server: S3Server;
  const saved: Record<string, string | undefined> = {};

  beforeAll(async () => {
    server = await startS3rver(['sandcell']);
    // What the SDK's default chain reads.
    for (const [name, value] of Object.entries(server.environment)) {
      saved[name] = process.env[name];
      process.env[name] = value;
    }
  }, 60_000);
  afterAll(async () => {
    for (const [name, value] of Object.entries(saved)) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
    await server?.stop();
  });

  runObjectStoreContract({
    store: () => openObjectStore(`s3://sandcell/${casePrefix()}`),
    conditionalWrites: false,
  });
});

describe('store locations', () => {
  it('refuses what is not a store, saying what would be', async () => {
    for (const [location, why] of [
      ['ftp://host/x', 'use fs:///DIR, s3://BUCKET/PREFIX'],
      ['fs://relative/dir', 'absolute directory'],
      ['s3://Bad_Bucket/x', 'not an S3 bucket name'],
      ['s3://bucket/Upper/Case', 'its prefix must be'],
      ['azure://a/container', 'not a storage account name'],
      ['azure://account/x', 'not a container name'],
    ] as const) {
      await expect(openObjectStore(location, {}), location).rejects.toThrow(why);
    }
  });

  it('an fs:// store is the directory it names', async () => {
    const directory = mkdtempSync(path.join(scratch, 'named-'));
    const store = await openObjectStore(`fs://${directory}`);
    expect(store).toBeInstanceOf(FsObjectStore);
    expect(store.location).toBe(`fs://${directory}`);
  });
});
