/**
 * What goes in and out of the registry's sessions as files: the outputs an execution writes,
 * published to the store with links (for sessions that publish), imports of published outputs,
 * clients' uploads streamed in, and upload links that write one file with no key.
 */
import type { Logger } from 'pino';
import { InvalidInputError } from '../../errors.js';
import { formatBytes } from '../../protocol/format-bytes.js';
import { FileChanges } from '../../session/file-changes.js';
import type { ManagedSession } from './managed-session.js';
import type { OutputPublisher, PublishedFile } from './output-publisher.js';
import type { PausedSessions } from './paused-sessions.js';
import { SignedTokens } from './signed-tokens.js';

export interface SessionFilesHost {
  paused: PausedSessions;
  logger: Logger;
  publisher?: OutputPublisher | undefined;
}

export class SessionFiles {
  /** Upload links' tokens: their key is derived from the store's secret, so every server sharing it honours them. */
  private readonly uploadTokens = new SignedTokens('sandcell upload links');
  /** Preview links' tokens (a session's port without the key), of a kind of their own. */
  private readonly previewTokens = new SignedTokens('sandcell preview links');

  constructor(private readonly host: SessionFilesHost) {}

  /**
   * A session that publishes its outputs remembers what /mnt/data holds before its first
   * execution (uploads, a resumed session's files): only what executions write is published.
   */
  async watch(entry: ManagedSession): Promise<void> {
    if (!entry.publishOutputs) return;
    entry.outputs = new FileChanges(entry.session.files);
    await entry.outputs.snapshot().catch((error: Error) => {
      this.host.logger.warn({ session: entry.id, error: error.message }, 'outputs not listed');
    });
  }

  /**
   * Publishes the files the execution wrote. A failure costs only the files: the execution's
   * result stands, each unpublished file says why, and is tried again after the next execution.
   */
  async publish(entry: ManagedSession, outputs: FileChanges): Promise<PublishedFile[]> {
    const publisher = this.host.publisher as OutputPublisher;
    let changed: { path: string; size: number }[];
    try {
      changed = await outputs.changed();
    } catch (error) {
      // The sandbox is gone (the code killed it): there is nothing to read files from.
      this.host.logger.warn({ session: entry.id, error: (error as Error).message }, 'outputs not listed');
      return [];
    }
    const files = await publisher.publish(entry.owner.id, entry.id, changed, (file) =>
      // Exactly the size listed, or a 'changed' error: what is published is one version of the file.
      entry.session.files.stream(file.path, { expectedBytes: file.size }),
    );
    for (const file of files) if (file.error !== undefined) outputs.forget(file.path);
    return files;
  }

  /**
   * Copies the caller's published output that `link` names into the session's /mnt/data (at `path`,
   * else its name): read from the store, never fetched, streamed in (at most `maxBytes`, the
   * server's upload limit). Another key's output is not found.
   */
  async importOutput(entry: ManagedSession, link: string, path: string | undefined, maxBytes: number): Promise<string> {
    const output = await this.host.publisher?.open(entry.owner.id, link);
    if (!output) {
      throw new InvalidInputError(
        'Not a link to one of your published outputs on this server’s store (a `url` from an execution’s `files`).',
      );
    }
    const written = await this.writeUpload(entry, path ?? output.name, output.body, maxBytes);
    return written.path;
  }

  /**
   * Streams a client's file into the session (a PUT, an import, an upload link), at most `maxBytes`:
   * past it nothing stays and the error names the server's limit. It is the client's, not an
   * execution's output, so it is not published.
   */
  async writeUpload(
    entry: ManagedSession,
    path: string,
    body: AsyncIterable<Uint8Array> | Iterable<Uint8Array>,
    maxBytes: number,
  ): Promise<{ path: string; size: number }> {
    const written = await entry.session.files.writeStream(path, body, {
      maxBytes,
      tooLarge: (limit) =>
        `${path} is over ${formatBytes(limit)}, the most one upload may be (the server's --max-upload-bytes).`,
    });
    await entry.outputs?.remember(written.path);
    return written;
  }

  /** A link that writes the client's file at `path` into the session until `expiresAt`, with no key: `PUT` its bytes. */
  async uploadLink(entry: ManagedSession, path: string, expiresAt: Date): Promise<string> {
    const { secret } = await this.host.paused.store();
    return `/v1/uploads/${this.uploadTokens.sign(secret, { o: entry.owner.id, s: entry.id, p: path }, expiresAt)}`;
  }

  /** A token that lets a browser reach `port` of the session without the key until `expiresAt` (ports/). */
  async previewToken(entry: ManagedSession, port: number, expiresAt: Date): Promise<string> {
    const { secret } = await this.host.paused.store();
    return this.previewTokens.sign(secret, { o: entry.owner.id, s: entry.id, p: port }, expiresAt);
  }

  /** What a preview token lets reach, if it is one of this server's (or its store's other servers') and unexpired. */
  async previewTarget(token: string): Promise<{ ownerId: string; sessionId: string; port: number } | undefined> {
    const { secret } = await this.host.paused.store();
    const claims = this.previewTokens.verify(secret, token);
    if (typeof claims?.o !== 'string' || typeof claims.s !== 'string' || typeof claims.p !== 'number') return undefined;
    return { ownerId: claims.o, sessionId: claims.s, port: claims.p };
  }

  /** What an upload link names, if it is one of this server's (or its store's other servers') and unexpired. */
  async uploadTarget(token: string): Promise<{ ownerId: string; sessionId: string; path: string } | undefined> {
    const { secret } = await this.host.paused.store();
    const claims = this.uploadTokens.verify(secret, token);
    if (typeof claims?.o !== 'string' || typeof claims.s !== 'string' || typeof claims.p !== 'string') return undefined;
    return { ownerId: claims.o, sessionId: claims.s, path: claims.p };
  }

  /** The published file a server-signed link names (`GET /v1/outputs/{token}`), if the link is good. */
  async openOutput(token: string): Promise<{ path: string; body: AsyncIterable<Uint8Array> } | undefined> {
    const output = await this.host.publisher?.resolve(token);
    const body = output && (await output.objects.open(output.key));
    return output && body ? { path: output.path, body } : undefined;
  }
}
