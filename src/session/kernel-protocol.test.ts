import { describe, expect, it } from 'vitest';
import { fileErrorReason, parseKernelLine, parseReplyBody } from './kernel-protocol.js';
import { requestFailure } from './kernel-replies.js';

const line = (message: unknown) => JSON.stringify(message);

describe('parseKernelLine', () => {
  it('reads what an honest kernel sends', () => {
    expect(parseKernelLine(line({ type: 'ready', protocolVersion: 1, pid: 7, python: '3.12.1' }))).toEqual({
      type: 'ready',
      protocolVersion: 1,
      pid: 7,
      python: '3.12.1',
      languages: { python: '3.12.1' },
      statePipes: false,
    });
    expect(parseKernelLine(line({ type: 'stream', id: '3', name: 'stderr', text: 'x' }))).toEqual({
      type: 'stream',
      id: '3',
      name: 'stderr',
      text: 'x',
    });
    const data = { 'image/png': 'iVBOR', 'text/plain': '<Figure>' };
    expect(parseKernelLine(line({ type: 'result', id: '3', data, metadata: { a: 1 }, executionCount: 2 }))).toEqual({
      type: 'result',
      id: '3',
      data,
      metadata: { a: 1 },
    });
    expect(parseKernelLine(line({ type: 'error', id: 3, name: 'KeyError', value: "'k'", traceback: ['t'] }))).toEqual({
      type: 'error',
      id: '3',
      name: 'KeyError',
      value: "'k'",
      traceback: ['t'],
    });
    expect(
      parseKernelLine(line({ type: 'execution-end', id: '3', status: 'ok', executionCount: 4, outputTruncated: true })),
    ).toEqual({ type: 'execution-end', id: '3', executionCount: 4, outputTruncated: true });
    // The code's own exit (sys.exit, bash's exit): a status a shell could hold, else left out.
    expect(parseKernelLine(line({ type: 'execution-end', id: '3', exitStatus: 3 }))).toMatchObject({ exitStatus: 3 });
    for (const exitStatus of [-1, 256, 1.5, '3', null]) {
      expect(parseKernelLine(line({ type: 'execution-end', id: '3', exitStatus }))).not.toHaveProperty('exitStatus');
    }
    expect(parseKernelLine(line({ type: 'reply', id: '5', ok: true, data: 'AA==' }))).toMatchObject({
      type: 'reply',
      id: '5',
      ok: true,
      body: { data: 'AA==' },
    });
    expect(
      parseKernelLine(line({ type: 'reply', id: '5', ok: false, error: { code: 'not-found', message: 'no such' } })),
    ).toEqual({ type: 'reply', id: '5', ok: false, error: { code: 'not-found', message: 'no such' } });
  });

  it('hands large strings on as they are, without copying them', () => {
    const image = 'A'.repeat(1 << 20);
    const event = parseKernelLine(line({ type: 'display', id: '1', data: { 'image/png': image }, metadata: {} }));
    expect(event.type === 'display' && event.data['image/png']).toBe(image);
  });

  it('calls a line that is not a protocol message a violation', () => {
    for (const bad of ['not json', '42', 'null', '[]', '"text"', line({ id: '1' }), line({ type: 7, id: '1' })]) {
      expect(parseKernelLine(bad).type, bad).toBe('violation');
    }
  });

  it('ignores what carries nothing to act on: unknown types, missing ids', () => {
    for (const quiet of [
      { type: 'protocol-error', message: 'invalid JSON request' },
      { type: 'stream', name: 'stdout', text: 'no id' },
      { type: 'stream', id: { nested: true }, name: 'stdout', text: 'object id' },
      { type: 'something-new', id: '1' },
    ]) {
      expect(parseKernelLine(line(quiet)), JSON.stringify(quiet)).toEqual({ type: 'ignored' });
    }
  });

  it('drops execution events whose fields are unusable, as the host always did', () => {
    for (const unusable of [
      { type: 'stream', id: '1', name: 'bogus', text: 'x' },
      { type: 'stream', id: '1', name: 'stdout', text: ['x'] },
      { type: 'result', id: '1', data: 'not a bundle' },
      { type: 'display', id: '1', data: ['not', 'a', 'bundle'] },
      { type: 'display', id: '1', data: null },
    ]) {
      expect(parseKernelLine(line(unusable)), JSON.stringify(unusable)).toEqual({ type: 'ignored' });
    }
  });

  it('keeps only the usable fields of a hostile event', () => {
    expect(parseKernelLine(line({ type: 'display', id: '1', data: { 'text/plain': 'x' }, metadata: ['no'] }))).toEqual({
      type: 'display',
      id: '1',
      data: { 'text/plain': 'x' },
      metadata: {},
    });
    expect(
      parseKernelLine(line({ type: 'error', id: '1', name: 42, value: { not: 'text' }, traceback: ['ok', 7, null] })),
    ).toEqual({ type: 'error', id: '1', name: 'Error', value: '', traceback: ['ok'] });
    expect(parseKernelLine(line({ type: 'error', id: '1', traceback: 'one string' }))).toEqual({
      type: 'error',
      id: '1',
      name: 'Error',
      value: '',
      traceback: [],
    });
    expect(
      parseKernelLine(line({ type: 'execution-end', id: '1', executionCount: '9', outputTruncated: 'yes' })),
    ).toEqual({ type: 'execution-end', id: '1', outputTruncated: false });
    expect(parseKernelLine(line({ type: 'reply', id: '1', ok: 'true', error: 'boom' }))).toEqual({
      type: 'reply',
      id: '1',
      ok: false,
      error: { code: 'unknown', message: 'the request failed' },
    });
    expect(parseKernelLine(line({ type: 'reply', id: '1', error: { code: 5, message: ['x'] } }))).toEqual({
      type: 'reply',
      id: '1',
      ok: false,
      error: { code: 'unknown', message: 'the request failed' },
    });
  });
});

