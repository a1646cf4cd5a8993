/**
 * OutputPublisher on a directory store (the server signs its own links) and
 * its S3 links as the SDK presigns them (no network: a presigned URL is made
 * offline). The sandbox side and the clouds are in test/server-published-outputs.test.ts.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { S3Client } from '@aws-sdk/client-s3';
import pino from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { FsObjectStore } from '../../store/fs-object-store.js';
import { listKeys } from '../../store/object-store.js';
import { S3ObjectStore } from '../../store/s3-object-store.js';
import { OutputPublisher, outputKey } from './output-publisher.js';

const scratch = mkdtempSync(path.join(os.tmpdir(), 'sandcell-output-publisher-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));
const logger = pino({ level: 'silent' });

async function* chunks(...parts: string[]): AsyncIterable<Uint8Array> {
  for (const part of parts) yield Buffer.from(part);
}

function onDirectory(linkTtlMs = 60_000) {
  const objects = new FsObjectStore(mkdtempSync(path.join(scratch, 'store-')));
  const secret = randomBytes(32);
  return {
    objects,
    publisher: new OutputPublisher(async () => ({ objects, secret }), { linkTtlMs, logger, retryPauseMs: 1 }),
  };
}

const tokenOf = (url: string) => url.slice('/v1/outputs/'.length);

describe('published outputs on a directory store', () => {
  it('uploads each file under its owner and session, and links it with a token that names only that file', async () => {
    const { objects, publisher } = onDirectory();
    const [chart, table] = await publisher.publish(
      'owner-a',
      'session1',
      [
        { path: 'out/Chart 1.PNG', size: 6 },
        { path: 'table.csv', size: 4 },
      ],
      (file) => (file.path === 'table.csv' ? chunks('a,b\n') : chunks('png', 'png')),
    );
    expect(chart).toMatchObject({ path: 'out/Chart 1.PNG', size: 6, url: expect.stringMatching(/^\/v1\/outputs\//) });
    expect(new Date(chart?.expiresAt as string).getTime()).toBeGreaterThan(Date.now());
    expect(table).toMatchObject({ path: 'table.csv', size: 4 });
    const keys = await listKeys(objects, 'outputs/');
    expect(keys.sort()).toEqual(
      [outputKey('owner-a', 'session1', 'out/Chart 1.PNG'), outputKey('owner-a', 'session1', 'table.csv')].sort(),
    );
    expect(keys.every((key) => key.includes('/session1/'))).toBe(true);

    const resolved = await publisher.resolve(tokenOf(chart?.url as string));
    expect(resolved?.path).toBe('out/Chart 1.PNG');
    expect(resolved?.key).toBe(outputKey('owner-a', 'session1', 'out/Chart 1.PNG'));
  });

  it('refuses a changed, foreign, expired or oversized token', async () => {
    const { publisher } = onDirectory(1000);
    const [file] = await publisher.publish('owner', 'session1', [{ path: 'a.txt', size: 1 }], () => chunks('a'));
    const token = tokenOf(file?.url as string);
    const [payload, signature] = token.split('.') as [string, string];
    // Another file's key under the same signature: the HMAC covers the payload.
    const forged = Buffer.from(JSON.stringify({ k: 'outputs/x/y/z/b.txt', p: 'b.txt', e: 9_999_999_999 })).toString(
      'base64url',
    );
    expect(await publisher.resolve(`${forged}.${signature}`)).toBeUndefined();
    expect(await publisher.resolve(`${payload}.${Buffer.alloc(32).toString('base64url')}`)).toBeUndefined();
    expect(await onDirectory().publisher.resolve(token)).toBeUndefined(); // another store's secret
    expect(await publisher.resolve('x'.repeat(5000))).toBeUndefined();
    expect(await publisher.resolve('')).toBeUndefined();
    expect(await publisher.resolve(token)).toBeDefined();
    await new Promise((resolve) => setTimeout(resolve, 2100));
    expect(await publisher.resolve(token)).toBeUndefined();
  });

  it('a file whose upload keeps failing is reported with why, and the others are published', async () => {
    const { publisher } = onDirectory();
    let tries = 0;
    const files = await publisher.publish(
      'owner',
      'session1',
      [
        { path: 'bad.bin', size: 3 },
        { path: 'good.txt', size: 2 },
      ],
      (file) => {
        if (file.path === 'good.txt') return chunks('ok');
        tries++;
        return (async function* () {
          yield Buffer.from('x');
          throw new Error('the file changed while it was read');
        })();
      },
    );
    expect(tries).toBe(3);
    expect(files[0]).toEqual({ path: 'bad.bin', size: 3, error: 'not published: the file changed while it was read' });
    expect(files[1]?.url).toBeDefined();
  });

  it('publishes at most 100 files after one execution; the rest are listed, to follow after the next', async () => {
    const { publisher } = onDirectory();
    const files = Array.from({ length: 103 }, (_, index) => ({ path: `f${index}.txt`, size: 1 }));
    const published = await publisher.publish('owner', 'session1', files, () => chunks('x'));
    expect(published.filter((file) => file.url)).toHaveLength(100);
    expect(published.slice(100).map((file) => file.error)).toEqual(
      Array(3).fill('not published yet: one execution publishes at most 100 files; the rest follow after the next'),
    );
  });

  it('check() publishes a probe, verifies its link and leaves nothing; expire() deletes old outputs', async () => {
    const { objects, publisher } = onDirectory();
    await publisher.check();
    expect(await listKeys(objects, 'outputs/')).toEqual([]);
    await publisher.publish('owner', 'session1', [{ path: 'a.txt', size: 1 }], () => chunks('a'));
    expect(await publisher.expire(60_000)).toBe(0);
    expect(await publisher.expire(0, Date.now() + 1000)).toBe(1);
    expect(await listKeys(objects, 'outputs/')).toEqual([]);
  });
});

describe('published outputs on S3: the presigned link', () => {
  it('is a GET of that one key for the link TTL, naming the file and its type for the browser', async () => {
    const client = new S3Client({
      region: 'eu-west-1',
      credentials: { accessKeyId: 'AKIAEXAMPLE', secretAccessKey: 'secret-example-0123456789' },
    });
    const store = new S3ObjectStore({ bucket: 'outputs-bucket', prefix: 'team', client });
    const key = outputKey('owner', 'session1', 'chart.png');
    const url = new URL(
      await store.link(key, {
        expiresAt: new Date(Date.now() + 3_600_000),
        contentType: 'image/png',
        contentDisposition: "inline; filename*=UTF-8''chart.png",
      }),
    );
    expect(url.hostname).toBe('outputs-bucket.s3.eu-west-1.amazonaws.com');
    expect(url.pathname).toBe(`/team/${key}`);
    expect(url.searchParams.get('X-Amz-Expires')).toBe('3600');
    expect(url.searchParams.get('X-Amz-SignedHeaders')).toBe('host');
    expect(url.searchParams.get('X-Amz-Signature')).toMatch(/^[0-9a-f]{64}$/);
    expect(url.searchParams.get('response-content-type')).toBe('image/png');
    expect(url.searchParams.get('response-content-disposition')).toBe("inline; filename*=UTF-8''chart.png");
    expect(url.search).not.toContain('secret-example');
    await expect(
      store.link(key, {
        expiresAt: new Date(Date.now() + 8 * 24 * 3_600_000),
        contentType: 'x/y',
        contentDisposition: 'inline',
      }),
    ).rejects.toThrow('1 s to 7 days');
  });
});
