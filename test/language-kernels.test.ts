/**
 * The bash, R and JavaScript kernels inside real sandboxes, spoken to at the wire
 * (docs/kernel-protocol.md): started by the supervisor as contexts, sharing
 * /mnt/data with Python, interrupted through the supervisor.
 */
import { expect, it } from 'vitest';
import { createBubblewrapBackend } from '../src/backends/bubblewrap/index.js';
import { createDockerBackend } from '../src/backends/docker/index.js';
import type { SandboxBackend } from '../src/backends/spec.js';
import { describeWhenAvailable, unavailableReason } from './support/backends.js';
import { RawSandbox, type WireMessage } from './support/raw-sandbox.js';

const PNG_BASE64_PREFIX = 'iVBORw0KGgo';

function stdoutOf(messages: WireMessage[]): string {
  return messages
    .filter((message) => message.type === 'stream' && message.name === 'stdout')
    .map((message) => message.text)
    .join('');
}

function ofType(messages: WireMessage[], type: string): WireMessage[] {
  return messages.filter((message) => message.type === type);
}

async function withRawSandbox(backend: SandboxBackend, body: (raw: RawSandbox) => Promise<void>): Promise<void> {
  const raw = await RawSandbox.open(backend);
  try {
    await raw.ready();
    await body(raw);
  } finally {
    await raw.close();
  }
}

/** Starts an execution, interrupts it once it has printed `started`, and returns its messages. */
async function interruptAfterStart(raw: RawSandbox, code: string, context: string): Promise<WireMessage[]> {
  const id = raw.id('e');
  const from = raw.messages.length;
  raw.send({ type: 'execute', id, code, context });
  await raw.next((message) => message.type === 'stream' && message.id === id, from);
  raw.send({ type: 'interrupt', id, context });
  await raw.next((message) => message.type === 'execution-end' && message.id === id, from);
  return raw.messages.slice(from).filter((message) => message.id === id);
}

const backends: { name: string; backendName: string; backend: SandboxBackend }[] = [
  { name: 'bubblewrap', backendName: 'bubblewrap', backend: createBubblewrapBackend() },
  {
    name: 'bubblewrap --rootfs runtime',
    backendName: 'bubblewrap-rootfs',
    backend: createBubblewrapBackend({ rootfs: 'runtime' }),
  },
  { name: 'docker', backendName: 'docker', backend: createDockerBackend() },
];

for (const { name, backendName, backend } of backends) {
  const reason = await unavailableReason(backend);
  describeWhenAvailable(`bash, R and JavaScript kernels on ${name}`, backendName, reason, () => {
    it('ready names bash and R among the languages', async () => {
      await withRawSandbox(backend, async (raw) => {
        const ready = await raw.ready();
        expect(Object.keys(ready.languages as object)).toEqual(expect.arrayContaining(['bash', 'r']));
      });
    });

    it('bash: a persistent shell in /mnt/data; exit status as the error; interrupt keeps the shell', async () => {
      await withRawSandbox(backend, async (raw) => {
        const created = await raw.request({ type: 'context-create', context: 'bash', language: 'bash' });
        expect(created).toMatchObject({ ok: true, language: 'bash' });
        expect(stdoutOf(await raw.execute('pwd; mkdir -p sub; cd sub; kept=yes', 'bash'))).toBe('/mnt/data\n');
        expect(stdoutOf(await raw.execute('echo "$kept $PWD $(id -un)"', 'bash'))).toBe('yes /mnt/data/sub sandbox\n');
        const failed = await raw.execute('false', 'bash');
        expect(ofType(failed, 'error')[0]).toMatchObject({ name: 'ExitStatus', value: 'exit status 1' });
        const interrupted = await interruptAfterStart(raw, 'echo started; sleep 60; echo after', 'bash');
        expect(ofType(interrupted, 'error')[0]).toMatchObject({ name: 'Interrupted' });
        expect(stdoutOf(interrupted)).toBe('started\n');
        expect(stdoutOf(await raw.execute('echo "$kept"', 'bash'))).toBe('yes\n');
      });
    });

    it('R: results, a PNG plot, errors as data, interrupt keeping the state, files shared with bash and Python', async () => {
      await withRawSandbox(backend, async (raw) => {
        expect(await raw.request({ type: 'context-create', context: 'r', language: 'r' }, 60_000)).toMatchObject({
          ok: true,
          language: 'r',
        });
        await raw.request({ type: 'context-create', context: 'bash', language: 'bash' });
        await raw.execute('echo "from bash" > shared.txt', 'bash');
        const read = await raw.execute('kept <- readLines("shared.txt"); kept', 'r');
        expect(ofType(read, 'result')[0]?.data).toEqual({ 'text/plain': '[1] "from bash"' });
        const plotted = await raw.execute('plot(1:10)', 'r');
        const image = ofType(plotted, 'display')[0]?.data as Record<string, string> | undefined;
        expect(image?.['image/png']).toMatch(new RegExp(`^${PNG_BASE64_PREFIX}`));
        const failed = await raw.execute('stop("boom")', 'r');
        expect(ofType(failed, 'error')[0]).toMatchObject({ name: 'simpleError', value: 'boom' });
        const interrupted = await interruptAfterStart(raw, 'cat("started\\n"); Sys.sleep(60)', 'r');
        expect(ofType(interrupted, 'error')[0]).toMatchObject({ name: 'Interrupted' });
        expect(ofType(await raw.execute('kept', 'r'), 'result')[0]?.data).toEqual({ 'text/plain': '[1] "from bash"' });
        expect(stdoutOf(await raw.execute('print(open("shared.txt").read().strip())'))).toBe('from bash\n');
      });
    });

    it('JavaScript: what a callback prints after its cell ended comes as the next execution’s output', async () => {
      await withRawSandbox(backend, async (raw) => {
        const created = await raw.request({ type: 'context-create', context: 'javascript', language: 'javascript' });
        expect(created).toMatchObject({ ok: true, language: 'javascript' });
        const first = await raw.execute(
          "setTimeout(() => console.log('later'), 100); console.log('now')",
          'javascript',
        );
        expect(stdoutOf(first)).toBe('now\n');
        await new Promise((resolve) => setTimeout(resolve, 500));
        expect(stdoutOf(await raw.execute("console.log('next')", 'javascript'))).toBe('later\nnext\n');
      });
    });
  });
}
