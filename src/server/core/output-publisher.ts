/**
 * Published outputs: the files an execution created or changed, uploaded to
 * the server's store as it ends, each with a signed read-only link that lasts
 * `--link-ttl`. On S3 and Azure Blob the link is the cloud's own (a presigned
 * GET, a SAS); on a directory the server serves it (`GET /v1/outputs/{token}`,
 * the token an HMAC under a key derived from the store's secret). A link names
 * one file of one session: no listing, nothing of another session or key.
 *
 *   outputs/<owner digest>/<session id>/<digest of the path>/<name>
 *
 * A file streams from the sandbox to the store in chunks, never whole in
 * memory. An upload that fails is tried again, then reported with its reason
 * beside the execution's result, which stays intact; the file is published at
 * the next execution's end if it still is there.
 */
import { createHash } from 'node:crypto';
import type { Logger } from 'pino';
import { snapshotOwner } from '../../snapshots/snapshot-store.js';
import type { ObjectStore } from '../../store/object-store.js';
import { contentDispositionFor, contentTypeFor } from '../http/content-type.js';
import { SignedTokens } from './signed-tokens.js';

/** A file an execution wrote, as the client sees it: its link, or why it has none. */
export interface PublishedFile {
  /** Relative to /mnt/data. */
  path: string;
  size: number;
  /** A signed read-only link (absolute on S3 and Azure; on a directory, a path on this server). */
  url?: string;
  expiresAt?: string;
  /** Why it was not published (after its retries); it is tried again at the next execution's end. */
  error?: string;
}

export interface PublisherStore {
  objects: ObjectStore;
  /** The store's secret (the snapshots'): the server's own links are signed with a key derived from it. */
  secret: Uint8Array;
}

/** How often an upload is tried before the file is reported unpublished, and the pause between tries. */
const ATTEMPTS = 3;
const RETRY_PAUSE_MS = 500;
/** Files one execution publishes at most; the rest are listed, unpublished, so an answer never waits on thousands. */
export const MAX_FILES_PER_EXECUTION = 100;
export const OUTPUTS_PREFIX = 'outputs/';

export class OutputPublisher {
  private readonly tokens = new SignedTokens('sandcell output links');

  constructor(
    private readonly store: () => Promise<PublisherStore>,
    private readonly options: { linkTtlMs: number; logger: Logger; retryPauseMs?: number },
  ) {}

  /** Uploads each file (read by `read`) and links it; never throws for one file's failure. */
  async publish(
    ownerId: string,
    sessionId: string,
    files: { path: string; size: number }[],
    read: (file: { path: string; size: number }) => AsyncIterable<Uint8Array>,
  ): Promise<PublishedFile[]> {
    if (files.length === 0) return [];
    const { objects, secret } = await this.store();
    const published: PublishedFile[] = [];
    for (const file of files.slice(0, MAX_FILES_PER_EXECUTION)) {
      const key = outputKey(ownerId, sessionId, file.path);
      let failure: unknown;
      for (let attempt = 1; attempt <= ATTEMPTS; attempt++) {
        try {
          // No digest: nothing records it, and taking it costs about as much CPU as the upload.
          const written = await objects.write(key, read(file), { digest: false });
          const expiresAt = new Date(Date.now() + this.options.linkTtlMs);
          const url = await this.link(objects, secret, key, file.path, expiresAt);
          published.push({ path: file.path, size: written.bytes, url, expiresAt: expiresAt.toISOString() });
          failure = undefined;
          break;
        } catch (error) {
          failure = error;
          if (attempt < ATTEMPTS) await pause((this.options.retryPauseMs ?? RETRY_PAUSE_MS) * attempt);
        }
      }
      if (failure !== undefined) {
        const why = (failure as Error).message ?? String(failure);
        this.options.logger.warn({ session: sessionId, path: file.path, error: why }, 'an output was not published');
        published.push({ path: file.path, size: file.size, error: `not published: ${why}` });
      }
    }
    for (const file of files.slice(MAX_FILES_PER_EXECUTION)) {
      published.push({
        path: file.path,
        size: file.size,
        error: `not published yet: one execution publishes at most ${MAX_FILES_PER_EXECUTION} files; the rest follow after the next`,
      });
    }
    return published;
  }

