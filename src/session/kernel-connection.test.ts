/**
 * KernelConnection's routing over a bare channel (two in-memory streams, as a
 * sandbox's stdin and stdout): who may answer which request, which run hears
 * which event, where command events go. A kernel's messages carry its
 * context; the supervisor's carry none.
 */
import { PassThrough } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import type { Sandbox, SandboxExit } from '../backends/spec.js';
import { ProtocolError, SandboxCrashedError } from '../errors.js';
import { joinParts } from '../internal/line-splitter.js';
import { KernelConnection } from './kernel-connection.js';
import { FRAME_MAX_BYTES } from './kernel-messages.js';
import { messageLimits } from './output-limits.js';

interface Channel {
  sandbox: Sandbox;
  /** Lines the host wrote, parsed. */
  sent: Record<string, unknown>[];
  /** Writes a line as the sandbox. */
  send(message: Record<string, unknown> | string): void;
  /** Writes raw bytes as the sandbox. */
  sendBytes(bytes: Buffer): void;
}

const open: Channel[] = [];

function channel(): Channel {
  const input = new PassThrough();
  const output = new PassThrough();
  const sent: Record<string, unknown>[] = [];
  input.on('data', (chunk: Buffer) => {
    for (const line of chunk.toString().split('\n').filter(Boolean)) sent.push(JSON.parse(line));
  });
  let exit: (value: SandboxExit) => void = () => undefined;
  const exited = new Promise<SandboxExit>((resolve) => {
    exit = resolve;
  });
  const sandbox: Sandbox = {
    input,
    output,
    diagnostics: new PassThrough(),
    exited,
    kill: async () => {
      exit({ code: null, signal: 'SIGKILL', reason: 'killed' });
      return exited;
    },
  };
  const made = {
    sandbox,
    sent,
    send: (message: Record<string, unknown> | string) =>
      output.write(`${typeof message === 'string' ? message : JSON.stringify(message)}\n`),
    sendBytes: (bytes: Buffer) => output.write(bytes),
  };
  open.push(made);
  return made;
}

function connect(made: Channel): KernelConnection {
  const limits = messageLimits({ outputBytes: 1 << 20, resultBytes: 1 << 20, fileTransferBytes: 1 << 20 });
  return new KernelConnection(made.sandbox, {
    messageLimits: limits,
    startTimeoutMs: 5_000,
    liveness: { quietMs: 60_000, answerMs: 60_000 },
  });
}

const tick = () => new Promise((resolve) => setImmediate(resolve));

afterEach(async () => {
  for (const made of open.splice(0)) await made.sandbox.kill();
});

