/**
 * An object store by its location: `fs://DIR` (a directory on this machine),
 * `s3://BUCKET/PREFIX` or `azure://ACCOUNT/CONTAINER/PREFIX`. Credentials are
 * never in the location: each cloud's SDK finds them as it does (AWS's
 * default chain and AWS_ENDPOINT_URL; Azure's connection string or SAS token
 * from the environment).
 */
import path from 'node:path';
import { InvalidInputError } from '../errors.js';
import { AzureObjectStore } from './azure-object-store.js';
import { FsObjectStore } from './fs-object-store.js';
import { checkKey, type ObjectStore } from './object-store.js';
import { S3ObjectStore } from './s3-object-store.js';

/** S3's rules for a bucket's name (lower-case letters, digits, dots and hyphens, 3–63). */
const BUCKET = /^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/;
/** Azure's for an account (3–24 lower-case letters and digits) and a container (3–63, hyphens between). */
const ACCOUNT = /^[a-z0-9]{3,24}$/;
const CONTAINER = /^[a-z0-9](?:[a-z0-9]|-(?=[a-z0-9])){2,62}$/;

export async function openObjectStore(
  location: string,
  environment: Record<string, string | undefined> = process.env,
): Promise<ObjectStore> {
  const match = /^([a-z0-9]+):\/\/(.*)$/.exec(location);
  const scheme = match?.[1];
  const rest = match?.[2] ?? '';
  if (scheme === 'fs') {
    if (!rest.startsWith('/'))
      throw invalid(location, 'fs:// takes an absolute directory, e.g. fs:///var/lib/sandcell');
    return new FsObjectStore(path.resolve(rest));
  }
  if (scheme === 's3') {
    const [bucket = '', ...words] = rest.split('/');
    if (!BUCKET.test(bucket)) throw invalid(location, `${JSON.stringify(bucket)} is not an S3 bucket name`);
    return new S3ObjectStore({ bucket, prefix: prefixOf(location, words) });
  }
  if (scheme === 'azure') {
    const [account = '', container = '', ...words] = rest.split('/');
    if (!ACCOUNT.test(account)) throw invalid(location, `${JSON.stringify(account)} is not a storage account name`);
    if (!CONTAINER.test(container)) throw invalid(location, `${JSON.stringify(container)} is not a container name`);
    const { BlobServiceClient } = await import('@azure/storage-blob');
    const connection = environment.AZURE_STORAGE_CONNECTION_STRING;
    const sas = environment.AZURE_STORAGE_SAS_TOKEN;
    let service: InstanceType<typeof BlobServiceClient>;
    if (connection) {
      service = BlobServiceClient.fromConnectionString(connection);
      if (service.accountName !== account) {
        throw invalid(
          location,
          `AZURE_STORAGE_CONNECTION_STRING is for the account ${JSON.stringify(service.accountName)}, not ${JSON.stringify(account)}`,
        );
      }
    } else if (sas) {
      service = new BlobServiceClient(`https://${account}.blob.core.windows.net?${sas.replace(/^\?/, '')}`);
    } else {
      throw invalid(
        location,
        'set AZURE_STORAGE_CONNECTION_STRING (the account\u2019s connection string) or AZURE_STORAGE_SAS_TOKEN (a SAS for the container)',
      );
    }
    return new AzureObjectStore({
      container: service.getContainerClient(container),
      account,
      prefix: prefixOf(location, words),
    });
  }
  throw invalid(location, 'use fs:///DIR, s3://BUCKET/PREFIX or azure://ACCOUNT/CONTAINER/PREFIX');
}

/** The words after the bucket or container, as one prefix of valid key words (none: no prefix). */
function prefixOf(location: string, words: string[]): string {
  const prefix = words.filter((word) => word !== '').join('/');
  if (prefix === '') return '';
  try {
    return checkKey(prefix);
  } catch {
    throw invalid(location, 'its prefix must be lower-case letters, digits, `.`, `_` and `-` between slashes');
  }
}

function invalid(location: string, why: string): InvalidInputError {
  // A location never holds a secret, but a mistyped one might: it is said without its query.
  return new InvalidInputError(`Not a store: ${JSON.stringify(location.split('?')[0])}: ${why}.`);
}