describe('parseKernelLine, protocol 2', () => {
  it('reads the supervisor: ready with its languages, context exits, a command from start to end, logs', () => {
    expect(
      parseKernelLine(
        line({
          type: 'ready',
          protocolVersion: 2,
          pid: 1,
          python: '3.11.2',
          languages: { python: '3.11.2', r: null, bash: 5 },
          statePipes: true,
        }),
      ),
    ).toEqual({
      type: 'ready',
      protocolVersion: 2,
      pid: 1,
      python: '3.11.2',
      languages: { python: '3.11.2', r: null, bash: null },
      statePipes: true,
    });
    // Anything but true is no pipes: the state goes in the archive.
    expect(
      parseKernelLine(line({ type: 'ready', protocolVersion: 2, pid: 1, python: '3', statePipes: 'yes' })),
    ).toEqual(expect.objectContaining({ statePipes: false }));
    expect(parseKernelLine(line({ type: 'context-exit', context: 'r', code: null, signal: 'SIGKILL' }))).toEqual({
      type: 'context-exit',
      context: 'r',
      code: null,
      signal: 'SIGKILL',
    });
    expect(parseKernelLine(line({ type: 'command-started', id: 'c1', pid: 42 }))).toEqual({
      type: 'command-started',
      id: 'c1',
      pid: 42,
    });
    expect(parseKernelLine(line({ type: 'command-output', id: 'c1', name: 'stderr', text: 'x' }))).toEqual({
      type: 'command-output',
      id: 'c1',
      name: 'stderr',
      text: 'x',
    });
    expect(
      parseKernelLine(line({ type: 'command-end', id: 'c1', exitCode: 3, signal: null, outputTruncated: true })),
    ).toEqual({ type: 'command-end', id: 'c1', exitCode: 3, signal: null, outputTruncated: true });
    expect(parseKernelLine(line({ type: 'log', message: 'preload failed' }))).toEqual({
      type: 'log',
      message: 'preload failed',
    });
  });

  it("keeps the context a kernel's message came with (the supervisor's, the last key)", () => {
    const forged = '{"type":"stream","id":"4","name":"stdout","text":"x","context":"victim","context":"javascript"}';
    expect(parseKernelLine(forged)).toEqual({
      type: 'stream',
      id: '4',
      name: 'stdout',
      text: 'x',
      context: 'javascript',
    });
    expect(parseKernelLine(line({ type: 'reply', id: '9', ok: true, context: 'r' }))).toMatchObject({
      type: 'reply',
      id: '9',
      context: 'r',
    });
  });

  it("ignores a supervisor's message that a kernel sent (it carries a context), and a context that is not a string", () => {
    for (const forged of [
      { type: 'ready', protocolVersion: 2, pid: 1, python: '3', context: 'python' },
      { type: 'command-end', id: 'c1', exitCode: 0, signal: null, context: 'bash' },
      { type: 'command-output', id: 'c1', name: 'stdout', text: 'forged', context: 'python' },
      { type: 'command-started', id: 'c1', pid: 1, context: 'python' },
      { type: 'stream', id: '1', name: 'stdout', text: 'x', context: 7 },
      { type: 'command-started', id: 'c1', pid: 'one' },
      { type: 'context-exit', code: 1 },
    ]) {
      expect(parseKernelLine(line(forged)), JSON.stringify(forged)).toEqual({ type: 'ignored' });
    }
  });
});

