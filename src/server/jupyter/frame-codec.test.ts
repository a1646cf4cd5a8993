import { serialize } from '@jupyterlab/services/lib/kernel/serialize.js';
import { describe, expect, it } from 'vitest';
import {
  decodeFrame,
  decodeV1Frame,
  encodeJsonFrame,
  encodeV1Frame,
  FrameError,
  V1_SUBPROTOCOL,
} from './frame-codec.js';
import { reply } from './wire-message.js';

const sender = { session: 'kernel-session', username: 'sandcell' };
const request = {
  channel: 'shell' as const,
  header: { msg_id: 'm1', msg_type: 'execute_request', session: 's', username: 'u', date: '', version: '5.3' },
  parent_header: {},
  metadata: {},
  content: { code: 'print("é")' },
};

describe('frame codec', () => {
  it("reads JupyterLab's own v1 binary frames, with buffers", () => {
    const bytes = serialize({ ...request, buffers: [new Uint8Array([1, 2, 3]).buffer] } as never, V1_SUBPROTOCOL);
    const message = decodeV1Frame(new Uint8Array(bytes as ArrayBuffer));
    expect(message.channel).toBe('shell');
    expect(message.header.msg_type).toBe('execute_request');
    expect(message.content).toEqual({ code: 'print("é")' });
    expect(message.buffers.map((buffer) => [...buffer])).toEqual([[1, 2, 3]]);
  });

  it('writes v1 frames that read back whole, and JSON frames with the top-level msg_id and msg_type', () => {
    const answer = reply(sender, 'iopub', 'stream', { name: 'stdout', text: 'ü\n' }, request.header);
    const decoded = decodeV1Frame(encodeV1Frame(answer));
    expect(decoded).toMatchObject({ channel: 'iopub', content: answer.content, parent_header: request.header });
    expect(decoded.header).toEqual(answer.header);
    const json = JSON.parse(encodeJsonFrame(answer));
    expect(json).toMatchObject({ msg_type: 'stream', msg_id: answer.header.msg_id, channel: 'iopub', buffers: [] });
    expect(json.header.date).toMatch(/Z$/);
  });

  it('accepts what loose clients send: buffers as a dict, no channel, JSON text in a binary frame', () => {
    const loose = JSON.stringify({ header: request.header, content: {}, buffers: {} });
    expect(decodeFrame(loose, 'json')).toMatchObject({ channel: 'shell', buffers: [], metadata: {} });
    expect(decodeFrame(new TextEncoder().encode(loose), 'json').header.msg_id).toBe('m1');
  });

  it('refuses malformed frames with a FrameError', () => {
    const bad = [
      () => decodeFrame('not json', 'json'),
      () => decodeFrame('{"header":{}}', 'json'),
      () => decodeFrame('{"header":{"msg_type":"x"},"channel":"nowhere"}', 'json'),
      () => decodeFrame('{"header":{"msg_type":"x"},"content":[1]}', 'json'),
      () => decodeV1Frame(new Uint8Array(4)),
      () => decodeV1Frame(new Uint8Array(new BigUint64Array([1000n, 0n]).buffer)),
      // Offsets that run backwards.
      () => decodeV1Frame(new Uint8Array(new BigUint64Array([6n, 56n, 60n, 50n, 70n, 70n, 70n]).buffer)),
    ];
    for (const attempt of bad) expect(attempt).toThrow(FrameError);
  });
});
