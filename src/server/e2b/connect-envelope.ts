/**
 * Connect-RPC's streaming framing (connectrpc.com/docs/protocol): each message
 * is one flag byte, a 4-byte big-endian length and that many bytes of JSON.
 * Flag 0x02 marks the end of the stream, whose JSON carries the error if the
 * call failed. A streaming request's body is one such envelope; its length is
 * bounded before anything is parsed.
 */
import type { Context } from 'hono';
import { ConnectError, toConnectError } from './errors.js';

export const END_STREAM_FLAG = 0x02;
const COMPRESSED_FLAG = 0x01;
const HEADER_BYTES = 5;

/** One message as an envelope. */
export function encodeEnvelope(message: unknown, flags = 0): Uint8Array {
  const json = Buffer.from(JSON.stringify(message), 'utf8');
  const envelope = Buffer.alloc(HEADER_BYTES + json.length);
  envelope.writeUInt8(flags, 0);
  envelope.writeUInt32BE(json.length, 1);
  json.copy(envelope, HEADER_BYTES);
  return envelope;
}

/** The envelope that ends a stream: `{}`, or `{"error": {code, message}}`. */
export function encodeEndStream(error?: ConnectError): Uint8Array {
  return encodeEnvelope(error ? { error: { code: error.code, message: error.message } } : {}, END_STREAM_FLAG);
}

/** The single message of a server-streaming request's body. */
export function decodeRequestEnvelope(body: Uint8Array, maxBytes: number): unknown {
  if (body.length < HEADER_BYTES) throw new ConnectError('invalid_argument', 'The request is not a Connect envelope.');
  const view = Buffer.from(body.buffer, body.byteOffset, body.byteLength);
  const flags = view.readUInt8(0);
  const length = view.readUInt32BE(1);
  if (flags & COMPRESSED_FLAG) {
    throw new ConnectError('unimplemented', 'Compressed Connect messages are not accepted; send them uncompressed.');
  }
  if (length > maxBytes)
    throw new ConnectError('resource_exhausted', `The message is ${length} bytes; at most ${maxBytes}.`);
  if (body.length !== HEADER_BYTES + length) {
    throw new ConnectError('invalid_argument', 'The request must hold exactly one Connect envelope.');
  }
  return parseMessage(view.subarray(HEADER_BYTES).toString('utf8'));
}

/** A JSON message (unary bodies, and envelope payloads). */
export function parseMessage(text: string): unknown {
  if (text.trim() === '') return {};
  try {
    return JSON.parse(text);
  } catch {
    throw new ConnectError('invalid_argument', 'The message is not valid JSON (only the JSON codec is served).');
  }
}

/** Whether a Connect call is a streaming one (its messages enveloped, connect-envelope.ts). */
export const isStreamingCall = (context: Context): boolean =>
  /^application\/connect\+/i.test(context.req.header('content-type') ?? '');

/** A streaming Connect call refused before it began: HTTP 200 and an end of stream carrying the error. */
export function connectStreamErrorResponse(error: unknown): Response {
  return new Response(encodeEndStream(toConnectError(error)), {
    status: 200,
    headers: { 'content-type': 'application/connect+json' },
  });
}