describe('parseReplyBody', () => {
  it('reads each reply by the request it answers', () => {
    expect(parseReplyBody('is-complete', { status: 'incomplete', indent: 4 })).toEqual({
      status: 'incomplete',
      indent: 4,
    });
    expect(parseReplyBody('is-complete', { status: 'weird', indent: 'x' })).toEqual({ status: 'complete', indent: 0 });
    expect(parseReplyBody('file-read', { data: 'AA==' })).toEqual({ data: 'AA==' });
    expect(parseReplyBody('reset', { anything: true })).toEqual({});
    expect(
      parseReplyBody('file-list', {
        entries: [
          { path: 'a.csv', type: 'file', size: 3, modifiedMs: 5 },
          { path: 'fifo', type: 'pipe', size: 'x' },
          { type: 'file' },
          'not an entry',
        ],
      }),
    ).toEqual({
      entries: [
        { path: 'a.csv', type: 'file', size: 3, modifiedMs: 5 },
        { path: 'fifo', type: 'other', size: 0, modifiedMs: 0 },
      ],
    });
  });

  it("reads the supervisor's replies about contexts and commands", () => {
    expect(parseReplyBody('context-create', { pid: 12, language: 'r', version: '4.2.2' })).toEqual({
      pid: 12,
      version: '4.2.2',
    });
    expect(
      parseReplyBody('command-list', {
        commands: [
          { id: 'command-1', pid: 30, command: 'sleep 9', cwd: '/mnt/data', startedMs: 1000 },
          { id: 'command-2', pid: 'x', command: 'ls' },
          { id: 7, command: 'no id' },
          'not a command',
        ],
      }),
    ).toEqual({
      commands: [
        { id: 'command-1', pid: 30, command: 'sleep 9', cwd: '/mnt/data', startedMs: 1000 },
        { id: 'command-2', pid: 0, command: 'ls', cwd: '', startedMs: 0 },
      ],
    });
    expect(parseReplyBody('command-list', {})).toEqual({ invalid: 'a command-list reply without its commands' });
  });

  it('reads the ports a sandbox lists as the sandbox’s words: checked, bounded, one per port, by number', () => {
    expect(
      parseReplyBody('port-list', {
        ports: [
          { port: 8000, address: '127.0.0.1' },
          { port: 3000, address: '::' },
          { port: 8000, address: '::1' },
          { port: 0, address: '127.0.0.1' },
          { port: 70_000, address: '127.0.0.1' },
          { port: 1.5, address: '127.0.0.1' },
          { port: 22 },
          { port: 9000, address: 'x'.repeat(500) },
          'not a port',
        ],
      }),
    ).toEqual({
      ports: [
        { port: 3000, address: '::' },
        { port: 8000, address: '127.0.0.1' },
        { port: 9000, address: 'x'.repeat(64) },
      ],
    });
    const many = Array.from({ length: 5000 }, (_, index) => ({ port: index + 1, address: '127.0.0.1' }));
    expect((parseReplyBody('port-list', { ports: many }) as { ports: unknown[] }).ports).toHaveLength(1024);
    expect(parseReplyBody('port-list', {})).toEqual({ invalid: 'a port-list reply without its ports' });
    expect(
      requestFailure(
        { type: 'port-connect', port: 80, token: 'a'.repeat(32) },
        { code: 'ingress-unavailable', message: 'no socket' },
      ),
    ).toMatchObject({ code: 'ports-unavailable' });
  });

  it('says what is missing from a reply that lacks its payload', () => {
    expect(parseReplyBody('file-read', {})).toEqual({ invalid: 'a file-read reply without its data' });
    expect(parseReplyBody('file-list', { entries: 'x' })).toEqual({ invalid: 'a file-list reply without its entries' });
  });
});

