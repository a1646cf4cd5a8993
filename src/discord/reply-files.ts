/**
 * The files an answer sends back: charts and files the code wrote (read from
 * the session's /mnt/data), then long code and output. Bounded in count and
 * size; a file too big for Discord (or past the count) is named, not sent, or
 * with a store (`--store`) published there and linked.
 */
import { AttachmentBuilder } from 'discord.js';
import type { SessionFile } from '../agents/index.js';
import { formatBytes } from '../protocol/format-bytes.js';
import type { Session } from '../session/session.js';
import type { ViewFile } from './answer-view.js';

export interface ReplyFileLimits {
  /** Files sent with one answer at most (Discord takes 10 per message). */
  maxFiles: number;
  /** The largest file sent, and what one message's files may add up to. */
  maxBytes: number;
}

/** Uploads a session's file to the store and links it (the server's OutputPublisher), or says why it could not. */
export type PublishFile = (
  session: Session,
  file: { path: string; size: number },
) => Promise<{ url?: string; expiresAt?: string; error?: string }>;

export const DEFAULT_REPLY_FILE_LIMITS: ReplyFileLimits = { maxFiles: 10, maxBytes: 10 * 1024 * 1024 };

/** The attachments to send, and notes about the files left out. */
export async function replyFiles(
  session: Session,
  written: readonly SessionFile[],
  extra: readonly ViewFile[],
  limits: ReplyFileLimits,
  publish?: PublishFile,
): Promise<{ files: AttachmentBuilder[]; notes: string[] }> {
  const files: AttachmentBuilder[] = [];
  const notes: string[] = [];
  let total = 0;
  const leftOut: string[] = [];
  const take = (name: string, bytes: Buffer) => {
    files.push(new AttachmentBuilder(bytes, { name }));
    total += bytes.length;
  };
  // Figures first: they are what people asked for.
  const ordered = [...written].sort((a, b) => Number(b.kind === 'figure') - Number(a.kind === 'figure'));
  for (const file of ordered) {
    const name = file.path.split('/').pop() ?? file.path;
    const tooBig = file.size > limits.maxBytes || total + file.size > limits.maxBytes;
    if (publish && (tooBig || files.length >= limits.maxFiles)) {
      const published = await publish(session, file);
      notes.push(
        published.url
          ? `${name} (${formatBytes(file.size)}): ${published.url} (the link works until ${published.expiresAt})`
          : `${name} (${formatBytes(file.size)}) could not be linked (${published.error}); it is in the sandbox as /mnt/data/${file.path}.`,
      );
      continue;
    }
    if (tooBig) {
      notes.push(
        `${name} (${formatBytes(file.size)}) is too big to send here; it is in the sandbox as /mnt/data/${file.path}.`,
      );
      continue;
    }
    if (files.length >= limits.maxFiles) {
      leftOut.push(name);
      continue;
    }
    const bytes = await session.files.read(file.path).catch(() => undefined);
    if (bytes && bytes.length <= limits.maxBytes) take(name, bytes);
  }
  for (const file of extra) {
    if (files.length >= limits.maxFiles || total + file.bytes.length > limits.maxBytes) {
      leftOut.push(file.name);
      continue;
    }
    take(file.name, file.bytes);
  }
  if (leftOut.length > 0) notes.push(`Not sent (too many files): ${leftOut.join(', ')}.`);
  return { files, notes };
}
