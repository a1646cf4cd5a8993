/**
 * What the supervisor does for kernels that speak on fds 3 and 4 (every
 * language but Python), with a fixture kernel in the place of the bash one:
 * their fds 1 and 2 become the running execution's stream events, in order
 * with their results, within the output budget; interrupt is SIGINT to the
 * kernel's group; a failed start says why.
 */
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHostSupervisor } from './support/host-supervisor.js';
import type { RawSandbox, WireMessage } from './support/raw-sandbox.js';

const FIXTURE = path.join(import.meta.dirname, 'fixtures', 'fd34-kernel.py');
const OUTPUT_BYTES = 256 * 1024;

const streamed = (messages: WireMessage[], name: string) =>
  messages
    .filter((message) => message.type === 'stream' && message.name === name)
    .map((message) => message.text)
    .join('');

describe('supervisor: a kernel on fds 3 and 4', () => {
  let raw: RawSandbox;

  beforeAll(async () => {
    raw = await startHostSupervisor({
      extraFiles: { 'sandcell_bash_kernel.py': FIXTURE },
      kernelOptions: { outputBytes: OUTPUT_BYTES },
    });
    const ready = await raw.ready();
    expect(ready.languages).toHaveProperty('bash');
    const created = await raw.request({ type: 'context-create', context: 'fixture', language: 'bash' });
    expect(created).toMatchObject({ ok: true, language: 'bash', version: 'fixture-1' });
  });
  afterAll(async () => {
    await raw?.close();
  });

  it('sends what the kernel writes to fds 1 and 2 as the execution’s streams, before its result', async () => {
    const messages = await raw.execute(
      'import os, sys\nprint("to stdout")\nsys.stdout.flush()\nos.write(2, b"to fd 2\\n")\nresult = 42',
      'fixture',
    );
    expect(messages.map((message) => [message.type, message.name ?? null])).toEqual([
      ['stream', 'stdout'],
      ['stream', 'stderr'],
      ['result', null],
      ['execution-end', null],
    ]);
    expect(messages.every((message) => message.context === 'fixture')).toBe(true);
    expect(streamed(messages, 'stdout')).toBe('to stdout\n');
    expect(streamed(messages, 'stderr')).toBe('to fd 2\n');
    expect(messages.at(-1)).toMatchObject({ status: 'ok', outputTruncated: false });
    // What it wrote while starting was not an execution's output.
    expect(raw.messages.some((message) => String(message.text ?? '').includes('starting'))).toBe(false);
  });

  it('keeps order when the output is far larger than a pipe holds, and decodes UTF-8 cut between writes', async () => {
    const messages = await raw.execute(
      'import os\nos.write(1, b"a" * 100000)\nos.write(1, b"\\xc3")\nos.write(1, b"\\xa9" + b"b" * 10000)\nresult = "done"',
      'fixture',
    );
    expect(streamed(messages, 'stdout')).toBe(`${'a'.repeat(100000)}é${'b'.repeat(10000)}`);
    const types = messages.map((message) => message.type);
    expect(types.slice(-2)).toEqual(['result', 'execution-end']);
    expect(types.filter((type) => type === 'stream').length).toBeGreaterThan(1);
  });

  it('cuts an execution’s output at outputBytes, says so on its end, and starts the next one afresh', async () => {
    const flooded = await raw.execute('import os\nfor _ in range(30):\n    os.write(1, b"x" * 10000)', 'fixture');
    expect(streamed(flooded, 'stdout')).toBe('x'.repeat(OUTPUT_BYTES));
    expect(flooded.at(-1)).toMatchObject({ type: 'execution-end', outputTruncated: true });
    const next = await raw.execute('print("small")', 'fixture');
    expect(streamed(next, 'stdout')).toBe('small\n');
    expect(next.at(-1)).toMatchObject({ outputTruncated: false });
  });

  it('interrupts with SIGINT to the kernel’s group; the kernel keeps its state', async () => {
    await raw.execute('kept = "yes"', 'fixture');
    const id = raw.id('loop');
    const from = raw.messages.length;
    raw.send({ type: 'execute', id, context: 'fixture', code: 'print("looping", flush=True)\nwhile True:\n    pass' });
    await raw.next((message) => message.type === 'stream' && message.id === id, from);
    raw.send({ type: 'interrupt', id, context: 'fixture' });
    await raw.next((message) => message.type === 'execution-end' && message.id === id, from);
    const events = raw.messages.slice(from).filter((message) => message.id === id);
    expect(events.find((message) => message.type === 'error')).toMatchObject({ name: 'Interrupted' });
    const after = await raw.execute('result = kept', 'fixture');
    expect(after.find((message) => message.type === 'result')?.data).toEqual({ 'text/plain': "'yes'" });
  });

  it('forwards the kernel’s replies to reset and ping', async () => {
    expect(await raw.request({ type: 'ping', context: 'fixture' })).toMatchObject({ ok: true, context: 'fixture' });
  });

  it('says why a kernel could not start: its stderr and exit code', async () => {
    const failed = await raw.request({
      type: 'context-create',
      context: 'broken',
      language: 'bash',
      env: { FIXTURE_FAIL: '1' },
    });
    expect(failed).toMatchObject({ ok: false, error: { code: 'context-start-failed' } });
    const message = String((failed.error as { message: string }).message);
    expect(message).toContain('cannot start, as asked');
    expect(message).toContain('exit code 3');
  });

  it('reports the kernel’s death as context-exit after what it sent', async () => {
    const from = raw.messages.length;
    raw.send({
      type: 'execute',
      id: 'dies',
      context: 'fixture',
      code: 'import os\nprint("last words", flush=True)\nos._exit(7)',
    });
    const exit = await raw.next((message) => message.type === 'context-exit', from);
    expect(exit).toMatchObject({ context: 'fixture', code: 7, signal: null });
    const before = raw.messages.slice(from, raw.messages.indexOf(exit));
    expect(streamed(before, 'stdout')).toBe('last words\n');
  });
});
