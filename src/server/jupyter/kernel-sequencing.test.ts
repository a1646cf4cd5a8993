/**
 * The kernel's message sequencing over the channels socket, on the scripted
 * backend: order within an execution, iopub to every socket and replies only
 * to the asker, stop_on_error aborts, unknown requests, interrupts, bad frames,
 * idle culling. Real clients on real kernels are in test/jupyter-*.test.ts; the key's kernel
 * limit, on every backend, in test/contract/server-contract.ts.
 */
import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { byCode, printed, raised, value } from '../../../test/support/kernel-script.js';
import { startScriptedServer } from '../../../test/support/server.js';
import type { SandcellServer } from '../server.js';

// biome-ignore lint/suspicious/noExplicitAny: frames are read loosely in tests
type Frame = Record<string, any>;

let server: SandcellServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const script = byCode({
  '1+1': [value('2')],
  'print("hi")': [printed('hi\n'), value('None')],
  fail: [raised('ValueError', 'bad')],
  wait: [{ type: 'hang' }],
  'x = 1': [],
});

async function startKernel(options: Parameters<typeof startScriptedServer>[1] = {}): Promise<string> {
  server = await startScriptedServer(script, options);
  const response = await fetch(`${server.url}/jupyter/api/kernels`, { method: 'POST' });
  expect(response.status).toBe(201);
  return ((await response.json()) as { id: string }).id;
}

class Client {
  readonly frames: Frame[] = [];
  private waiters: (() => void)[] = [];

  private constructor(readonly socket: WebSocket) {
    socket.on('message', (data) => {
      this.frames.push(JSON.parse(String(data)));
      for (const waiter of this.waiters.splice(0)) waiter();
    });
  }

  static async open(kernelId: string): Promise<Client> {
    const socket = new WebSocket(`${server?.url.replace('http', 'ws')}/jupyter/api/kernels/${kernelId}/channels`);
    await new Promise((resolve, reject) => socket.once('open', resolve).once('error', reject));
    return new Client(socket);
  }

  send(msgType: string, content: Record<string, unknown> = {}, channel = 'shell'): string {
    const msgId = randomUUID();
    const header = { msg_id: msgId, msg_type: msgType, session: 'client', username: 'u', date: '', version: '5.3' };
    this.socket.send(JSON.stringify({ header, parent_header: {}, metadata: {}, content, channel }));
    return msgId;
  }

  /** The frames answering `msgId`, once its idle status came. */
  async until(
    msgId: string,
    done = (frame: Frame) => frame.msg_type === 'status' && frame.content.execution_state === 'idle',
  ): Promise<Frame[]> {
    for (;;) {
      const mine = this.frames.filter((frame) => frame.parent_header.msg_id === msgId);
      if (mine.some(done)) return mine;
      await new Promise<void>((resolve) => this.waiters.push(resolve));
    }
  }
}

const summary = (frames: Frame[]) =>
  frames.map((frame) => (frame.msg_type === 'status' ? `status:${frame.content.execution_state}` : frame.msg_type));

