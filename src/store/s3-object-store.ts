/**
 * The object store in an S3 bucket (`s3://BUCKET/PREFIX`), or any service
 * that speaks S3 (R2, MinIO, GCS's interoperability API) at `endpoint`.
 * Credentials are what the AWS SDK finds by itself (its default chain:
 * environment, shared config, instance roles); none is ever in a location, a
 * log or a message.
 *
 * A write streams: up to PART_BYTES it is one PutObject, past it a multipart
 * upload of PART_BYTES parts, two in flight, so memory stays bounded whatever
 * the size. S3 makes an object visible only when its upload completes, and an
 * upload whose body fails is aborted with its parts: a reader sees the old
 * object whole or the new one whole. `writeIfAbsent` is a PutObject with
 * `If-None-Match: *` (S3 refuses it with 412 when the key exists).
 */
import { Readable } from 'node:stream';
import {
  DeleteObjectCommand,
  GetObjectCommand,
  ListObjectsV2Command,
  type ListObjectsV2CommandOutput,
  PutObjectCommand,
  S3Client,
  type S3ClientConfig,
} from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import {
  checkKey,
  type LinkOptions,
  MAX_LINK_TTL_MS,
  type ObjectBody,
  type ObjectStore,
  type StoredObject,
  type WriteOptions,
  type WrittenObject,
} from './object-store.js';
import {
  boundedBytes,
  joinPrefix,
  MAX_CONDITIONAL_BYTES,
  measured,
  stripPrefix,
  tooLarge,
  writtenOf,
} from './remote-objects.js';

/** A multipart upload's part: S3's minimum is 5 MiB; two in flight bound a write's memory to about 16 MiB. */
const PART_BYTES = 8 * 1024 * 1024;
const PARTS_IN_FLIGHT = 2;

export interface S3ObjectStoreOptions {
  bucket: string;
  /** Words before every key (`sandcell/prod`); none by default. */
  prefix?: string;
  /** A client of the caller's; by default one from the SDK's defaults and `endpoint`. */
  client?: S3Client;
  /** An S3-compatible service's URL (also AWS_ENDPOINT_URL_S3 or AWS_ENDPOINT_URL). */
  endpoint?: string;
}

export class S3ObjectStore implements ObjectStore {
  readonly location: string;
  private readonly client: S3Client;
  private readonly bucket: string;
  private readonly prefix: string;

  constructor(options: S3ObjectStoreOptions) {
    this.bucket = options.bucket;
    this.prefix = options.prefix ?? '';
    this.location = `s3://${this.bucket}${this.prefix ? `/${this.prefix}` : ''}`;
    this.client = options.client ?? new S3Client(clientConfig(options.endpoint));
  }

  async write(key: string, body: ObjectBody, options?: WriteOptions): Promise<WrittenObject> {
    const measuring = measured(body, options);
    const upload = new Upload({
      client: this.client,
      params: {
        Bucket: this.bucket,
        Key: this.objectKey(key),
        Body: Readable.from(measuring.chunks, { highWaterMark: 1 }),
      },
      partSize: PART_BYTES,
      queueSize: PARTS_IN_FLIGHT,
      leavePartsOnError: false,
    });
    await upload.done();
    return measuring.written();
  }

  async writeIfAbsent(key: string, body: ObjectBody): Promise<WrittenObject | undefined> {
    // One PutObject carries the condition: a conditional write is a small object (a record, a claim).
    const bytes = await boundedBytes(body, MAX_CONDITIONAL_BYTES, key);
    try {
      await this.client.send(
        new PutObjectCommand({ Bucket: this.bucket, Key: this.objectKey(key), Body: bytes, IfNoneMatch: '*' }),
      );
    } catch (error) {
      // 412: the key exists. 409: a conditional write on it is under way; that one wins.
      const status = (error as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
      if (status === 412 || status === 409) return undefined;
      throw error;
    }
    return writtenOf(bytes);
  }

  async read(key: string, maxBytes: number): Promise<Uint8Array | undefined> {
    const stream = await this.get(key, maxBytes);
    return stream === undefined ? undefined : boundedBytes(stream, maxBytes, key);
  }

  open(key: string): Promise<AsyncIterable<Uint8Array> | undefined> {
    return this.get(key);
  }

  async *list(prefix: string): AsyncIterable<StoredObject> {
    let token: string | undefined;
    do {
      const page: ListObjectsV2CommandOutput = await this.client.send(
        new ListObjectsV2Command({
          Bucket: this.bucket,
          Prefix: joinPrefix(this.prefix, prefix),
          ...(token ? { ContinuationToken: token } : {}),
        }),
      );
      for (const object of page.Contents ?? []) {
        const key = object.Key === undefined ? undefined : stripPrefix(this.prefix, object.Key);
        if (key === undefined) continue;
        yield { key, bytes: object.Size ?? 0, modifiedAt: object.LastModified ?? new Date(0) };
      }
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token);
  }

  async delete(key: string): Promise<void> {
    // S3 answers a delete of a missing key with success.
    await this.client.send(new DeleteObjectCommand({ Bucket: this.bucket, Key: this.objectKey(key) }));
  }

  /** A presigned GET of this one object (SigV4: at most 7 days), saying its name and type to the browser. */
  async link(key: string, options: LinkOptions): Promise<string> {
    const { getSignedUrl } = await import('@aws-sdk/s3-request-presigner');
    const seconds = Math.ceil((options.expiresAt.getTime() - Date.now()) / 1000);
    if (seconds < 1 || seconds > MAX_LINK_TTL_MS / 1000)
      throw new Error(`A presigned link lasts 1 s to 7 days, not ${seconds} s.`);
    const command = new GetObjectCommand({
      Bucket: this.bucket,
      Key: this.objectKey(key),
      ResponseContentType: options.contentType,
      ResponseContentDisposition: options.contentDisposition,
    });
    return getSignedUrl(this.client, command, { expiresIn: seconds });
  }

  private objectKey(key: string): string {
    return joinPrefix(this.prefix, checkKey(key));
  }

  /** The object's body as a stream, or undefined when there is none; over `maxBytes`, an error before a byte is read. */
  private async get(key: string, maxBytes?: number): Promise<AsyncIterable<Uint8Array> | undefined> {
    try {
      const answer = await this.client.send(new GetObjectCommand({ Bucket: this.bucket, Key: this.objectKey(key) }));
      const size = answer.ContentLength;
      if (maxBytes !== undefined && size !== undefined && size > maxBytes) {
        (answer.Body as Readable | undefined)?.destroy?.();
        throw tooLarge(key, size, maxBytes, false);
      }
      return answer.Body as unknown as AsyncIterable<Uint8Array>;
    } catch (error) {
      if ((error as { name?: string }).name === 'NoSuchKey') return undefined;
      throw error;
    }
  }
}

/** The SDK's own defaults; an S3-compatible endpoint is addressed by path (`host/bucket/key`), as they expect. */
function clientConfig(endpoint: string | undefined): S3ClientConfig {
  const given = endpoint ?? process.env.AWS_ENDPOINT_URL_S3 ?? process.env.AWS_ENDPOINT_URL;
  return given ? { endpoint: given, forcePathStyle: true } : {};
}
