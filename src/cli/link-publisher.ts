/**
 * `--store` and `--link-ttl` on the commands that publish files without a server (`run`, `discord`):
 * the store opened, its links proven, and files uploaded to it, each answered with a signed
 * read-only link. Only a store that signs its own links (S3, Azure Blob) will do: a directory's
 * links are served by `sandcell serve`, and no server runs here.
 */
import { randomBytes } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import pino from 'pino';
import { MAX_FILES_PER_EXECUTION, OutputPublisher, type PublishedFile } from '../server/core/output-publisher.js';
import { MAX_LINK_TTL_MS } from '../store/object-store.js';
import { openObjectStore } from '../store/open-object-store.js';
import { CliExit, EXIT_USAGE } from './exit-codes.js';
import type { SavedFile } from './render.js';
import { durationFlag } from './unit-flags.js';

/** How long a link works unless --link-ttl says otherwise. */
export const DEFAULT_LINK_TTL = '1h';
/** A reason a file was not published is said in a line or a JSON field: a cloud's long answer is cut. */
const MAX_REASON_CHARS = 300;

export interface LinkCliOptions {
  /** s3://BUCKET/PREFIX or azure://ACCOUNT/CONTAINER/PREFIX. @default SANDCELL_STORE, else no publishing */
  store?: string;
  /** @default DEFAULT_LINK_TTL */
  linkTtl?: string;
}

export interface LinkPublisher {
  /** Where the files go, for messages (never a secret). */
  readonly location: string;
  /** Uploads each file (read by `read`) under the session's id and links it; a file's failure is its `error`. */
  publish(
    sessionId: string,
    files: { path: string; size: number }[],
    read: (file: { path: string; size: number }) => AsyncIterable<Uint8Array>,
  ): Promise<PublishedFile[]>;
}

/**
 * The publisher the flags of `sandcell <command>` ask for, its store and links proven now (a wrong
 * credential is a usage error before any sandbox starts), or undefined without a store. Objects are
 * keyed under the command's name as their owner.
 */
export async function openLinkPublisher(command: string, options: LinkCliOptions): Promise<LinkPublisher | undefined> {
  const location = options.store ?? (process.env.SANDCELL_STORE || undefined);
  if (location === undefined) return undefined;
  const linkTtlMs = durationFlag('--link-ttl', options.linkTtl ?? DEFAULT_LINK_TTL, 1000);
  if (linkTtlMs > MAX_LINK_TTL_MS) throw new CliExit(EXIT_USAGE, `sandcell ${command}: --link-ttl is at most 7d.`);
  const objects = await openObjectStore(location).catch((error: Error) => {
    throw new CliExit(EXIT_USAGE, `sandcell ${command}: ${error.message}`);
  });
  if (!objects.link) {
    throw new CliExit(
      EXIT_USAGE,
      `sandcell ${command}: --store ${location} cannot sign links; use an S3 or Azure Blob store (a directory's links are served by \`sandcell serve\`).`,
    );
  }
  // Links are the store's own (a presigned GET, a SAS): no secret of sandcell's signs them.
  const publisher = new OutputPublisher(async () => ({ objects, secret: randomBytes(32) }), {
    linkTtlMs,
    logger: pino({ level: 'silent' }),
  });
  await publisher.check().catch((error: Error) => {
    throw new CliExit(EXIT_USAGE, `sandcell ${command}: cannot publish files to ${objects.location}: ${error.message}`);
  });
  return {
    location: objects.location,
    async publish(sessionId, files, read) {
      const taken = files.slice(0, MAX_FILES_PER_EXECUTION);
      const published = await publisher.publish(command, sessionId, taken, read);
      return [
        ...published.map((file) => (file.error ? { ...file, error: shortened(file.error) } : file)),
        ...files.slice(MAX_FILES_PER_EXECUTION).map((file) => ({
          ...file,
          error: `not published: sandcell ${command} publishes at most ${MAX_FILES_PER_EXECUTION} files at once`,
        })),
      ];
    },
  };
}

function shortened(reason: string): string {
  const line = reason.replace(/\s+/g, ' ').trim();
  return line.length > MAX_REASON_CHARS ? `${line.slice(0, MAX_REASON_CHARS - 1)}…` : line;
}

/**
 * The files a command saved on this machine, each also published from its local copy (so the
 * link downloads what was saved) with its link and expiry, or why it was not published.
 */
export async function publishSavedFiles(
  publisher: LinkPublisher,
  sessionId: string,
  files: SavedFile[],
): Promise<SavedFile[]> {
  if (files.length === 0) return files;
  const local = new Map(files.map((file) => [file.path, file.savedTo]));
  // A copy gone since it was saved is read as nothing and reported unpublished, like any failed upload.
  const sized = await Promise.all(
    files.map(async (file) => ({
      path: file.path,
      size: await stat(file.savedTo).then(
        (found) => found.size,
        () => 0,
      ),
    })),
  );
  const published = new Map(
    (await publisher.publish(sessionId, sized, (file) => createReadStream(local.get(file.path) as string))).map(
      (file) => [file.path, file],
    ),
  );
  return files.map((file) => {
    const link = published.get(file.path);
    if (link?.url) return { ...file, url: link.url, expiresAt: link.expiresAt };
    return { ...file, publishError: link?.error ?? 'not published' };
  });
}
