/**
 * How a conversation's outputs are linked in its history: a result's images served by the
 * conversation (`/v1/conversations/{id}/images/{name}`), a file by its published link when it has
 * one (which outlives the session), else by the session's own download (which lasts while it does).
 * Links name the session by its id, which stays the same across a pause and a resume.
 */
import type { SessionFile } from '../../agents/events.js';
import type { CodeFile, PresentedResult } from '../../protocol/index.js';
import type { ExecutionResult } from '../../session/execution.js';
import type { ImageStore } from '../core/image-store.js';
import type { ManagedSession } from '../core/managed-session.js';
import type { PublishedFile } from '../core/output-publisher.js';
import { presentResult, sessionFileUrl } from '../http/present-result.js';

export class ConversationLinks {
  /** Published files' links, by path: those the turns tell of. */
  private readonly published = new Map<string, string>();

  constructor(
    private readonly conversationId: string,
    private readonly images: ImageStore,
    /** The conversation's session, for the links that name it. */
    private readonly session: () => ManagedSession,
  ) {}

  /** A result as the history keeps it: its images stored here and linked, the rest as it came. */
  present(result: ExecutionResult): PresentedResult {
    return presentResult(this.session(), result, 'url', {
      images: this.images,
      url: `/v1/conversations/${this.conversationId}/images`,
    }) as PresentedResult;
  }

  /** A file the code wrote, with its link. */
  codeFile(file: SessionFile): CodeFile {
    const url = this.published.get(file.path) ?? this.fileUrl(file.path);
    return { path: file.path, size: file.size, kind: file.kind, url };
  }

  /** Remembers the links of published files, for the files the turn tells of. */
  notePublished(files: PublishedFile[]): void {
    for (const file of files) {
      if (file.url) this.published.set(file.path, file.url);
      else this.published.delete(file.path);
    }
  }

  /** The session's own download of a file. */
  fileUrl(path: string): string {
    return sessionFileUrl(this.session(), path);
  }
}
