/**
 * The Jupyter front door driven by JupyterLab's own client library
 * (@jupyterlab/services, over `ws` in Node): real HTTP and websockets on
 * 127.0.0.1, real kernels on bubblewrap.
 */
import {
  type Kernel,
  KernelManager,
  type KernelMessage,
  KernelSpecManager,
  ServerConnection,
  SessionManager,
} from '@jupyterlab/services';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import type { SandcellServer } from '../src/server/index.js';
import { type LogCapture, startTestServer } from './support/server.js';

const KEY = 'lab-key-0123456789';
let server: SandcellServer & { logs: LogCapture };
let settings: ServerConnection.ISettings;
let kernels: KernelManager;
let sessions: SessionManager;

beforeAll(async () => {
  server = await startTestServer({ apiKeys: [`lab:${KEY}`], poolSize: 1 });
  settings = ServerConnection.makeSettings({
    baseUrl: `${server.url}/jupyter/`,
    wsUrl: `${server.url.replace('http', 'ws')}/jupyter/`,
    token: KEY,
    appendToken: true,
    WebSocket: WebSocket as unknown as typeof globalThis.WebSocket,
  });
  kernels = new KernelManager({ serverSettings: settings });
  sessions = new SessionManager({ kernelManager: kernels, serverSettings: settings });
  await sessions.ready;
});
afterAll(async () => {
  sessions?.dispose();
  kernels?.dispose();
  await server?.close();
});

interface Outcome {
  reply: KernelMessage.IExecuteReplyMsg;
  iopub: KernelMessage.IIOPubMessage[];
}

async function execute(kernel: Kernel.IKernelConnection, code: string): Promise<Outcome> {
  const iopub: KernelMessage.IIOPubMessage[] = [];
  const future = kernel.requestExecute({ code, stop_on_error: false });
  future.onIOPub = (message) => {
    iopub.push(message);
  };
  const reply = (await future.done) as KernelMessage.IExecuteReplyMsg;
  return { reply, iopub };
}

const types = (outcome: Outcome) => outcome.iopub.map((message) => message.header.msg_type);