  /**
   * The object a server-signed link names, if the token verifies and has not expired; its name
   * for the browser. Any other token (changed, expired, too long) is nothing.
   */
  async resolve(token: string): Promise<{ objects: ObjectStore; key: string; path: string } | undefined> {
    const { objects, secret } = await this.store();
    const claims = this.tokens.verify(secret, token);
    if (typeof claims?.k !== 'string' || !claims.k.startsWith(OUTPUTS_PREFIX) || typeof claims.p !== 'string')
      return undefined;
    return { objects, key: claims.k, path: claims.p };
  }

  /**
   * The caller's published output a link names, read from this server's store (never fetched from
   * the link: no request leaves the server): a link this server signed, or a cloud link whose path
   * ends in an output's key, as a stream (its size is the reader's to bound). Another key's output,
   * or anything else, is undefined.
   */
  async open(ownerId: string, link: string): Promise<{ name: string; body: AsyncIterable<Uint8Array> } | undefined> {
    let pathname: string;
    try {
      pathname = decodeURIComponent(new URL(link, 'http://link.invalid').pathname);
    } catch {
      return undefined;
    }
    const own = `${OUTPUTS_PREFIX}${snapshotOwner(ownerId)}/`;
    const signed = /\/v1\/outputs\/([A-Za-z0-9_-]+\.[A-Za-z0-9_-]+)$/.exec(pathname);
    let key: string | undefined;
    if (signed) key = (await this.resolve(signed[1] as string))?.key;
    else key = /(outputs\/[0-9a-f]{32}\/[a-z0-9_-]{1,64}\/[0-9a-f]{32}\/[a-z0-9._-]{1,100})$/.exec(pathname)?.[1];
    if (key === undefined || !key.startsWith(own)) return undefined;
    const { objects } = await this.store();
    const body = await objects.open(key);
    return body && { name: key.slice(key.lastIndexOf('/') + 1), body };
  }

  /** Proves links work on the store: a probe published, its link followed (a cloud's) or verified (this server's). */
  async check(): Promise<void> {
    const { objects, secret } = await this.store();
    const key = `${OUTPUTS_PREFIX}probe/${createHash('sha256').update(String(Math.random())).digest('hex').slice(0, 16)}`;
    const bytes = Buffer.from(`sandcell link probe ${new Date().toISOString()}`);
    await objects.write(key, bytes);
    try {
      const url = await this.link(objects, secret, key, 'probe.txt', new Date(Date.now() + 60_000));
      if (objects.link) {
        const answer = await fetch(url);
        const body = Buffer.from(await answer.arrayBuffer());
        if (!answer.ok || !body.equals(bytes))
          throw new Error(`a link to a probe answered ${answer.status}, not its bytes`);
      } else if (!(await this.resolve(url.slice(url.lastIndexOf('/') + 1)))) {
        throw new Error('a link to a probe did not verify');
      }
    } finally {
      await objects.delete(key).catch(() => undefined);
    }
  }

  /** Deletes outputs published longer ago than `olderThanMs`; how many. */
  async expire(olderThanMs: number, now = Date.now()): Promise<number> {
    const { objects } = await this.store();
    let deleted = 0;
    for await (const object of objects.list(OUTPUTS_PREFIX)) {
      if (now - object.modifiedAt.getTime() < olderThanMs) continue;
      await objects.delete(object.key);
      deleted++;
    }
    return deleted;
  }

  private async link(objects: ObjectStore, secret: Uint8Array, key: string, path: string, expiresAt: Date) {
    const contentType = contentTypeFor(path);
    const contentDisposition = contentDispositionFor(path);
    if (objects.link) return objects.link(key, { expiresAt, contentType, contentDisposition });
    return `/v1/outputs/${this.tokens.sign(secret, { k: key, p: path }, expiresAt)}`;
  }
}

/** The object of a session's file: the path's digest keeps keys safe words whatever the file's name. */
export function outputKey(ownerId: string, sessionId: string, path: string): string {
  const digest = createHash('sha256').update(path).digest('hex').slice(0, 32);
  const name =
    (path.split('/').pop() ?? '')
      .toLowerCase()
      .replace(/[^a-z0-9._-]+/g, '-')
      .replace(/^[.-]+/, '')
      .slice(0, 100) || 'file';
  return `${OUTPUTS_PREFIX}${snapshotOwner(ownerId)}/${sessionId}/${digest}/${name}`;
}

function pause(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
