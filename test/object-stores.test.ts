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
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { BlobServiceClient } from '@azure/storage-blob';
import S3rver from 's3rver';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FsObjectStore } from '../src/store/fs-object-store.js';
import { openObjectStore } from '../src/store/open-object-store.js';
import { runObjectStoreContract } from './contract/object-store-contract.js';

/** Azurite's well-known development account (public, the same in every installation). */
const AZURITE_ACCOUNT = 'devstoreaccount1';
const AZURITE_KEY = 'Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==';

const scratch = mkdtempSync(path.join(os.tmpdir(), 'sandcell-object-stores-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/** A prefix of its own for each case, so cases share one bucket or container. */
const casePrefix = () => `case-${randomBytes(6).toString('hex')}`;

describe('object store: Azure Blob on Azurite (azure://)', () => {
  let azurite: ChildProcess;
  let environment: Record<string, string>;

  beforeAll(async () => {
    azurite = spawn(
      path.resolve('node_modules/.bin/azurite-blob'),
      [
        '--blobHost',
        '127.0.0.1',
        '--blobPort',
        '0',
        '--inMemoryPersistence',
        '--disableTelemetry',
        '--skipApiVersionCheck',
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    const port = await new Promise<number>((resolve, reject) => {
      createInterface({ input: azurite.stdout as NodeJS.ReadableStream }).on('line', (line) => {
        const listening = /listens on http:\/\/127\.0\.0\.1:(\d+)/.exec(line);
        if (listening) resolve(Number(listening[1]));
      });
      azurite.once('exit', (code) => reject(new Error(`azurite exited (${code})`)));
    });
    environment = {
      AZURE_STORAGE_CONNECTION_STRING: `DefaultEndpointsProtocol=http;AccountName=${AZURITE_ACCOUNT};AccountKey=${AZURITE_KEY};BlobEndpoint=http://127.0.0.1:${port}/${AZURITE_ACCOUNT};`,
    };
    await BlobServiceClient.fromConnectionString(environment.AZURE_STORAGE_CONNECTION_STRING as string)
      .getContainerClient('sandcell')
      .create();
  }, 60_000);
  afterAll(() => {
    azurite?.kill();
  });

  runObjectStoreContract({
    store: () => openObjectStore(`azure://${AZURITE_ACCOUNT}/sandcell/${casePrefix()}`, environment),
    conditionalWrites: true,
  });

  it('names the account it needs credentials for, and never a secret', async () => {
    await expect(openObjectStore('azure://otheraccount/sandcell', environment)).rejects.toThrow(
      'is for the account "devstoreaccount1", not "otheraccount"',
    );
    const refused = await openObjectStore('azure://devstoreaccount1/sandcell', {}).catch((error: Error) => error);
    expect((refused as Error).message).toContain('set AZURE_STORAGE_CONNECTION_STRING');
    expect((refused as Error).message).not.toContain(AZURITE_KEY);
  });
});

describe('object store: S3 on s3rver (s3://)', () => {
  let server: S3rver;
  const saved: Record<string, string | undefined> = {};

  beforeAll(async () => {
    server = new S3rver({
      address: '127.0.0.1',
      port: 0,
      silent: true,
      directory: mkdtempSync(path.join(scratch, 's3rver-')),
      configureBuckets: [{ name: 'sandcell', configs: [] }],
    });
    const { port } = await server.run();
    // What the SDK's default chain reads; s3rver's fixed development credentials.
    const environment: Record<string, string> = {
      AWS_ENDPOINT_URL: `http://127.0.0.1:${port}`,
      AWS_ACCESS_KEY_ID: 'S3RVER',
      AWS_SECRET_ACCESS_KEY: 'S3RVER',
      AWS_REGION: 'us-east-1',
    };
    for (const [name, value] of Object.entries(environment)) {
      saved[name] = process.env[name];
      process.env[name] = value;
    }
  }, 60_000);
  afterAll(async () => {
    for (const [name, value] of Object.entries(saved)) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
    await server?.close();
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