describe('parseReplyBody: file-chunk', () => {
  const request = { type: 'file-chunk', path: 'big.bin', offset: 8, bytes: 4 } as const;
  // The frame's bytes as the connection gives them: in the pieces they came in.
  const reply = (fields: Record<string, unknown>) => ({
    parts: [Buffer.from('ab'), Buffer.from('cd')],
    bytes: 4,
    size: 20,
    modifiedNs: 1.7e18,
    eof: false,
    ...fields,
  });

  it('reads a piece whose frame, size, time and end agree with what was asked', () => {
    expect(parseReplyBody('file-chunk', reply({}), request)).toEqual({
      data: Buffer.from('abcd'),
      size: 20,
      modifiedNs: 1.7e18,
      eof: false,
    });
    expect(parseReplyBody('file-chunk', reply({ size: 12, eof: true }), request)).toMatchObject({ eof: true });
    const past = { parts: [], bytes: 0, size: 5, eof: true };
    expect(parseReplyBody('file-chunk', reply(past), request)).toMatchObject({ data: Buffer.alloc(0), eof: true });
  });

  it('refuses one that lacks a field, holds more than asked, or would end a read early or never', () => {
    const refused: [Record<string, unknown>, string][] = [
      [{ parts: 'YWJjZA==' }, 'without its data'],
      [{ parts: ['YWJjZA=='] }, 'without its data'],
      [{ bytes: 5 }, 'without its data'],
      [{ size: -1 }, 'size, modification time or end'],
      [{ size: '20' }, 'size, modification time or end'],
      [{ modifiedNs: 1.5 }, 'size, modification time or end'],
      [{ modifiedNs: undefined }, 'size, modification time or end'],
      [{ eof: 'no' }, 'size, modification time or end'],
      [{ parts: [Buffer.from('abcde')], bytes: 5 }, 'of 5 bytes, when 4 were asked'],
      [{ size: 10, eof: true }, 'past the end of a file of 10 bytes'],
      [{ eof: true }, 'whose end disagrees with its size'],
      [{ size: 12 }, 'whose end disagrees with its size'],
      [{ parts: [], bytes: 0 }, 'an empty file-chunk reply before the end'],
    ];
    for (const [fields, invalid] of refused) {
      const parsed = parseReplyBody('file-chunk', reply(fields), request);
      expect(parsed, JSON.stringify(fields)).toEqual({ invalid: expect.stringContaining(invalid) });
    }
    // What was asked bounds the reply: without it, no reply is taken.
    expect(parseReplyBody('file-chunk', reply({}))).toEqual({
      invalid: 'a file-chunk reply without the request it answers',
    });
  });
});

describe('fileErrorReason', () => {
  it('keeps the reasons it knows and reads any other code as internal', () => {
    expect(fileErrorReason('not-found')).toBe('not-found');
    expect(fileErrorReason('no-space')).toBe('no-space');
    expect(fileErrorReason('../../etc')).toBe('internal');
  });
});
