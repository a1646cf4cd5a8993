/**
 * Reads a REST request body the way Discord accepts it: JSON, or multipart/form-data with
 * `payload_json` and `files[n]` parts (what @discordjs/rest sends whenever a message carries files).
 */
import type http from 'node:http';
import { DiscordApiError } from './discord-errors.js';

export interface UploadedFile {
  /** n of `files[n]`; `attachments[].id` in the payload refers to it. */
  index: number;
  filename: string;
  contentType: string;
  bytes: Buffer;
}

export interface DiscordRequestBody {
  payload: Record<string, unknown>;
  files: UploadedFile[];
}

const requestTooLarge = () => new DiscordApiError(413, 40005, 'Request entity too large');

export async function readRequestBody(request: http.IncomingMessage, limitBytes: number): Promise<DiscordRequestBody> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request) {
    size += (chunk as Buffer).length;
    if (size > limitBytes) throw requestTooLarge();
    chunks.push(chunk as Buffer);
  }
  const raw = Buffer.concat(chunks);
  const contentType = request.headers['content-type'] ?? '';
  if (raw.length === 0) return { payload: {}, files: [] };
  if (contentType.startsWith('multipart/form-data')) return parseMultipart(raw, contentType);
  return { payload: parseJsonObject(raw.toString('utf8')), files: [] };
}

function parseJsonObject(text: string): Record<string, unknown> {
  try {
    const value: unknown = JSON.parse(text);
    if (value && typeof value === 'object' && !Array.isArray(value)) return value as Record<string, unknown>;
  } catch {
    // Falls through to Discord's answer for a body it cannot read.
  }
  throw new DiscordApiError(400, 50109, 'The request body contains invalid JSON.');
}

async function parseMultipart(raw: Buffer, contentType: string): Promise<DiscordRequestBody> {
  // undici's Request parses multipart bodies; the fake need not carry its own parser.
  const form = await new Request('http://fake-discord.invalid/', {
    method: 'POST',
    headers: { 'content-type': contentType },
    body: raw,
  })
    .formData()
    .catch(() => {
      throw new DiscordApiError(400, 50035, 'Invalid Form Body');
    });
  let payload: Record<string, unknown> = {};
  const files: UploadedFile[] = [];
  for (const [key, value] of form.entries()) {
    if (key === 'payload_json' && typeof value === 'string') {
      payload = parseJsonObject(value);
      continue;
    }
    const index = /^files\[(\d+)\]$/.exec(key)?.[1];
    if (index !== undefined && typeof value !== 'string') {
      files.push({
        index: Number(index),
        filename: value.name,
        contentType: value.type || 'application/octet-stream',
        bytes: Buffer.from(await value.arrayBuffer()),
      });
    }
  }
  return { payload, files };
}
