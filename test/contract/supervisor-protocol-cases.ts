/**
 * The supervisor contract's protocol cases (docs/kernel-protocol.md): what any
 * backend that speaks the protocol answers at the wire: requests and their
 * replies, ids, contexts, files while a kernel is busy, errors for what it does
 * not know. Run in every real sandbox by supervisor-contract.ts, and on the
 * scripted backend by src/backends/scripted/scripted-supervisor.test.ts.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SandboxBackend } from '../../src/backends/spec.js';
import { RawSandbox } from '../support/raw-sandbox.js';

export interface ProtocolCaseOptions {
  name: string;
  createBackend: () => SandboxBackend;
}

/**
 * The code and commands the protocol's cases run: real Python and bash, named
 * so that the scripted backend's test can answer each as they do.
 */
export const PROTOCOL_CASE_CODE = {
  failingCommand: 'echo out; echo err >&2; exit 3',
  spin: 'print("spinning", flush=True)\nwhile True:\n    pass',
  setShared: 'shared = "first"',
  readShared: 'shared',
  workingDirectory: 'import os\nos.getcwd()',
  setKept: 'kept = 1',
  readKept: 'kept',
  one: '1',
} as const;

const CODE = PROTOCOL_CASE_CODE;

/**
 * The protocol's cases: what any backend that speaks the protocol answers,
 * given a Python that runs PROTOCOL_CASE_CODE and a bash that runs its commands.
 */
