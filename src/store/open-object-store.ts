/**
 * An object store by its location: `fs://DIR` (a directory on this machine),
 * `s3://BUCKET/PREFIX` or `azure://ACCOUNT/CONTAINER/PREFIX`. Credentials are
 * never in the location: each cloud's SDK finds them as it does (AWS's
 * default chain and AWS_ENDPOINT_URL; for Azure a connection string or a SAS
 * token from the environment, else `@azure/identity`'s default credential).
 *
 * The cloud SDKs are optional: a clone of sandcell has them (`npm run setup`),
 * and a project that installs sandcell adds the one its store needs. They are
 * loaded only when a store of theirs is opened, and a missing one is a clear
 * error naming the package.
 */
import path from 'node:path';
import { InvalidInputError } from '../errors.js';
import { FsObjectStore } from './fs-object-store.js';
import { checkKey, type ObjectStore } from './object-store.js';

/** S3's rules for a bucket's name (lower-case letters, digits, dots and hyphens, 3–63). */
const BUCKET = /^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/;
/** Azure's for an account (3–24 lower-case letters and digits) and a container (3–63, hyphens between). */
const ACCOUNT = /^[a-z0-9]{3,24}$/;
const CONTAINER = /^[a-z0-9](?:[a-z0-9]|-(?=[a-z0-9])){2,62}$/;

export type StoreLocation =
  | { scheme: 'fs'; directory: string }
  | { scheme: 's3'; bucket: string; prefix: string }
  | { scheme: 'azure'; account: string; container: string; prefix: string };

/** The location's parts, or a clear error saying what a location looks like (no I/O: options check it at start). */
export function parseStoreLocation(location: string): StoreLocation {
  const match = /^([a-z0-9]+):\/\/(.*)$/.exec(location);
  const scheme = match?.[1];
  const rest = match?.[2] ?? '';
  if (scheme === 'fs') {
    if (!rest.startsWith('/'))
      throw invalid(location, 'fs:// takes an absolute directory, e.g. fs:///var/lib/sandcell');
    return { scheme, directory: path.resolve(rest) };
  }
  if (scheme === 's3') {
    const [bucket = '', ...words] = rest.split('/');
    if (!BUCKET.test(bucket)) throw invalid(location, `${JSON.stringify(bucket)} is not an S3 bucket name`);
    return { scheme, bucket, prefix: prefixOf(location, words) };
  }
  if (scheme === 'azure') {
    const [account = '', container = '', ...words] = rest.split('/');
    if (!ACCOUNT.test(account)) throw invalid(location, `${JSON.stringify(account)} is not a storage account name`);
    if (!CONTAINER.test(container)) throw invalid(location, `${JSON.stringify(container)} is not a container name`);
    return { scheme, account, container, prefix: prefixOf(location, words) };
  }
  throw invalid(location, 'use fs:///DIR, s3://BUCKET/PREFIX or azure://ACCOUNT/CONTAINER/PREFIX');
}

export async function openObjectStore(
  location: string,
  environment: Record<string, string | undefined> = process.env,
): Promise<ObjectStore> {
  const parsed = parseStoreLocation(location);
  if (parsed.scheme === 'fs') return new FsObjectStore(parsed.directory);
  if (parsed.scheme === 's3') {
    const { S3ObjectStore } = await optional(
      location,
      '@aws-sdk/client-s3 @aws-sdk/lib-storage @aws-sdk/s3-request-presigner',
      () => import('./s3-object-store.js'),
    );
    // The SDK warns at its first client that its releases from 2027 on need Node 22; the release sandcell
    // installs runs on Node 20, and an operator can do nothing with the warning at every start.
    process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
    const endpoint = environment.AWS_ENDPOINT_URL_S3 || environment.AWS_ENDPOINT_URL || undefined;
    return new S3ObjectStore({ bucket: parsed.bucket, prefix: parsed.prefix, ...(endpoint ? { endpoint } : {}) });
  }
  const { AzureObjectStore, azureContainer } = await optional(
    location,
    '@azure/storage-blob',
    () => import('./azure-object-store.js'),
  );
  const { service, container } = await azureContainer(parsed.account, parsed.container, environment).catch(
    (error: Error) => {
      throw error instanceof InvalidInputError
        ? new InvalidInputError(`Cannot open ${location}: ${error.message}`)
        : error;
    },
  );
  return new AzureObjectStore({ container, service, account: parsed.account, prefix: parsed.prefix });
}

/** A driver whose SDK may not be installed: loaded, or a clear error naming the packages to install. */
async function optional<T>(location: string, packages: string, load: () => Promise<T>): Promise<T> {
  try {
    return await load();
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ERR_MODULE_NOT_FOUND') throw error;
    throw invalid(location, `its driver needs ${packages}, which is not installed: npm install ${packages}`);
  }
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
  return new InvalidInputError(`Not a store: ${JSON.stringify(location.split('?')[0])}: ${why.replace(/\.$/, '')}.`);
}
