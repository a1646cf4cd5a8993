/**
 * What the object stores on a network (S3, Azure Blob) share: keys under a
 * prefix, a body's size and SHA-256 counted as it streams past, and a body
 * read whole only within a bound.
 */
import { createHash } from 'node:crypto';
import { type ObjectBody, ObjectTooLargeError, type WriteOptions, type WrittenObject } from './object-store.js';

/** The most a conditional write (writeIfAbsent) takes: records and claims, never archives. */
export const MAX_CONDITIONAL_BYTES = 4 * 1024 * 1024;

/** `prefix/key`, or `key` without a prefix. */
export function joinPrefix(prefix: string, key: string): string {
  return prefix ? `${prefix}/${key}` : key;
}

/** A stored name back to its key; undefined for a name outside the prefix. */
export function stripPrefix(prefix: string, name: string): string | undefined {
  if (!prefix) return name;
  return name.startsWith(`${prefix}/`) ? name.slice(prefix.length + 1) : undefined;
}

/** The body's chunks as they are taken, and its size and SHA-256 (unless `digest` is false) once they all were. */
export function measured(
  body: ObjectBody,
  { digest = true }: WriteOptions = {},
): { chunks: AsyncIterable<Uint8Array>; written: () => WrittenObject } {
  const hash = digest ? createHash('sha256') : undefined;
  let bytes = 0;
  let ended = false;
  async function* chunks(): AsyncIterable<Uint8Array> {
    for await (const chunk of body instanceof Uint8Array ? [body] : body) {
      hash?.update(chunk);
      bytes += chunk.byteLength;
      yield chunk;
    }
    ended = true;
  }
  return {
    chunks: chunks(),
    written: () => {
      if (!ended) throw new Error('The body was not read to its end.');
      return hash ? { bytes, sha256: hash.digest('hex') } : { bytes };
    },
  };
}

/** What a write of `bytes` in hand took in: its size and SHA-256. */
export function writtenOf(bytes: Uint8Array): WrittenObject {
  return { bytes: bytes.byteLength, sha256: createHash('sha256').update(bytes).digest('hex') };
}

/** A body's bytes whole; more than `maxBytes` is an error (what is over is not read). */
export async function boundedBytes(body: ObjectBody, maxBytes: number, key: string): Promise<Buffer> {
  if (body instanceof Uint8Array) {
    if (body.byteLength > maxBytes) throw tooLarge(key, body.byteLength, maxBytes);
    return Buffer.from(body.buffer, body.byteOffset, body.byteLength);
  }
  const chunks: Buffer[] = [];
  let bytes = 0;
  for await (const chunk of body) {
    bytes += chunk.byteLength;
    if (bytes > maxBytes) throw tooLarge(key, bytes, maxBytes);
    chunks.push(Buffer.from(chunk));
  }
  return Buffer.concat(chunks);
}

/** An object over what its reader expects (`or more`: counted while it streamed, not read to its end). */
export function tooLarge(key: string, bytes: number, maxBytes: number, orMore = true): Error {
  return new ObjectTooLargeError(key, bytes, maxBytes, orMore);
}