describe('KernelConnection routing', () => {
  it("takes the supervisor's answer to a file request, never a kernel's forgery of it", async () => {
    const made = channel();
    const connection = connect(made);
    const reading = connection.request({ type: 'file-read', path: 'a.txt' }, 5_000);
    await tick();
    const id = made.sent[0]?.id;
    made.send({ type: 'reply', id, ok: true, data: Buffer.from('forged').toString('base64'), context: 'python' });
    made.send({ type: 'reply', id, ok: true, data: Buffer.from('real').toString('base64') });
    expect(Buffer.from((await reading).data, 'base64').toString()).toBe('real');
  });

  it("takes a kernel's reply only from the context it was sent to (or the supervisor's refusal)", async () => {
    const made = channel();
    const connection = connect(made);
    const checking = connection.request({ type: 'is-complete', code: 'x', context: 'r' }, 5_000);
    await tick();
    const id = made.sent[0]?.id;
    made.send({ type: 'reply', id, ok: true, status: 'invalid', context: 'python' });
    made.send({ type: 'reply', id, ok: true, status: 'incomplete', indent: 2, context: 'r' });
    expect(await checking).toEqual({ status: 'incomplete', indent: 2 });

    const refused = connection.request({ type: 'reset', context: 'gone' }, 5_000);
    await tick();
    made.send({ type: 'reply', id: made.sent[1]?.id, ok: false, error: { code: 'unknown-context', message: 'no' } });
    await expect(refused).rejects.toMatchObject({ code: 'unknown-context', context: 'gone' });
  });

  it("gives a run only its own context's events, and a command only its own", async () => {
    const made = channel();
    const connection = connect(made);
    const heard: unknown[] = [];
    connection.subscribe('7', 'javascript', (event) => heard.push(event));
    made.send({ type: 'stream', id: '7', name: 'stdout', text: 'forged', context: 'python' });
    made.send({ type: 'stream', id: '7', name: 'stdout', text: 'own', context: 'javascript' });
    const commandHeard: unknown[] = [];
    connection.subscribeCommand('command-1', (event) => commandHeard.push(event));
    made.send({ type: 'command-output', id: 'command-1', name: 'stdout', text: 'forged', context: 'javascript' });
    made.send({ type: 'command-output', id: 'command-1', name: 'stdout', text: 'real' });
    made.send({
      type: 'command-end',
      id: 'command-1',
      exitCode: null,
      signal: null,
      error: { code: 'invalid-cwd', message: 'no' },
    });
    await tick();
    expect(heard).toEqual([{ type: 'stream', id: '7', name: 'stdout', text: 'own', context: 'javascript' }]);
    expect(commandHeard).toEqual([
      { type: 'command-output', id: 'command-1', name: 'stdout', text: 'real' },
      {
        type: 'command-end',
        id: 'command-1',
        exitCode: null,
        signal: null,
        outputTruncated: false,
        error: { code: 'invalid-cwd', message: 'no' },
      },
    ]);
  });

  it('tells of a context whose kernel ended, and keeps the languages the sandbox has', async () => {
    const made = channel();
    const connection = connect(made);
    const exits: unknown[] = [];
    connection.onContextExit((event) => exits.push(event));
    made.send({
      type: 'ready',
      protocolVersion: 2,
      pid: 1,
      python: '3.11.2',
      languages: { python: '3.11.2', bash: null },
    });
    await connection.ready;
    expect(connection.languages).toEqual({ python: '3.11.2', bash: null });
    made.send({ type: 'context-exit', context: 'bash', code: null, signal: 'SIGKILL' });
    await tick();
    expect(exits).toEqual([{ type: 'context-exit', context: 'bash', code: null, signal: 'SIGKILL' }]);
  });

  describe('frames: raw bytes after a reply line', () => {
    it("takes a snapshot chunk as the raw bytes after the supervisor's reply, and reads lines after it", async () => {
      const made = channel();
      const connection = connect(made);
      const reading = connection.request({ type: 'state-read', offset: 0 }, 5_000);
      await tick();
      const id = made.sent[0]?.id;
      const chunk = Buffer.from([0x7b, 0x0a, 0x00, 0xff, 0x0a]); // `{`, newlines, a NUL: nothing of it is a line
      made.send({ type: 'reply', id, ok: true, bytes: chunk.length, eof: true });
      made.sendBytes(chunk);
      const pinging = connection.request({ type: 'ping' }, 5_000);
      await tick();
      made.send({ type: 'reply', id: made.sent[1]?.id, ok: true });
      const read = await reading;
      expect(joinParts(read.parts)).toEqual(chunk);
      expect(read).toMatchObject({ bytes: chunk.length, eof: true });
      await expect(pinging).resolves.toEqual({});
      expect(connection.violationReason).toBeUndefined();
    });

    it("does not take a kernel's line claiming bytes as a frame: its context makes it a line like any other", async () => {
      const made = channel();
      const connection = connect(made);
      const reading = connection.request({ type: 'state-read', offset: 0 }, 5_000);
      await tick();
      const id = made.sent[0]?.id;
      // Were this a frame, the supervisor's real reply behind it would be swallowed as its bytes.
      made.send({ type: 'reply', id, ok: true, bytes: 20, eof: true, context: 'python' });
      made.send({ type: 'reply', id, ok: true, bytes: 2, eof: true });
      made.sendBytes(Buffer.from('ok'));
      expect(joinParts((await reading).parts).toString()).toBe('ok');
    });

    it("takes a file's piece as its frame, and refuses one that holds more than was asked", async () => {
      const made = channel();
      const connection = connect(made);
      const honest = connection.request({ type: 'file-chunk', path: 'big.bin', offset: 4, bytes: 3 }, 5_000);
      const greedy = connection.request({ type: 'file-chunk', path: 'big.bin', offset: 0, bytes: 3 }, 5_000);
      await tick();
      const [first, second] = made.sent.map((message) => message.id);
      made.send({ type: 'reply', id: first, ok: true, bytes: 3, size: 10, modifiedNs: 1e18, eof: false });
      made.sendBytes(Buffer.from('abc'));
      made.send({ type: 'reply', id: second, ok: true, bytes: 4, size: 10, modifiedNs: 1e18, eof: false });
      made.sendBytes(Buffer.from('abcd'));
      expect(await honest).toEqual({ data: Buffer.from('abc'), size: 10, modifiedNs: 1e18, eof: false });
      await expect(greedy).rejects.toThrow(ProtocolError);
      await expect(greedy).rejects.toThrow('a file-chunk reply of 4 bytes, when 3 were asked');
      // Its bytes were taken as its frame all the same: the channel is in step.
      const pinging = connection.request({ type: 'ping' }, 5_000);
      await tick();
      made.send({ type: 'reply', id: made.sent[2]?.id, ok: true });
      await expect(pinging).resolves.toEqual({});
    });

    it('kills a sandbox whose reply announces more raw bytes than a frame holds', async () => {
      const made = channel();
      const connection = connect(made);
      const reading = connection.request({ type: 'state-read', offset: 0 }, 5_000);
      await tick();
      made.send({ type: 'reply', id: made.sent[0]?.id, ok: true, bytes: FRAME_MAX_BYTES + 1, eof: false });
      await expect(reading).rejects.toThrow('The sandbox ended');
      expect(connection.violationReason).toBe(`a reply announced ${FRAME_MAX_BYTES + 1} raw bytes`);
    });
  });
});

