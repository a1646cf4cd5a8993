/**
 * The stand-ins for cloud object storage the tests use, each on 127.0.0.1:
 * Azurite (Microsoft's Azure Blob emulator, in memory, telemetry off) and
 * s3rver (an S3-compatible server). Each is stopped by what started it.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { BlobServiceClient } from '@azure/storage-blob';
import S3rver from 's3rver';

/** Azurite's well-known development account (public, the same in every installation). */
export const AZURITE_ACCOUNT = 'devstoreaccount1';
export const AZURITE_KEY = 'Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==';

export interface Azurite {
  /** AZURE_STORAGE_CONNECTION_STRING for the development account at this Azurite. */
  connectionString: string;
  /** A connection string with `key` in place of the account key (a wrong credential). */
  connectionStringWithKey(key: string): string;
  stop(): void;
}

/**
 * Azurite's blob service on a free port, with `containers` made, for the development account or
 * for `account` (Azurite's AZURITE_ACCOUNTS, which then replaces the development account).
 */
export async function startAzurite(containers: string[], account?: { name: string; key: string }): Promise<Azurite> {
  const name = account?.name ?? AZURITE_ACCOUNT;
  const azurite: ChildProcess = spawn(
    path.resolve(import.meta.dirname, '..', '..', 'node_modules', '.bin', 'azurite-blob'),
    [
      '--blobHost',
      '127.0.0.1',
      '--blobPort',
      '0',
      '--inMemoryPersistence',
      '--disableTelemetry',
      '--skipApiVersionCheck',
    ],
    {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, ...(account ? { AZURITE_ACCOUNTS: `${account.name}:${account.key}` } : {}) },
    },
  );
  const port = await new Promise<number>((resolve, reject) => {
    createInterface({ input: azurite.stdout as NodeJS.ReadableStream }).on('line', (line) => {
      const listening = /listens on http:\/\/127\.0\.0\.1:(\d+)/.exec(line);
      if (listening) resolve(Number(listening[1]));
    });
    azurite.once('exit', (code) => reject(new Error(`azurite exited (${code})`)));
  });
  const connectionStringWithKey = (key: string) =>
    `DefaultEndpointsProtocol=http;AccountName=${name};AccountKey=${key};BlobEndpoint=http://127.0.0.1:${port}/${name};`;
  const connectionString = connectionStringWithKey(account?.key ?? AZURITE_KEY);
  const service = BlobServiceClient.fromConnectionString(connectionString);
  for (const container of containers) await service.getContainerClient(container).create();
  return { connectionString, connectionStringWithKey, stop: () => azurite.kill() };
}

export interface S3Server {
  /** What the AWS SDK's default chain reads to reach it: endpoint, s3rver's fixed credentials, a region. */
  environment: Record<string, string>;
  /** Stops serving, keeping its objects (the store "goes away"). */
  close(): Promise<void>;
  /** Serves again on the same port, with the objects it had. */
  reopen(): Promise<void>;
  stop(): Promise<void>;
}

/** s3rver on a free port, its objects in a temporary directory, with `buckets` made. */
export async function startS3rver(buckets: string[]): Promise<S3Server> {
  const directory = mkdtempSync(path.join(os.tmpdir(), 'sandcell-s3rver-'));
  const open = (port: number) =>
    new S3rver({
      address: '127.0.0.1',
      port,
      silent: true,
      directory,
      configureBuckets: buckets.map((name) => ({ name, configs: [] })),
    });
  let server = open(0);
  const { port } = await server.run();
  let serving = true;
  return {
    environment: {
      AWS_ENDPOINT_URL: `http://127.0.0.1:${port}`,
      AWS_ACCESS_KEY_ID: 'S3RVER',
      AWS_SECRET_ACCESS_KEY: 'S3RVER',
      AWS_REGION: 'us-east-1',
    },
    close: async () => {
      serving = false;
      await server.close();
    },
    reopen: async () => {
      server = open(port);
      await server.run();
      serving = true;
    },
    stop: async () => {
      if (serving) await server.close();
      rmSync(directory, { recursive: true, force: true });
    },
  };
}
