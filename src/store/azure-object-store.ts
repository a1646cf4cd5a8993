/**
 * The object store in an Azure Blob container
 * (`azure://ACCOUNT/CONTAINER/PREFIX`). Credentials are what Azure's SDK is
 * given: a connection string (AZURE_STORAGE_CONNECTION_STRING, which also
 * names the endpoint, e.g. Azurite's), a SAS token (AZURE_STORAGE_SAS_TOKEN)
 * for the account's endpoint, or else `@azure/identity`'s default credential
 * (a managed identity, a workload identity, `az login`); none is ever in a
 * location, a log or a message.
 *
 * A write streams as blocks of BLOCK_BYTES, two in flight, and commits the
 * block list once the body has ended: until then the blob is the old one whole
 * (uncommitted blocks of a failed write are never visible, and Azure drops
 * them). `writeIfAbsent` commits with `If-None-Match: *`.
 */
import { Readable } from 'node:stream';
import {
  type BlobGenerateSasUrlOptions,
  BlobSASPermissions,
  BlobServiceClient,
  type ContainerClient,
  RestError,
  StorageSharedKeyCredential,
  type UserDelegationKey,
} from '@azure/storage-blob';
import { InvalidInputError } from '../errors.js';
import {
  checkKey,
  type LinkOptions,
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

const BLOCK_BYTES = 8 * 1024 * 1024;
const BLOCKS_IN_FLIGHT = 2;
/** A user delegation key (an identity's signer) is asked for this long, and renewed an hour before it ends. */
const DELEGATION_KEY_MS = 24 * 3600_000;
const DELEGATION_RENEW_MS = 3600_000;

export interface AzureObjectStoreOptions {
  /** The container's client (its account, credentials and endpoint). */
  container: ContainerClient;
  /** The account's client, for a user delegation key when the credential is an identity (links). */
  service?: BlobServiceClient;
  /** `azure://ACCOUNT/CONTAINER`: what the store says it is. */
  account: string;
  /** Words before every key; none by default. */
  prefix?: string;
}

export class AzureObjectStore implements ObjectStore {
  readonly location: string;
  private readonly container: ContainerClient;
  private readonly service?: BlobServiceClient;
  private readonly prefix: string;
  private delegation?: { key: Promise<UserDelegationKey>; until: number };

  constructor(options: AzureObjectStoreOptions) {
    this.container = options.container;
    this.service = options.service;
    this.prefix = options.prefix ?? '';
    this.location = `azure://${options.account}/${options.container.containerName}${this.prefix ? `/${this.prefix}` : ''}`;
  }

  async write(key: string, body: ObjectBody, options?: WriteOptions): Promise<WrittenObject> {
    const measuring = measured(body, options);
    await this.blob(key).uploadStream(
      Readable.from(measuring.chunks, { highWaterMark: 1 }),
      BLOCK_BYTES,
      BLOCKS_IN_FLIGHT,
    );
    return measuring.written();
  }

  async writeIfAbsent(key: string, body: ObjectBody): Promise<WrittenObject | undefined> {
    const bytes = await boundedBytes(body, MAX_CONDITIONAL_BYTES, key);
    try {
      await this.blob(key).upload(bytes, bytes.byteLength, { conditions: { ifNoneMatch: '*' } });
    } catch (error) {
      // 409 BlobAlreadyExists (412 from some versions): the key is taken.
      if (error instanceof RestError && (error.statusCode === 409 || error.statusCode === 412)) return undefined;
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
    for await (const blob of this.container.listBlobsFlat({ prefix: joinPrefix(this.prefix, prefix) })) {
      const key = stripPrefix(this.prefix, blob.name);
      if (key === undefined) continue;
      yield { key, bytes: blob.properties.contentLength ?? 0, modifiedAt: blob.properties.lastModified };
    }
  }

  async delete(key: string): Promise<void> {
    await this.blob(key).deleteIfExists();
  }

  /**
   * A read-only SAS for this one blob (`sr=b`, `sp=r`), signed with the account key of a connection
   * string, or with a user delegation key when the credential is an identity. A SAS token given to
   * sandcell cannot sign another: that is an error, said at start when links are wanted.
   */
  async link(key: string, options: LinkOptions): Promise<string> {
    const blob = this.blob(key);
    const sas: BlobGenerateSasUrlOptions = {
      permissions: BlobSASPermissions.parse('r'),
      expiresOn: options.expiresAt,
      contentType: options.contentType,
      contentDisposition: options.contentDisposition,
    };
    if (blob.credential instanceof StorageSharedKeyCredential) return blob.generateSasUrl(sas);
    if (this.service && !blob.url.includes('sig=')) {
      return blob.generateUserDelegationSasUrl(sas, await this.delegationKey(options.expiresAt));
    }
    throw new Error(
      'links need a signer: a connection string with the account key, or an identity (@azure/identity) with the Storage Blob Delegator role; a SAS token cannot sign links',
    );
  }

  /** A user delegation key valid past `until` (one is asked for a day, and reused). */
  private delegationKey(until: Date): Promise<UserDelegationKey> {
    const now = Date.now();
    if (!this.delegation || this.delegation.until - DELEGATION_RENEW_MS < Math.max(now, until.getTime())) {
      const ends = Math.max(now + DELEGATION_KEY_MS, until.getTime() + DELEGATION_RENEW_MS);
      const service = this.service as BlobServiceClient;
      const key = service.getUserDelegationKey(new Date(now - 5 * 60_000), new Date(ends)).then((answer) => answer);
      this.delegation = { key, until: ends };
      key.catch(() => {
        if (this.delegation?.key === key) this.delegation = undefined;
      });
    }
    return this.delegation.key;
  }

  private blob(key: string) {
    return this.container.getBlockBlobClient(joinPrefix(this.prefix, checkKey(key)));
  }

  /** The blob's body as a stream, or undefined when there is none; over `maxBytes`, an error before a byte is read. */
  private async get(key: string, maxBytes?: number): Promise<AsyncIterable<Uint8Array> | undefined> {
    try {
      const answer = await this.blob(key).download(0);
      const size = answer.contentLength;
      if (maxBytes !== undefined && size !== undefined && size > maxBytes) {
        (answer.readableStreamBody as Readable | undefined)?.destroy();
        throw tooLarge(key, size, maxBytes, false);
      }
      return answer.readableStreamBody as AsyncIterable<Uint8Array> | undefined;
    } catch (error) {
      if (error instanceof RestError && error.statusCode === 404) return undefined;
      throw error;
    }
  }
}

/**
 * The container's client with the credentials the environment gives: a
 * connection string (which must be the account's), a SAS token, or else
 * `@azure/identity`'s default credential when that package is installed.
 */
export async function azureContainer(
  account: string,
  container: string,
  environment: Record<string, string | undefined>,
): Promise<{ service: BlobServiceClient; container: ContainerClient }> {
  const connection = environment.AZURE_STORAGE_CONNECTION_STRING;
  const sas = environment.AZURE_STORAGE_SAS_TOKEN;
  let service: BlobServiceClient;
  if (connection) {
    service = BlobServiceClient.fromConnectionString(connection);
    if (service.accountName !== account) {
      throw new InvalidInputError(
        `AZURE_STORAGE_CONNECTION_STRING is for the account ${JSON.stringify(service.accountName)}, not ${JSON.stringify(account)}.`,
      );
    }
  } else if (sas) {
    service = new BlobServiceClient(`https://${account}.blob.core.windows.net?${sas.replace(/^\?/, '')}`);
  } else {
    const identity = await import('@azure/identity').catch(() => undefined);
    if (!identity) {
      throw new InvalidInputError(
        'set AZURE_STORAGE_CONNECTION_STRING (the account\u2019s connection string) or AZURE_STORAGE_SAS_TOKEN (a SAS for the container), or install @azure/identity to use its default credential (a managed identity, `az login`).',
      );
    }
    service = new BlobServiceClient(`https://${account}.blob.core.windows.net`, new identity.DefaultAzureCredential());
  }
  return { service, container: service.getContainerClient(container) };
}
