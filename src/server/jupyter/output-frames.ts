/**
 * Keeps frames to JSON-format clients under 1 MiB. Open WebUI's websocket
 * library (and others with the same default) closes the connection on a
 * bigger frame, losing the rest of the execution, idle included. So a
 * stream's text is split across several messages, and an output whose bundle
 * would not fit (a big figure) is replaced by its text/plain part, cut, with a
 * note saying what was left out and how to get it (save it to a file). Binary
 * (v1) clients, browsers, take any size and get every message whole.
 */
import { encodeJsonFrame } from './frame-codec.js';
import type { JupyterMessage } from './wire-message.js';

export const JSON_FRAME_LIMIT_BYTES = 1024 * 1024;
/** Room left in a frame for its header, parent header and framing. */
const ENVELOPE_ALLOWANCE_BYTES = 64 * 1024;
const TEXT_KEPT_CHARACTERS = 16 * 1024;

/** The JSON frames that carry `message`, each under the limit where the message allows it. */
export function jsonFrames(message: JupyterMessage): string[] {
  const frame = encodeJsonFrame(message);
  if (Buffer.byteLength(frame) <= JSON_FRAME_LIMIT_BYTES) return [frame];
  const type = message.header.msg_type;
  const { content } = message;
  if (type === 'stream' && typeof content.text === 'string') {
    return splitText(content.text).map((text) => encodeJsonFrame({ ...message, content: { ...content, text } }));
  }
  if ((type === 'display_data' || type === 'execute_result') && content.data && typeof content.data === 'object') {
    const data = content.data as Record<string, unknown>;
    const size = Buffer.byteLength(frame);
    const plain = typeof data['text/plain'] === 'string' ? (data['text/plain'] as string) : '';
    const kept = plain.length > TEXT_KEPT_CHARACTERS ? `${plain.slice(0, TEXT_KEPT_CHARACTERS)}…` : plain;
    const note =
      `[sandcell: this output (${Object.keys(data).join(', ')}) is ${size} bytes, over the 1 MiB a JSON ` +
      'websocket frame may carry here; save it to a file (e.g. fig.savefig) and read the file instead]';
    const reduced = { ...content, data: { 'text/plain': kept ? `${kept}\n${note}` : note }, metadata: {} };
    return [encodeJsonFrame({ ...message, content: reduced })];
  }
  return [frame];
}

/** Pieces whose UTF-8 stays within a frame (a JSON-escaped character takes at most 6 bytes). */
function splitText(text: string): string[] {
  const piece = Math.floor((JSON_FRAME_LIMIT_BYTES - ENVELOPE_ALLOWANCE_BYTES) / 6);
  const pieces: string[] = [];
  for (let start = 0; start < text.length; start += piece) {
    let end = Math.min(text.length, start + piece);
    // Never split a surrogate pair.
    if (end < text.length && /[\uD800-\uDBFF]/.test(text.charAt(end - 1))) end--;
    pieces.push(text.slice(start, end));
    start = end - piece;
  }
  return pieces;
}