export function runSupervisorProtocolCases({ name, createBackend }: ProtocolCaseOptions): void {
  describe(`supervisor protocol: ${name}`, () => {
    const backend = createBackend();
    let raw: RawSandbox;

    beforeAll(async () => {
      raw = await RawSandbox.open(backend);
    });
    afterAll(async () => {
      await raw?.close();
    });

    it('says it is ready with protocol 2, the Python version and the languages present', async () => {
      const ready = await raw.ready();
      expect(ready.protocolVersion).toBe(2);
      expect(ready.python).toMatch(/^3\.\d+\.\d+$/);
      expect((ready.languages as Record<string, unknown>).python).toBe(ready.python);
    });

    it('runs a command: its exit code is data, stdout and stderr apart', async () => {
      const run = await raw.command(CODE.failingCommand);
      expect(run.messages[0]).toMatchObject({ type: 'command-started', id: run.end.id });
      expect(run.messages[0]?.pid).toEqual(expect.any(Number));
      expect(run.stdout).toBe('out\n');
      expect(run.stderr).toBe('err\n');
      expect(run.end).toMatchObject({ exitCode: 3, signal: null, outputTruncated: false });
    });

    it('answers file requests while Python is busy', async () => {
      const id = raw.id('busy');
      const from = raw.messages.length;
      raw.send({ type: 'execute', id, code: CODE.spin });
      // Interrupt only what runs: an interrupt that comes before its execution starts is for nothing.
      await raw.next((message) => message.type === 'stream' && message.id === id, from);
      const written = await raw.request({
        type: 'file-write',
        path: 'busy.txt',
        data: Buffer.from('still here').toString('base64'),
      });
      expect(written.ok).toBe(true);
      const read = await raw.request({ type: 'file-read', path: 'busy.txt' });
      expect(Buffer.from(read.data as string, 'base64').toString()).toBe('still here');
      const listed = await raw.request({ type: 'file-list', path: '' });
      expect((listed.entries as { path: string }[]).map((entry) => entry.path)).toContain('busy.txt');
      expect(raw.messages.slice(from).some((message) => message.type === 'execution-end')).toBe(false);
      raw.send({ type: 'interrupt', id });
      const end = await raw.next((message) => message.type === 'execution-end' && message.id === id, from);
      expect(end).toMatchObject({ status: 'error', context: 'python' });
      const missing = await raw.request({ type: 'file-read', path: 'no-such-file' });
      expect(missing).toMatchObject({ ok: false, error: { code: 'not-found' } });
    });

    it('reads a file in pieces, each a raw frame after its reply, and refuses what file-read refuses', async () => {
      const path = 'chunked/big.bin';
      // One byte over a frame's 4 MiB and a bit: two pieces.
      const content = randomBytes((4 << 20) + 1000);
      expect(await raw.request({ type: 'file-write', path, data: content.toString('base64') })).toMatchObject({
        ok: true,
      });
      const pieces: Buffer[] = [];
      for (let offset = 0; ; ) {
        const piece = await raw.request({ type: 'file-chunk', path, offset, bytes: 4 << 20 });
        expect(piece).toMatchObject({ ok: true, size: content.length, modifiedNs: expect.any(Number) });
        // The supervisor's own reply: only one without a context may announce a frame.
        expect(piece).not.toHaveProperty('context');
        const data = piece.data as Buffer;
        expect(data.length).toBe(piece.bytes);
        pieces.push(data);
        offset += data.length;
        expect(piece.eof).toBe(offset >= content.length);
        if (piece.eof) break;
      }
      expect(pieces.map((piece) => piece.length)).toEqual([4 << 20, 1000]);
      expect(Buffer.concat(pieces).equals(content)).toBe(true);

      const middle = await raw.request({ type: 'file-chunk', path, offset: 10, bytes: 5 });
      expect(middle).toMatchObject({ ok: true, bytes: 5, eof: false });
      expect(middle.data).toEqual(content.subarray(10, 15));
      const past = await raw.request({ type: 'file-chunk', path, offset: content.length + 10, bytes: 100 });
      expect(past).toMatchObject({ ok: true, bytes: 0, size: content.length, eof: true });
      expect(past.data).toEqual(Buffer.alloc(0));

      for (const refused of ['no-such-file', 'chunked', '']) {
        const read = await raw.request({ type: 'file-read', path: refused });
        expect(read.ok).toBe(false);
        const chunk = await raw.request({ type: 'file-chunk', path: refused, offset: 0, bytes: 10 });
        expect(chunk, refused).toMatchObject({ ok: false, error: read.error as object });
      }
      expect(await raw.request({ type: 'file-chunk', path: 'no-such-file', offset: 0, bytes: 10 })).toMatchObject({
        error: { code: 'not-found' },
      });
      for (const fields of [
        { offset: 0, bytes: (4 << 20) + 1 },
        { offset: -1, bytes: 10 },
        { offset: 0, bytes: -1 },
        { offset: 0.5, bytes: 10 },
        { offset: 0, bytes: '10' },
        { offset: true, bytes: 10 },
        { bytes: 10 },
      ]) {
        expect(await raw.request({ type: 'file-chunk', path, ...fields }), JSON.stringify(fields)).toMatchObject({
          ok: false,
          error: { code: 'invalid-request' },
        });
      }
      // No frame followed a refusal: the channel is in step.
      expect(await raw.request({ type: 'ping' })).toMatchObject({ ok: true });
    });

    it('writes a file in pieces, each a raw frame after its line, only where the file ends', async () => {
      const path = 'written/big.bin';
      const content = randomBytes((4 << 20) + 1000);
      const first = content.subarray(0, 4 << 20);
      const rest = content.subarray(4 << 20);
      const write = (offset: number, piece: Buffer, target = path) =>
        raw.request({ type: 'file-write-chunk', path: target, offset, bytes: piece.length }, undefined, piece);
      expect(await write(0, first)).toMatchObject({ ok: true, size: 4 << 20 });
      expect(await write(4 << 20, rest)).toMatchObject({ ok: true, size: content.length });
      const read = await raw.request({ type: 'file-chunk', path, offset: (4 << 20) - 10, bytes: 1010 });
      expect(read.data).toEqual(content.subarray((4 << 20) - 10));
      expect(read).toMatchObject({ size: content.length, eof: true });

      // A piece that does not start where the file ends is refused, and the file stays as it was.
      expect(await write(10, Buffer.from('x'))).toMatchObject({ ok: false, error: { code: 'changed' } });
      expect(await write(0, Buffer.from('anew'))).toMatchObject({ ok: true, size: 4 });
      expect(await write(4, Buffer.alloc(0))).toMatchObject({ ok: true, size: 4 });
      expect(await write(1, Buffer.from('x'), 'no-such-file')).toMatchObject({
        ok: false,
        error: { code: 'not-found' },
      });
      expect(await write(0, Buffer.from('x'), '')).toMatchObject({ ok: false, error: { code: 'is-a-directory' } });

      // A frame over 4 MiB is passed over unread, and the request refused; so is one without its frame.
      const over = Buffer.alloc((4 << 20) + 1, 1);
      expect(await write(0, over, 'over.bin')).toMatchObject({ ok: false, error: { code: 'invalid-request' } });
      for (const fields of [{ offset: -1 }, { offset: 0.5 }, { offset: '0' }, {}]) {
        const refused = await raw.request(
          { type: 'file-write-chunk', path: 'fields.bin', bytes: 1, ...fields },
          undefined,
          Buffer.from('y'),
        );
        expect(refused, JSON.stringify(fields)).toMatchObject({ ok: false, error: { code: 'invalid-request' } });
      }
      expect(
        await raw.request({ type: 'file-write-chunk', path: 'fields.bin', offset: 0, data: 'eQ==' }),
      ).toMatchObject({ ok: false, error: { code: 'invalid-request' } });
      expect(await raw.request({ type: 'file-list', path: '' })).toMatchObject({ ok: true });
      const listed = (await raw.request({ type: 'file-list', path: '' })).entries as { path: string }[];
      expect(listed.map((entry) => entry.path)).not.toContain('over.bin');
      expect(listed.map((entry) => entry.path)).not.toContain('fields.bin');
      // No byte of a refused frame was taken for a request: the channel is in step.
      expect(await raw.request({ type: 'ping' })).toMatchObject({ ok: true });
    });

    it('keeps a second Python context apart from the first, each with its count and cwd', async () => {
      await raw.request({ type: 'file-write', path: 'work/f.txt', data: '' });
      await raw.execute(CODE.setShared, 'python');
      const created = await raw.request({ type: 'context-create', context: 'second', language: 'python', cwd: 'work' });
      expect(created).toMatchObject({ ok: true, language: 'python', pid: expect.any(Number) });
      // The supervisor's own replies carry no context: one that does came from a kernel.
      expect(created).not.toHaveProperty('context');
      const missing = await raw.execute(CODE.readShared, 'second');
      expect(missing.find((message) => message.type === 'error')?.name).toBe('NameError');
      expect(missing.every((message) => message.context === 'second')).toBe(true);
      const cwd = await raw.execute(CODE.workingDirectory, 'second');
      expect(cwd.find((message) => message.type === 'result')).toMatchObject({
        data: { 'text/plain': "'/mnt/data/work'" },
        executionCount: 2,
      });
      const first = await raw.execute(CODE.readShared);
      expect(first.find((message) => message.type === 'result')?.data).toEqual({ 'text/plain': "'first'" });
      expect(first.every((message) => message.context === 'python')).toBe(true);
      expect(await raw.request({ type: 'context-create', context: 'second', language: 'python' })).toMatchObject({
        ok: false,
        error: { code: 'context-exists' },
      });
    });

    it('restarts a context with a new kernel (state gone) and removes one', async () => {
      const created = await raw.request({ type: 'context-create', context: 'restartable', language: 'python' });
      await raw.execute(CODE.setKept, 'restartable');
      const restarted = await raw.request({ type: 'context-restart', context: 'restartable' });
      expect(restarted).toMatchObject({ ok: true, language: 'python' });
      expect(restarted.pid).not.toBe(created.pid);
      const after = await raw.execute(CODE.readKept, 'restartable');
      expect(after.find((message) => message.type === 'error')?.name).toBe('NameError');
      const removed = await raw.request({ type: 'context-remove', context: 'restartable' });
      expect(removed).toMatchObject({ ok: true });
      const gone = await raw.execute(CODE.one, 'restartable');
      expect(gone.find((message) => message.type === 'error')).toMatchObject({ name: 'ContextError' });
      expect(gone.at(-1)).toMatchObject({ type: 'execution-end', status: 'error' });
      expect(await raw.request({ type: 'ping', context: 'restartable' })).toMatchObject({
        ok: false,
        error: { code: 'unknown-context' },
      });
    });

    it('refuses a language the sandbox does not have, and a context id that is not one', async () => {
      expect(await raw.request({ type: 'context-create', context: 'c', language: 'cobol' })).toMatchObject({
        ok: false,
        error: { code: 'language-unavailable' },
      });
      expect(await raw.request({ type: 'context-create', context: 'bad id!', language: 'python' })).toMatchObject({
        ok: false,
        error: { code: 'invalid-request' },
      });
    });

    it('refuses a request it does not know, a bad signal and a line that is not JSON, and goes on', async () => {
      expect(await raw.request({ type: 'no-such-request' })).toMatchObject({
        ok: false,
        error: { code: 'unknown-request' },
      });
      expect(await raw.request({ type: 'command-signal', signal: 'SIGSTOP' })).toMatchObject({
        ok: false,
        error: { code: 'invalid-request' },
      });
      const from = raw.messages.length;
      raw.sandbox.input.write('not json\n');
      expect(await raw.next((message) => message.type === 'protocol-error', from)).toMatchObject({
        message: expect.any(String),
      });
      expect(await raw.request({ type: 'ping' })).toMatchObject({ ok: true, context: 'python' });
    });

    it('ends on shutdown', async () => {
      const fresh = await RawSandbox.open(backend);
      try {
        await fresh.ready();
        fresh.send({ type: 'shutdown' });
        expect(await fresh.sandbox.exited).toMatchObject({ code: 0, reason: 'exited' });
      } finally {
        await fresh.close();
      }
    });

    it("moves a snapshot's archive as raw frames, and passes over a frame too large to take, staying in step", async () => {
      await raw.execute(CODE.setKept);
      expect(await raw.request({ type: 'state-begin', mode: 'save' })).toMatchObject({ ok: true });
      const chunks: Buffer[] = [];
      for (let offset = 0; ; ) {
        const read = await raw.request({ type: 'state-read', offset });
        expect(read).toMatchObject({ ok: true, bytes: expect.any(Number) });
        const data = read.data as Buffer;
        expect(data.length).toBe(read.bytes);
        chunks.push(data);
        offset += data.length;
        if (read.eof === true) break;
      }
      expect(Buffer.concat(chunks).length).toBeGreaterThan(0);
      expect(await raw.request({ type: 'state-end' })).toMatchObject({ ok: true });

      expect(await raw.request({ type: 'state-begin', mode: 'load' })).toMatchObject({ ok: true });
      // 4 MiB is a frame's most: past it, the supervisor passes the frame over and refuses it. The
      // frame is requests, which would be answered if any of its bytes were read as lines.
      const forged = Buffer.from(`${JSON.stringify({ type: 'ping', id: 'forged' })}\n`);
      const tooLarge = Buffer.concat(Array.from({ length: Math.ceil((4 << 20) / forged.length) + 1 }, () => forged));
      const refused = await raw.request({ type: 'state-write', bytes: tooLarge.length }, undefined, tooLarge);
      expect(refused).toMatchObject({ ok: false, error: { code: 'invalid-request' } });
      expect(await raw.request({ type: 'ping' })).toMatchObject({ ok: true });
      expect(raw.messages.filter((message) => message.id === 'forged')).toEqual([]);
      expect(await raw.request({ type: 'state-end' })).toMatchObject({ ok: true });
      const kept = await raw.execute(CODE.readKept);
      expect(kept.find((message) => message.type === 'result')).toMatchObject({ data: { 'text/plain': '1' } });
    });
  });
}
