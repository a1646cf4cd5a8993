import { describe, expect, it } from 'vitest';
import { decodeRequestEnvelope, END_STREAM_FLAG, encodeEndStream, encodeEnvelope } from './connect-envelope.js';
import { ConnectError } from './errors.js';

describe('Connect envelopes', () => {
  it('frames a message as flag, big-endian length and JSON, and reads it back', () => {
    const envelope = encodeEnvelope({ event: { start: { pid: 7 } } });
    const json = '{"event":{"start":{"pid":7}}}';
    expect([...envelope.subarray(0, 5)]).toEqual([0, 0, 0, 0, json.length]);
    expect(Buffer.from(envelope.subarray(5)).toString()).toBe(json);
    expect(decodeRequestEnvelope(envelope, 1024)).toEqual({ event: { start: { pid: 7 } } });
  });

  it('ends a stream with flag 0x02 and the error, if any', () => {
    expect(encodeEndStream()[0]).toBe(END_STREAM_FLAG);
    const ended = encodeEndStream(new ConnectError('deadline_exceeded', 'too slow'));
    expect(JSON.parse(Buffer.from(ended.subarray(5)).toString())).toEqual({
      error: { code: 'deadline_exceeded', message: 'too slow' },
    });
  });

  it('refuses truncated, oversized, compressed and trailing-garbage bodies with typed errors', () => {
    const good = encodeEnvelope({ a: 1 });
    const code = (body: Uint8Array, max = 1024) => {
      try {
        decodeRequestEnvelope(body, max);
        return 'ok';
      } catch (error) {
        return (error as ConnectError).code;
      }
    };
    expect(code(good.subarray(0, 3))).toBe('invalid_argument');
    expect(code(good.subarray(0, good.length - 1))).toBe('invalid_argument');
    expect(code(Buffer.concat([good, Buffer.from([0])]))).toBe('invalid_argument');
    expect(code(good, 4)).toBe('resource_exhausted');
    expect(code(Buffer.concat([Buffer.from([1]), good.subarray(1)]))).toBe('unimplemented');
    expect(code(encodeEnvelope('not json').fill(0x7b, 5))).toBe('invalid_argument');
  });
});
