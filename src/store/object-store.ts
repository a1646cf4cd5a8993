/**
 * Where state that outlives a sandbox goes: snapshots now, published outputs
 * next. One small interface of keyed objects, so the same code writes to a
 * directory on this machine (`fs`, the default) or to an object store several
 * machines share (`s3`, `azure`). Every driver keeps two promises the layers
 * above build on:
 *
 * - an object is written whole or not at all: a reader never sees half of
 *   one, whatever moment a crash comes at (a file renamed into place; S3 and
 *   Azure commit an upload only when it ends);
 * - `writeIfAbsent` is the one conditional write: of two writers of one key,
 *   exactly one wins and the other is told (O_EXCL; If-None-Match: *).
 *
 * Keys are `/`-separated words the layers above build from ids they chose
 * (never from a client's text): `snapshots/<owner>/<id>/manifest.json`.
 */

export interface StoredObject {
  key: string;
  bytes: number;
  modifiedAt: Date;
}

/** What a write took in: its size and SHA-256, counted as the bytes went by (a manifest records them). */
export interface WrittenObject {
  bytes: number;
  /** Absent when the write was asked for none (`digest: false`). */
  sha256?: string;
}

export interface WriteOptions {
  /**
   * Whether to take the body's SHA-256 as it goes by. A snapshot's manifest needs it; a published
   * output does not, and hashing costs about as much CPU as the upload itself.
   * @default true
   */
  digest?: boolean;
}

/** A body: bytes in hand, or a stream of them (a sandbox's archive), never gathered whole in memory. */
export type ObjectBody = Uint8Array | AsyncIterable<Uint8Array>;

/** The longest a link may last: SigV4's longest presigned URL, and so every store's. */
export const MAX_LINK_TTL_MS = 7 * 24 * 3_600_000;

/** What a link to one object says when it is followed. */
export interface LinkOptions {
  /** When the link stops working. */
  expiresAt: Date;
  /** Its media type. */
  contentType: string;
  /** `inline` or `attachment; filename=…`: the name a browser saves it under (a key is not a file's name). */
  contentDisposition: string;
}

export interface ObjectStore {
  /** `fs:///var/lib/sandcell`, `s3://bucket/prefix`: for logs and messages; never holds a secret. */
  readonly location: string;
  /** Writes the object whole, replacing one already there. */
  write(key: string, body: ObjectBody, options?: WriteOptions): Promise<WrittenObject>;
  /** Writes the object whole only if no object has the key; undefined when one had it (nothing written). */
  writeIfAbsent(key: string, body: ObjectBody): Promise<WrittenObject | undefined>;
  /** The object's bytes, or undefined if there is none. Bounded: an object over `maxBytes` is an error. */
  read(key: string, maxBytes: number): Promise<Uint8Array | undefined>;
  /** The object as a stream, or undefined if there is none. */
  open(key: string): Promise<AsyncIterable<Uint8Array> | undefined>;
  /** The objects whose keys start with `prefix`, in no promised order. */
  list(prefix: string): AsyncIterable<StoredObject>;
  /** Removes the object; removing one that is not there is not an error. */
  delete(key: string): Promise<void>;
  /**
   * A URL anyone may GET this one object with until `expiresAt`, and nothing else (no listing, no
   * other object, no write): a presigned GET, a read-only SAS. Absent on a store with no signer of
   * its own (a directory): the server then serves its own signed links.
   */
  link?(key: string, options: LinkOptions): Promise<string>;
}

/** An object larger than its reader's bound (`read(key, maxBytes)`). */
export class ObjectTooLargeError extends Error {
  constructor(
    readonly key: string,
    readonly bytes: number,
    readonly maxBytes: number,
    orMore = false,
  ) {
    super(`The object ${key} is ${bytes} bytes${orMore ? ' or more' : ''}, over the ${maxBytes} expected.`);
  }
}

/** A key's words: lower-case letters, digits, `.`, `_` and `-`, none of them `.` or `..`. */
const WORD = /^[a-z0-9_-][a-z0-9._-]{0,127}$/;

/** Throws unless `key` is made of safe words (the layers above build keys; this catches their bugs). */
export function checkKey(key: string): string {
  const words = key.split('/');
  if (words.length > 16 || !words.every((word) => WORD.test(word) && word !== '..')) {
    throw new Error(`Not a valid object key: ${JSON.stringify(key)}`);
  }
  return key;
}

/** Every object under `prefix`, its keys. */
export async function listKeys(store: ObjectStore, prefix: string): Promise<string[]> {
  const keys: string[] = [];
  for await (const object of store.list(prefix)) keys.push(object.key);
  return keys;
}
