/**
 * The channels websocket's two encodings: JSON text frames (Open WebUI, AG2,
 * anything that offers no subprotocol) and `v1.kernel.websocket.jupyter.org`
 * (JupyterLab's client, Jupyter Server's gateway client): a binary frame of u64
 * little-endian offsets, then the channel and the JSON parts, then buffers.
 * Frames come from clients: a malformed one is a FrameError, never a crash.
 */
import { isChannel, type JupyterMessage, type MessageHeader } from './wire-message.js';

export const V1_SUBPROTOCOL = 'v1.kernel.websocket.jupyter.org';

export type FrameFormat = 'json' | 'v1';

export class FrameError extends Error {}

const encoder = new TextEncoder();
const decoder = new TextDecoder('utf-8', { fatal: true });

function asObject(value: unknown, what: string): Record<string, unknown> {
  if (value === null || value === undefined) return {};
  if (typeof value !== 'object' || Array.isArray(value)) throw new FrameError(`${what} must be an object`);
  return value as Record<string, unknown>;
}

/** Checks the parts every request needs; dates and extra header fields are accepted as sent. */
function toMessage(parts: {
  channel: unknown;
  header: unknown;
  parent_header: unknown;
  metadata: unknown;
  content: unknown;
  buffers: Uint8Array[];
}): JupyterMessage {
  const channel = parts.channel ?? 'shell';
  if (!isChannel(channel)) throw new FrameError(`unknown channel ${JSON.stringify(channel)}`);
  const header = asObject(parts.header, 'header');
  if (typeof header.msg_type !== 'string' || header.msg_type === '') throw new FrameError('header.msg_type is missing');
  if (typeof header.msg_id !== 'string') header.msg_id = String(header.msg_id ?? '');
  return {
    channel,
    header: header as MessageHeader,
    parent_header: asObject(parts.parent_header, 'parent_header') as Partial<MessageHeader>,
    metadata: asObject(parts.metadata, 'metadata'),
    content: asObject(parts.content, 'content'),
    buffers: parts.buffers,
  };
}

function parseJson(text: string, what: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    throw new FrameError(`${what} is not JSON`);
  }
}

export function decodeJsonFrame(text: string): JupyterMessage {
  const frame = asObject(parseJson(text, 'the frame'), 'the frame');
  // AG2 sends `"buffers": {}`; binary buffers cannot travel in a JSON frame anyway.
  return toMessage({
    channel: frame.channel,
    header: frame.header,
    parent_header: frame.parent_header,
    metadata: frame.metadata,
    content: frame.content,
    buffers: [],
  });
}

export function decodeV1Frame(frame: Uint8Array): JupyterMessage {
  const view = new DataView(frame.buffer, frame.byteOffset, frame.byteLength);
  if (frame.byteLength < 8) throw new FrameError('frame too short');
  const count = Number(view.getBigUint64(0, true));
  if (count < 6 || 8 * (1 + count) > frame.byteLength) throw new FrameError('bad offset count');
  const offsets: number[] = [];
  for (let index = 0; index < count; index++) {
    const offset = Number(view.getBigUint64(8 * (index + 1), true));
    const previous = offsets[index - 1] ?? 8 * (1 + count);
    if (offset < previous || offset > frame.byteLength) throw new FrameError('offsets out of order or range');
    offsets.push(offset);
  }
  const part = (index: number): Uint8Array => frame.subarray(offsets[index], offsets[index + 1]);
  const text = (index: number, what: string): string => {
    try {
      return decoder.decode(part(index));
    } catch {
      throw new FrameError(`${what} is not UTF-8`);
    }
  };
  const json = (index: number, what: string) => parseJson(text(index, what), what);
  const buffers: Uint8Array[] = [];
  for (let index = 5; index < count - 1; index++) buffers.push(part(index));
  return toMessage({
    channel: text(0, 'channel'),
    header: json(1, 'header'),
    parent_header: json(2, 'parent_header'),
    metadata: json(3, 'metadata'),
    content: json(4, 'content'),
    buffers,
  });
}

export function encodeJsonFrame(message: JupyterMessage): string {
  const { header } = message;
  return JSON.stringify({
    header,
    msg_id: header.msg_id,
    msg_type: header.msg_type,
    parent_header: message.parent_header,
    metadata: message.metadata,
    content: message.content,
    buffers: [],
    channel: message.channel,
  });
}

export function encodeV1Frame(message: JupyterMessage): Uint8Array {
  const parts = [
    encoder.encode(message.channel),
    encoder.encode(JSON.stringify(message.header)),
    encoder.encode(JSON.stringify(message.parent_header)),
    encoder.encode(JSON.stringify(message.metadata)),
    encoder.encode(JSON.stringify(message.content)),
    ...message.buffers,
  ];
  const count = parts.length + 1;
  const headerBytes = 8 * (1 + count);
  const total = parts.reduce((sum, part) => sum + part.byteLength, headerBytes);
  const frame = new Uint8Array(total);
  const view = new DataView(frame.buffer);
  view.setBigUint64(0, BigInt(count), true);
  let offset = headerBytes;
  parts.forEach((part, index) => {
    view.setBigUint64(8 * (index + 1), BigInt(offset), true);
    frame.set(part, offset);
    offset += part.byteLength;
  });
  view.setBigUint64(8 * count, BigInt(offset), true);
  return frame;
}

export function decodeFrame(data: Uint8Array | string, format: FrameFormat): JupyterMessage {
  if (typeof data === 'string') return decodeJsonFrame(data);
  if (format === 'v1') return decodeV1Frame(data);
  // A JSON-format client may still send its text as a binary frame.
  try {
    return decodeJsonFrame(decoder.decode(data));
  } catch (error) {
    throw error instanceof FrameError ? error : new FrameError('the frame is not UTF-8');
  }
}