describe('the channels socket', () => {
  it('runs an execution as busy, input, outputs, reply, idle — then the next, in order', async () => {
    const client = await Client.open(await startKernel());
    const first = client.send('execute_request', { code: 'print("hi")' });
    const second = client.send('execute_request', { code: '1+1' });
    const firstFrames = await client.until(first);
    expect(summary(firstFrames)).toEqual([
      'status:busy',
      'execute_input',
      'stream',
      'execute_result',
      'execute_reply',
      'status:idle',
    ]);
    expect(firstFrames[1]?.content).toEqual({ code: 'print("hi")', execution_count: 1 });
    const secondFrames = await client.until(second);
    expect(secondFrames.find((frame) => frame.msg_type === 'execute_result')?.content).toMatchObject({
      data: { 'text/plain': '2' },
      execution_count: 2,
    });
    // The second's frames all come after the first's idle.
    const firstIdle = client.frames.indexOf(firstFrames.at(-1) as Frame);
    expect(client.frames.findIndex((frame) => frame.parent_header.msg_id === second)).toBeGreaterThan(firstIdle);
    client.socket.close();
  });

  it('sends iopub to every socket of the kernel and a reply only to the socket that asked', async () => {
    const kernelId = await startKernel();
    const asker = await Client.open(kernelId);
    const watcher = await Client.open(kernelId);
    const request = asker.send('execute_request', { code: '1+1' });
    await asker.until(request);
    const seen = await watcher.until(request);
    expect(summary(seen)).toEqual(['status:busy', 'execute_input', 'execute_result', 'status:idle']);
    asker.socket.close();
    watcher.socket.close();
  });

  it('aborts the executions queued behind an error when stop_on_error is set, and runs later ones', async () => {
    const client = await Client.open(await startKernel());
    const failing = client.send('execute_request', { code: 'fail', stop_on_error: true });
    const queued = client.send('execute_request', { code: '1+1' });
    const failed = await client.until(failing);
    expect(failed.find((frame) => frame.msg_type === 'error')?.content).toMatchObject({
      ename: 'ValueError',
      evalue: 'bad',
    });
    expect(failed.find((frame) => frame.msg_type === 'execute_reply')?.content.status).toBe('error');
    const aborted = await client.until(queued);
    expect(summary(aborted)).toEqual(['status:busy', 'execute_reply', 'status:idle']);
    expect(aborted[1]?.content.status).toBe('aborted');
    const later = await client.until(client.send('execute_request', { code: '1+1' }));
    expect(later.find((frame) => frame.msg_type === 'execute_reply')?.content.status).toBe('ok');
    client.socket.close();
  });

  it('answers an unknown request with an error reply, and skips a malformed frame without closing', async () => {
    const client = await Client.open(await startKernel());
    client.socket.send('{not json');
    client.socket.send(JSON.stringify({ header: { msg_id: 'x' }, channel: 'shell' }));
    const unknown = await client.until(client.send('debug_request', { command: 'initialize' }));
    const answer = unknown.find((frame) => frame.msg_type === 'debug_reply');
    expect(answer?.content).toMatchObject({ status: 'error', ename: 'UnknownRequest' });
    const control = client.send('usage_request', {}, 'control');
    const controlAnswer = await client.until(control, (frame) => frame.msg_type === 'usage_reply');
    expect(controlAnswer.at(-1)?.content.status).toBe('error');
    const comms = await client.until(client.send('comm_info_request'));
    expect(comms.find((frame) => frame.msg_type === 'comm_info_reply')?.content).toEqual({ status: 'ok', comms: {} });
    client.socket.close();
  });

  it('interrupts the running execution on a control interrupt_request; the kernel answers on', async () => {
    const client = await Client.open(await startKernel());
    const running = client.send('execute_request', { code: 'wait' });
    await client.until(running, (frame) => frame.msg_type === 'execute_input');
    const interrupt = client.send('interrupt_request', {}, 'control');
    const interruptReply = await client.until(interrupt, (frame) => frame.msg_type === 'interrupt_reply');
    expect(interruptReply.at(-1)?.channel).toBe('control');
    const ended = await client.until(running);
    expect(ended.find((frame) => frame.msg_type === 'error')?.content.ename).toBe('KeyboardInterrupt');
    const after = await client.until(client.send('execute_request', { code: '1+1' }));
    expect(after.find((frame) => frame.msg_type === 'execute_reply')?.content.status).toBe('ok');
    client.socket.close();
  });

  it("refuses a cell past the key's rate limit with an error saying what lifts it, in a kernel's terms", async () => {
    const client = await Client.open(await startKernel({ limits: { executionsPerMinute: 1 } }));
    await client.until(client.send('execute_request', { code: '1+1' }));
    const refused = await client.until(client.send('execute_request', { code: '1+1' }));
    const error = refused.find((frame) => frame.msg_type === 'error')?.content;
    expect(error?.evalue).toMatch(/per minute; retry in \d+ s\. Run the cell again then/);
    expect(error?.evalue).toContain('--executions-per-minute');
    client.socket.close();
  });

  it('culls a kernel whose session idled out with --on-idle close: its socket closes and listings drop it', async () => {
    const kernelId = await startKernel({ idleTimeoutMs: 300, onIdle: 'close' });
    const client = await Client.open(kernelId);
    await new Promise((resolve) => client.socket.once('close', resolve));
    const kernels = (await (await fetch(`${server?.url}/jupyter/api/kernels`)).json()) as unknown[];
    expect(kernels).toEqual([]);
    expect((await fetch(`${server?.url}/jupyter/api/kernels/${kernelId}`)).status).toBe(404);
  });
});
