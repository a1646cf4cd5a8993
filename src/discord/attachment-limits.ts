/**
 * Files people attach go into their conversation's /mnt/data, within a limit
 * per file and one per conversation. The size Discord declares is checked
 * first; the download then refuses a larger Content-Length and stops counting
 * bytes at the limit, so no more than the limit is ever read.
 */
import { formatBytes } from '../protocol/format-bytes.js';

/** An attachment the bot will not take, with the words to tell its sender. */
export class AttachmentRefusedError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'AttachmentRefusedError';
  }
}

export interface AttachmentLimits {
  /** The largest attachment taken. */
  fileBytes: number;
  /** What a conversation's attachments may add up to. */
  conversationBytes: number;
}

/** Refuses an attachment whose declared size is over a limit; `usedBytes`: what the conversation has taken already. */
export function checkAttachment(name: string, size: number, usedBytes: number, limits: AttachmentLimits): void {
  if (size > limits.fileBytes) {
    throw new AttachmentRefusedError(
      `${name} is ${formatBytes(size)}; the limit is ${formatBytes(limits.fileBytes)} per file, so I did not take it.`,
    );
  }
  if (usedBytes + size > limits.conversationBytes) {
    throw new AttachmentRefusedError(
      `${name} would bring this conversation's files to ${formatBytes(usedBytes + size)}; the limit is ${formatBytes(limits.conversationBytes)} per conversation, so I did not take it. Start a new conversation for more data.`,
    );
  }
}

/** Downloads `url`, reading at most `maxBytes` (the file's limit); `name` is used in the refusal. */
export async function downloadAttachment(
  url: string,
  name: string,
  maxBytes: number,
  options: { fetch?: typeof fetch; signal?: AbortSignal } = {},
): Promise<Buffer> {
  const tooBig = () =>
    new AttachmentRefusedError(`${name} is over ${formatBytes(maxBytes)}, the limit per file, so I did not take it.`);
  const response = await (options.fetch ?? fetch)(url, { signal: options.signal });
  if (!response.ok || !response.body) {
    await response.body?.cancel();
    throw new AttachmentRefusedError(`I could not download ${name} from Discord (HTTP ${response.status}).`);
  }
  const declared = Number(response.headers.get('content-length'));
  if (Number.isFinite(declared) && declared > maxBytes) {
    await response.body.cancel();
    throw tooBig();
  }
  const chunks: Buffer[] = [];
  let total = 0;
  const reader = response.body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.byteLength;
    if (total > maxBytes) {
      await reader.cancel();
      throw tooBig();
    }
    chunks.push(Buffer.from(value));
  }
  return Buffer.concat(chunks);
}

/** A name that is safe as a file in /mnt/data: the last path segment, odd characters replaced. */
export function attachmentFileName(name: string): string {
  const base = name.split(/[\\/]/).pop() ?? '';
  const cleaned = base.replace(/[^\w.-]+/g, '_').replace(/^\.+/, '');
  return cleaned.slice(0, 120) || 'attachment';
}
