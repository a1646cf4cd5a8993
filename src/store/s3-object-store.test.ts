/**
 * The S3 driver's requests where no local server shows their effect: a
 * conditional write is a PutObject with `If-None-Match: *`, and S3's refusals
 * of it (412 when the key exists, 409 while another conditional write of it
 * is under way) mean "taken", not an error. The client is AWS's own, with its
 * transport replaced by aws-sdk-client-mock; every other behaviour runs
 * against s3rver in test/object-stores.test.ts.
 */
import { createHash } from 'node:crypto';
import { PutObjectCommand, S3Client, S3ServiceException } from '@aws-sdk/client-s3';
import { mockClient } from 'aws-sdk-client-mock';
import { afterEach, describe, expect, it } from 'vitest';
import { S3ObjectStore } from './s3-object-store.js';

const client = new S3Client({ region: 'us-east-1', credentials: { accessKeyId: 'id', secretAccessKey: 'secret' } });
const s3 = mockClient(client);
afterEach(() => s3.reset());

function refusal(status: number, name: string): S3ServiceException {
  return new S3ServiceException({ name, $fault: 'client', $metadata: { httpStatusCode: status }, message: name });
}

describe('S3ObjectStore.writeIfAbsent', () => {
  const store = new S3ObjectStore({ bucket: 'bucket', prefix: 'team/a', client });

  it('puts the object with If-None-Match: * under its prefix, and says what it wrote', async () => {
    s3.on(PutObjectCommand).resolves({});
    const written = await store.writeIfAbsent('catalog/session', Buffer.from('claim'));
    expect(written).toEqual({ bytes: 5, sha256: createHash('sha256').update('claim').digest('hex') });
    const [call] = s3.commandCalls(PutObjectCommand);
    expect(call?.args[0].input).toMatchObject({ Bucket: 'bucket', Key: 'team/a/catalog/session', IfNoneMatch: '*' });
    expect(Buffer.from(call?.args[0].input.Body as Uint8Array).toString()).toBe('claim');
  });

  it('answers undefined when S3 says the key is taken (412) or being taken (409)', async () => {
    s3.on(PutObjectCommand)
      .rejectsOnce(refusal(412, 'PreconditionFailed'))
      .rejectsOnce(refusal(409, 'ConditionalRequestConflict'));
    expect(await store.writeIfAbsent('catalog/session', Buffer.from('late'))).toBeUndefined();
    expect(await store.writeIfAbsent('catalog/session', Buffer.from('later'))).toBeUndefined();
  });

  it('passes any other failure on (a wrong key, a missing bucket)', async () => {
    s3.on(PutObjectCommand).rejects(refusal(403, 'AccessDenied'));
    await expect(store.writeIfAbsent('catalog/session', Buffer.from('x'))).rejects.toThrow('AccessDenied');
  });

  it('takes only a small body: a conditional write is a claim, never an archive', async () => {
    s3.on(PutObjectCommand).resolves({});
    await expect(store.writeIfAbsent('catalog/big', Buffer.alloc(4 * 1024 * 1024 + 1))).rejects.toThrow(
      'over the 4194304 expected',
    );
    expect(s3.commandCalls(PutObjectCommand)).toHaveLength(0);
  });
});