describe('JupyterLab client', () => {
  it('lists a kernelspec per language, python3 the default', async () => {
    const specs = new KernelSpecManager({ serverSettings: settings });
    await specs.refreshSpecs();
    expect(specs.specs?.default).toBe('python3');
    expect(Object.keys(specs.specs?.kernelspecs ?? {}).sort()).toEqual([
      'bash',
      'ir',
      'javascript',
      'python3',
      'typescript',
    ]);
    expect(specs.specs?.kernelspecs.python3?.language).toBe('python');
    specs.dispose();
  });

  it('runs a Python notebook session: info, values, print, a chart, an error, interrupt, completion aids, restart, shutdown', async () => {
    const session = await sessions.startNew({
      path: 'analysis.ipynb',
      name: 'analysis.ipynb',
      type: 'notebook',
      kernel: { name: 'python3' },
    });
    const kernel = session.kernel;
    if (!kernel) throw new Error('no kernel');
    const info = await kernel.info;
    expect(info.protocol_version).toBe('5.3');
    expect(info.language_info.name).toBe('python');

    const sum = await execute(kernel, '1+1');
    expect(sum.reply.content.status).toBe('ok');
    expect(types(sum)).toEqual(['status', 'execute_input', 'execute_result', 'status']);
    const result = sum.iopub[2] as KernelMessage.IExecuteResultMsg;
    expect(result.content.data['text/plain']).toBe('2');
    expect(result.content.execution_count).toBe(1);

    const printed = await execute(kernel, 'x = 41\nprint("hello", x + 1)');
    const stream = printed.iopub.find((message) => message.header.msg_type === 'stream') as KernelMessage.IStreamMsg;
    expect(stream.content).toMatchObject({ name: 'stdout', text: 'hello 42\n' });

    const chart = await execute(kernel, 'import matplotlib.pyplot as plt\nplt.plot([1, 2, 3])\nplt.show()');
    const figure = chart.iopub.find(
      (message) => message.header.msg_type === 'display_data',
    ) as KernelMessage.IDisplayDataMsg;
    expect(String(figure.content.data['image/png']).length).toBeGreaterThan(1000);

    const failed = await execute(kernel, '1/0');
    expect(failed.reply.content.status).toBe('error');
    const error = failed.iopub.find((message) => message.header.msg_type === 'error') as KernelMessage.IErrorMsg;
    expect(error.content.ename).toBe('ZeroDivisionError');
    expect(Array.isArray(error.content.traceback)).toBe(true);

    // Interrupt over REST (as JupyterLab does) while a loop runs; the state stays.
    const looping = execute(kernel, 'import time\nwhile True: time.sleep(0.05)');
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    await kernel.interrupt();
    const interrupted = await looping;
    expect(interrupted.reply.content.status).toBe('error');
    expect(JSON.stringify(interrupted.iopub)).toContain('KeyboardInterrupt');
    const kept = await execute(kernel, 'x');
    expect(
      (kept.iopub.find((message) => message.header.msg_type === 'execute_result') as KernelMessage.IExecuteResultMsg)
        .content.data['text/plain'],
    ).toBe('41');

    const incomplete = await kernel.requestIsComplete({ code: 'for i in range(3):' });
    expect(incomplete.content).toMatchObject({ status: 'incomplete', indent: '    ' });
    const complete = await kernel.requestIsComplete({ code: 'x = 1' });
    expect(complete.content.status).toBe('complete');

    const completion = await kernel.requestComplete({ code: 'import math\nmath.fl', cursor_pos: 19 });
    expect(completion.content).toMatchObject({ status: 'ok', cursor_start: 17, cursor_end: 19 });
    expect((completion.content as { matches: string[] }).matches).toContain('floor');
    const inspection = await kernel.requestInspect({ code: 'len', cursor_pos: 3, detail_level: 0 });
    expect(inspection.content).toMatchObject({ status: 'ok', found: true });
    expect(JSON.stringify((inspection.content as KernelMessage.IInspectReply).data)).toContain(
      'Return the number of items',
    );

    const history = await kernel.requestHistory({ hist_access_type: 'tail', n: 2, output: false, raw: true });
    expect(history.content.status).toBe('ok');
    expect((history.content as KernelMessage.IHistoryReply).history.map((entry) => entry[2])).toContain('x');

    const sessionBefore = (await execute(kernel, '1')).reply.header.session;
    await kernel.restart();
    const afterRestart = await execute(kernel, 'x');
    expect(afterRestart.reply.header.session).not.toBe(sessionBefore);
    expect(afterRestart.reply.content.status).toBe('error');
    expect(JSON.stringify(afterRestart.iopub)).toContain('NameError');

    const id = kernel.id;
    await session.shutdown();
    const listed = await KernelManagerList();
    expect(listed).not.toContain(id);
  });

  it("answers input() through the client's stdin channel when it allows stdin", async () => {
    const kernel = await kernels.startNew({ name: 'python3' });
    const prompts: KernelMessage.IInputRequestMsg['content'][] = [];
    const iopub: KernelMessage.IIOPubMessage[] = [];
    const future = kernel.requestExecute({ code: 'name = input("Name? ")\nprint("hello", name)', allow_stdin: true });
    future.onStdin = (message) => {
      if (message.header.msg_type !== 'input_request') return;
      prompts.push((message as KernelMessage.IInputRequestMsg).content);
      kernel.sendInputReply({ status: 'ok', value: 'Ada' }, message.header as KernelMessage.IHeader<'input_request'>);
    };
    future.onIOPub = (message) => {
      iopub.push(message);
    };
    const reply = await future.done;
    expect(reply.content.status).toBe('ok');
    expect(prompts).toEqual([{ prompt: 'Name? ', password: false }]);
    const stream = iopub.find((message) => message.header.msg_type === 'stream') as KernelMessage.IStreamMsg;
    expect(stream.content.text).toContain('hello Ada');
    await kernel.shutdown();
  });

  it('shows sys.exit(n) as an error, as Jupyter does, and runs on: exit() and quit() end the cell, not the kernel', async () => {
    const kernel = await kernels.startNew({ name: 'python3' });
    await execute(kernel, 'import sys\nx = 1');
    const exited = await execute(kernel, 'sys.exit(3)');
    expect(exited.reply.content).toMatchObject({ status: 'error', ename: 'SystemExit', evalue: '3' });
    // Without IPython's advice, meant for its terminal, to exit with Ctrl-D.
    expect(types(exited)).toEqual(['status', 'execute_input', 'error', 'status']);
    for (const code of ['exit()', 'quit()']) {
      const ended = await execute(kernel, `x += 1\n${code}\nx = 100`);
      expect(ended.reply.content.status).toBe('ok');
      expect(types(ended)).toEqual(['status', 'execute_input', 'status']);
    }
    const kept = await execute(kernel, 'x');
    expect(
      (kept.iopub.find((message) => message.header.msg_type === 'execute_result') as KernelMessage.IExecuteResultMsg)
        .content.data['text/plain'],
    ).toBe('3');
    await kernel.shutdown();
  });

  it('runs JavaScript and bash kernels', async () => {
    for (const [name, code, expected] of [
      ['javascript', 'const n = 20; console.log(n + 22)', '42\n'],
      ['bash', 'echo $((6 * 7))', '42\n'],
    ] as const) {
      const kernel = await kernels.startNew({ name });
      const info = await kernel.info;
      expect(info.language_info.name).toBe(name);
      const outcome = await execute(kernel, code);
      expect(outcome.reply.content.status).toBe('ok');
      // Completion comes from the kernel's live state: `n`, or bash's own commands.
      const typed = name === 'javascript' ? 'retu' : 'grep';
      const completion = await kernel.requestComplete({ code: typed, cursor_pos: 4 });
      expect((completion.content as { matches: string[] }).matches).toContain(
        name === 'javascript' ? 'return' : 'grep',
      );
      const stream = outcome.iopub.find((message) => message.header.msg_type === 'stream') as KernelMessage.IStreamMsg;
      expect(stream.content.text).toBe(expected);
      await kernel.shutdown();
    }
  });
});

async function KernelManagerList(): Promise<string[]> {
  const response = await fetch(`${server.url}/jupyter/api/kernels`, { headers: { authorization: `token ${KEY}` } });
  return ((await response.json()) as { id: string }[]).map((kernel) => kernel.id);
}
