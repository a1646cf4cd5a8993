/**
 * Where a session's files and images are downloaded, and an execution result
 * with its images stored and linked: shared by the /v1 routes and the
 * conversations, whose turns link to the session's files.
 */
import { imageType } from '../../protocol/images.js';
import type { ExecutionResult } from '../../session/execution.js';
import type { ImageStore } from '../core/image-store.js';
import type { ManagedSession } from '../core/managed-session.js';

const encodePath = (path: string): string => path.split('/').map(encodeURIComponent).join('/');

export function sessionUrl(entry: ManagedSession): string {
  return `/v1/sessions/${entry.id}`;
}

/** Where a client downloads a file of the session (a path relative to /mnt/data). */
export function sessionFileUrl(entry: ManagedSession, path: string): string {
  return `${sessionUrl(entry)}/files/${encodePath(path)}`;
}

/**
 * A result with its images stored and linked (mode `url`) or left in `data` as base64 (mode `inline`).
 * Images go to the session's store unless another is given (a conversation keeps its own).
 */
export function presentResult(
  entry: ManagedSession,
  result: ExecutionResult,
  images: 'url' | 'inline',
  store: { images: ImageStore; url: string } = { images: entry.images, url: `${sessionUrl(entry)}/images` },
) {
  if (images === 'inline') return { type: result.type, data: result.data, metadata: result.metadata };
  const data: Record<string, unknown> = {};
  const links: { mimeType: string; url: string }[] = [];
  for (const [mimeType, value] of Object.entries(result.data)) {
    if (imageType(mimeType) && typeof value === 'string') {
      const stored = store.images.add(mimeType, value);
      links.push({ mimeType, url: `${store.url}/${stored.name}` });
    } else {
      data[mimeType] = value;
    }
  }
  return { type: result.type, data, metadata: result.metadata, ...(links.length ? { images: links } : {}) };
}