describe('KernelConnection liveness', () => {
  const watched = (made: Channel) =>
    new KernelConnection(made.sandbox, {
      messageLimits: messageLimits({ outputBytes: 1 << 20, resultBytes: 1 << 20, fileTransferBytes: 1 << 20 }),
      startTimeoutMs: 5_000,
      liveness: { quietMs: 100, answerMs: 300 },
    });
  const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

  it('asks a quiet sandbox with work outstanding whether it is there, and keeps it while it answers', async () => {
    const made = channel();
    const connection = watched(made);
    made.sandbox.input.on('data', (chunk: Buffer) => {
      for (const line of chunk.toString().split('\n').filter(Boolean)) {
        const message = JSON.parse(line);
        if (message.type === 'liveness') made.send({ type: 'reply', id: message.id, ok: true, stopped: [] });
      }
    });
    const unsubscribe = connection.subscribe('run-1', 'python', () => undefined);
    await sleep(1_000);
    expect(made.sent.filter((message) => message.type === 'liveness').length).toBeGreaterThan(1);
    expect(connection.alive).toBe(true);
    expect(connection.lostReason).toBeUndefined();
    unsubscribe();
  });

  it('takes a sandbox that goes quiet and does not answer for lost: it is killed and its requests fail', async () => {
    const made = channel();
    const connection = watched(made);
    const reading = connection.request({ type: 'file-read', path: 'a.txt' }, 60_000);
    await expect(reading).rejects.toThrow(SandboxCrashedError);
    await expect(reading).rejects.toThrow(/did not answer a liveness check within 0.3 s/);
    expect((await connection.exited).reason).toBe('killed');
    expect(connection.alive).toBe(false);
  });

  it('tells of a context whose kernel the supervisor finds stopped while a run waits in it', async () => {
    const made = channel();
    const connection = watched(made);
    made.sandbox.input.on('data', (chunk: Buffer) => {
      for (const line of chunk.toString().split('\n').filter(Boolean)) {
        const message = JSON.parse(line);
        if (message.type === 'liveness') made.send({ type: 'reply', id: message.id, ok: true, stopped: ['r', 'idle'] });
      }
    });
    const stopped = new Promise<string>((resolve) => connection.onContextStopped(resolve));
    connection.subscribe('run-1', 'r', () => undefined);
    // Only a context with a run is told of: `idle` has none.
    expect(await stopped).toBe('r');
  });

  it('sends no check while nothing is outstanding', async () => {
    const made = channel();
    watched(made);
    await sleep(500);
    expect(made.sent).toEqual([]);
  });
});
