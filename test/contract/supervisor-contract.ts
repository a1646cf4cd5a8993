/**
 * The supervisor's own behaviour (src/kernel/sandcell_supervisor.py) in a
 * sandbox of each backend, spoken to at the wire (docs/kernel-protocol.md).
 * Two parts: the protocol's cases (supervisor-protocol-cases.ts), which any
 * backend that speaks the protocol passes, the scripted one included; and
 * here, the sandbox's (processes, signals, pipes, limits), which only a real
 * sandbox has.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SandboxBackend } from '../../src/backends/spec.js';
import { RawSandbox } from '../support/raw-sandbox.js';
import { type ContractOptions, isAlive, KERNEL_FROM_SHELL } from './contract-support.js';
import { runSupervisorProtocolCases } from './supervisor-protocol-cases.js';

/** A bash line listing every process of the sandbox as `pid command line`. */
const LIST_PROCESSES =
  'cd /proc; for pid in [0-9]*; do [ -r $pid/cmdline ] && echo "$pid $(tr "\\0" " " < $pid/cmdline)"; done';

async function processes(raw: RawSandbox): Promise<string[]> {
  return (await raw.command(LIST_PROCESSES)).stdout.trim().split('\n');
}

async function withRaw<T>(
  backend: SandboxBackend,
  options: Parameters<typeof RawSandbox.open>[1],
  body: (raw: RawSandbox) => Promise<T>,
) {
  const raw = await RawSandbox.open(backend, options);
  try {
    await raw.ready();
    return await body(raw);
  } finally {
    await raw.close();
  }
}

/** The whole contract: the protocol's cases, then what only a real sandbox has (processes, signals, pipes, limits). */
export function runSupervisorContract(options: ContractOptions): void {
  runSupervisorProtocolCases(options);
  describe(`supervisor sandbox: ${options.name}`, () => {
    const backend = options.createBackend();
    let raw: RawSandbox;

    beforeAll(async () => {
      raw = await RawSandbox.open(backend);
    });
    afterAll(async () => {
      await raw?.close();
    });

    it('streams a command’s output as it comes, in order, and decodes UTF-8 cut between writes', async () => {
      const run = await raw.command(
        "for i in 1 2 3; do echo line $i; sleep 0.2; done; printf '\\xc3'; sleep 0.2; printf '\\xa9\\n'",
      );
      const outputs = run.messages.filter((message) => message.type === 'command-output');
      expect(outputs.length).toBeGreaterThan(1);
      expect(run.stdout).toBe('line 1\nline 2\nline 3\né\n');
      expect(run.messages.at(-1)?.type).toBe('command-end');
    });

    it('runs commands in /mnt/data or the cwd asked (relative under /mnt/data), with the env asked', async () => {
      await raw.request({ type: 'file-write', path: 'sub/keep.txt', data: Buffer.from('x').toString('base64') });
      const here = await raw.command('pwd; echo "$GREETING"; printenv SANDCELL_KERNEL_OPTIONS || echo none', {
        cwd: 'sub',
        env: { GREETING: 'hello' },
      });
      expect(here.stdout).toBe('/mnt/data/sub\nhello\nnone\n');
      expect((await raw.command('pwd')).stdout).toBe('/mnt/data\n');
      expect((await raw.command('pwd', { cwd: '/tmp' })).stdout).toBe('/tmp\n');
      const missing = await raw.command('pwd', { cwd: 'no/such/directory' });
      expect(missing.messages).toHaveLength(1);
      expect(missing.end).toMatchObject({ exitCode: null, error: { code: 'invalid-cwd' } });
    });

    it('gives a command its stdin when asked, and SIGPIPE its default', async () => {
      const id = raw.id('stdin');
      const from = raw.messages.length;
      raw.send({ type: 'command-start', id, command: 'cat; echo done', stdin: true });
      await raw.next((message) => message.type === 'command-started' && message.id === id, from);
      raw.send({ type: 'command-stdin', id, data: 'first ' });
      raw.send({ type: 'command-stdin', id, data: 'second\n', eof: true });
      const end = await raw.next((message) => message.type === 'command-end' && message.id === id, from);
      expect(end.exitCode).toBe(0);
      const output = raw.messages
        .slice(from)
        .filter((message) => message.id === id && message.type === 'command-output');
      expect(output.map((message) => message.text).join('')).toBe('first second\ndone\n');
      // Without stdin a command reads end of file, and a pipe's reader leaving ends its writer.
      expect((await raw.command('cat; yes | head -n 2')).stdout).toBe('y\ny\n');
    });

    it('signals the command’s whole process group: its grandchildren end too', async () => {
      const id = raw.id('group');
      const from = raw.messages.length;
      raw.send({ type: 'command-start', id, command: 'sleep 4241 & sleep 4242 & wait' });
      await raw.next((message) => message.type === 'command-started' && message.id === id, from);
      const listed = await raw.request({ type: 'command-list' });
      expect((listed.commands as { id: string }[]).map((command) => command.id)).toContain(id);
      // Both sleeps have started once the listing shows them.
      while (!(await processes(raw)).some((line) => line.includes('sleep 4242'))) await raw.command('sleep 0.05');
      raw.send({ type: 'command-signal', id, signal: 'SIGTERM' });
      const end = await raw.next((message) => message.type === 'command-end' && message.id === id, from);
      expect(end.signal).toBe('SIGTERM');
      expect((await processes(raw)).filter((line) => /sleep 424[12]/.test(line))).toEqual([]);
      const after = await raw.request({ type: 'command-list' });
      expect((after.commands as { id: string }[]).map((command) => command.id)).not.toContain(id);
    });

    it('ends a command whose background grandchild still holds its output open', async () => {
      const run = await raw.command('echo started; sleep 4243 & echo leaving');
      expect(run.end).toMatchObject({ exitCode: 0 });
      expect(run.stdout).toBe('started\nleaving\n');
      expect((await processes(raw)).some((line) => line.includes('sleep 4243'))).toBe(true);
    });

    it('caps each stream of a command at outputBytes and says so', async () => {
      await withRaw(backend, { kernelOptions: { outputBytes: 64 * 1024 } }, async (small) => {
        const run = await small.command(
          'head -c 1000000 /dev/zero | tr "\\0" x; head -c 1000000 /dev/zero | tr "\\0" y >&2; echo tail',
        );
        expect(run.end).toMatchObject({ exitCode: 0, outputTruncated: true });
        expect(run.stdout).toBe('x'.repeat(64 * 1024));
        expect(run.stderr).toBe('y'.repeat(64 * 1024));
      });
    });

    it('answers a command it cannot start for the process limit with an error, and goes on', async () => {
      await withRaw(backend, { limits: { processes: 40 } }, async (small) => {
        const filled = await small.execute(
          'import os, time\nchildren = []\nwhile True:\n    try:\n        pid = os.fork()\n    except OSError:\n        break\n    if pid == 0:\n        time.sleep(600)\n        os._exit(0)\n    children.append(pid)\nlen(children) > 0',
        );
        expect(filled.find((message) => message.type === 'result')?.data).toEqual({ 'text/plain': 'True' });
        const refused = await small.command('echo never');
        expect(refused.end).toMatchObject({ exitCode: null, error: { code: 'spawn-failed' } });
        await small.execute(
          'import signal\nfor pid in children:\n    os.kill(pid, signal.SIGKILL)\n    os.waitpid(pid, 0)',
        );
        expect((await small.command('echo again')).stdout).toBe('again\n');
      });
    });

    it('refuses to read in pieces what file-read refuses: links the code planted, a FIFO', async () => {
      const made = await raw.command(
        'mkdir links && cd links && printf kept > canary.txt && printf x > own.txt && ln own.txt hard && ' +
          'ln -s /etc/passwd passwd && ln -s /etc etc && mkfifo fifo',
      );
      expect(made.end).toMatchObject({ exitCode: 0 });
      // Canary: a plain file beside them reads, so each refusal below is the one asked for.
      const canary = await raw.request({ type: 'file-chunk', path: 'links/canary.txt', offset: 0, bytes: 100 });
      expect(canary).toMatchObject({ ok: true, bytes: 4, eof: true });
      expect((canary.data as Buffer).toString()).toBe('kept');
      const expected = { passwd: 'symlink', 'etc/passwd': 'symlink', hard: 'hard-link', fifo: 'not-a-file' };
      for (const [name, code] of Object.entries(expected)) {
        const path = `links/${name}`;
        const read = await raw.request({ type: 'file-read', path });
        const chunk = await raw.request({ type: 'file-chunk', path, offset: 0, bytes: 100 });
        expect(chunk, name).toMatchObject({ ok: false, error: { code } });
        expect(read, name).toMatchObject({ ok: false, error: { code } });
        // Nor is one written in pieces, at the start or further on.
        for (const offset of [0, 1]) {
          const piece = Buffer.from('x');
          const written = await raw.request({ type: 'file-write-chunk', path, offset, bytes: 1 }, undefined, piece);
          expect(written, `${name} at ${offset}`).toMatchObject({ ok: false, error: { code } });
        }
      }
      for (const path of ['../escape', '/etc/escape', 'links/../../escape']) {
        const written = await raw.request(
          { type: 'file-write-chunk', path, offset: 0, bytes: 1 },
          undefined,
          Buffer.from('x'),
        );
        expect(written, path).toMatchObject({ ok: false, error: { code: 'invalid-path' } });
      }
      // The hard link's other name still holds what it held.
      expect((await raw.command('cat links/own.txt')).stdout).toBe('x');
      expect(await raw.request({ type: 'ping' })).toMatchObject({ ok: true });
    });

    it('streams a Python context’s state through a pipe: saved as it is read, loaded as it is written; bad pipes refused', async () => {
      expect(await raw.ready()).toMatchObject({ statePipes: true });
      expect((await raw.execute('kept = {"n": 41, "items": list(range(100_000))}')).at(-1)).toMatchObject({
        status: 'ok',
      });
      // No archive begun yet, then names that are not a pipe's: refused.
      expect(await raw.request({ type: 'state-pipe', mode: 'save', name: 'context-python.pipe' })).toMatchObject({
        ok: false,
        error: { code: 'invalid-request' },
      });
      expect(await raw.request({ type: 'state-begin', mode: 'save' })).toMatchObject({ ok: true });
      for (const name of ['../escape.pipe', 'context-python.state', '/tmp/x', 7]) {
        const refused = await raw.request({ type: 'state-pipe', mode: 'save', name });
        expect(refused, String(name)).toMatchObject({ ok: false, error: { code: 'invalid-request' } });
        expect(await raw.request({ type: 'state-begin', mode: 'save' })).toMatchObject({ ok: true });
      }
      const pipe = await raw.request({ type: 'state-pipe', mode: 'save', name: 'context-python.pipe' });
      expect(pipe).toMatchObject({ ok: true, path: '/tmp/.sandcell-state/context-python.pipe' });
      const saving = raw.request({ type: 'state-save', context: 'python', path: pipe.path, stream: true });
      const chunks: Buffer[] = [];
      for (let offset = 0; ; ) {
        const read = await raw.request({ type: 'state-read', offset });
        expect(read).toMatchObject({ ok: true });
        chunks.push(read.data as Buffer);
        offset += (read.data as Buffer).length;
        if (read.eof) break;
      }
      expect(await saving).toMatchObject({ ok: true, saved: ['kept'], skipped: [] });
      const state = Buffer.concat(chunks);
      expect(state.subarray(0, 24).toString()).toBe('sandcell-python-state 1\n');

      // Back into the same kernel, after the name is gone: loaded as the frames come.
      await raw.execute('del kept');
      expect(await raw.request({ type: 'state-begin', mode: 'load' })).toMatchObject({ ok: true });
      const into = await raw.request({ type: 'state-pipe', mode: 'load', name: 'context-python.pipe' });
      expect(into).toMatchObject({ ok: true });
      const loading = raw.request({ type: 'state-load', context: 'python', path: into.path });
      const half = Math.floor(state.length / 2);
      for (const [frame, eof] of [
        [state.subarray(0, half), false],
        [state.subarray(half), true],
      ] as const) {
        const written = await raw.request({ type: 'state-write', bytes: frame.length, eof }, undefined, frame);
        expect(written).toMatchObject({ ok: true });
      }
      expect(await loading).toMatchObject({ ok: true, restored: ['kept'], skipped: [] });
      const printed = await raw.execute('print(kept["n"] + 1, len(kept["items"]))');
      expect(printed.find((message) => message.type === 'stream')).toMatchObject({ text: '42 100000\n' });

      // Every frame written (the writer closed) before the kernel opens the pipe: nothing lost.
      await raw.execute('del kept');
      expect(state.length).toBeLessThan(1 << 20); // all of it fits in the pipe, with no reader yet
      expect(await raw.request({ type: 'state-begin', mode: 'load' })).toMatchObject({ ok: true });
      const late = await raw.request({ type: 'state-pipe', mode: 'load', name: 'context-python.pipe' });
      expect(
        await raw.request({ type: 'state-write', bytes: state.length, eof: true }, undefined, state),
      ).toMatchObject({
        ok: true,
      });
      expect(await raw.request({ type: 'state-load', context: 'python', path: late.path })).toMatchObject({
        ok: true,
        restored: ['kept'],
      });
      const again = await raw.execute('print(kept["n"])');
      expect(again.find((message) => message.type === 'stream')).toMatchObject({ text: '41\n' });
      expect(await raw.request({ type: 'state-end' })).toMatchObject({ ok: true });
    });

    it('removes a context with its kernel’s processes', async () => {
      const created = await raw.request({ type: 'context-create', context: 'removable', language: 'python' });
      expect(await raw.request({ type: 'context-remove', context: 'removable' })).toMatchObject({ ok: true });
      expect((await processes(raw)).some((line) => line.startsWith(`${created.pid} `))).toBe(false);
    });

    it('reports a kernel that cannot start', async () => {
      const failed = await raw.request({
        type: 'context-create',
        context: 'nowhere',
        language: 'python',
        cwd: '/no/such/dir',
      });
      expect(failed).toMatchObject({ ok: false, error: { code: 'context-start-failed' } });
      expect(await raw.request({ type: 'ping', context: 'nowhere' })).toMatchObject({
        error: { code: 'unknown-context' },
      });
    });

    it('reports a kernel killed from outside as context-exit and keeps the sandbox; restart brings it back', async () => {
      const created = await raw.request({ type: 'context-create', context: 'doomed', language: 'python' });
      const from = raw.messages.length;
      await raw.command(`kill -KILL ${created.pid}`);
      const exit = await raw.next((message) => message.type === 'context-exit', from);
      expect(exit).toMatchObject({ context: 'doomed', code: null, signal: 'SIGKILL' });
      expect(await raw.execute('1', 'doomed')).toContainEqual(
        expect.objectContaining({ type: 'error', name: 'ContextError' }),
      );
      expect(await raw.request({ type: 'context-restart', context: 'doomed' })).toMatchObject({ ok: true });
      const back = await raw.execute('6 * 7', 'doomed');
      expect(back.find((message) => message.type === 'result')?.data).toEqual({ 'text/plain': '42' });
    });

    it('drops a line its kernel sends that is not a protocol message, and the kernel goes on', async () => {
      await raw.request({ type: 'context-create', context: 'forger', language: 'python' });
      const forged = await raw.execute(
        `import os\n${KERNEL_FROM_SHELL}\n` +
          'kernel.channel.write(b"not json\\n")\nkernel.channel.write(b\'{"type": "stream", "id": "x", "context": "other"}\\n\')\n"after"',
        'forger',
      );
      expect(forged.find((message) => message.type === 'result')?.data).toEqual({ 'text/plain': "'after'" });
      const claimed = raw.messages.filter((message) => message.id === 'x');
      expect(claimed.map((message) => message.context)).toEqual(['forger']);
      expect(
        raw.messages.some(
          (message) => message.type === 'log' && String(message.message).includes('not a protocol message'),
        ),
      ).toBe(true);
    });

    it('kills everything it started when the host closes the channel', async () => {
      const fresh = await RawSandbox.open(backend);
      try {
        await fresh.ready();
        await fresh.request({ type: 'context-create', context: 'other', language: 'python' });
        await fresh.command('sleep 4244 > /dev/null 2>&1 &');
        const started = fresh.id('long');
        fresh.send({ type: 'command-start', id: started, command: 'sleep 4245' });
        await fresh.next((message) => message.type === 'command-started' && message.id === started);
        const inside = await processes(fresh);
        expect(inside.filter((line) => /sleep 424[45]|sandcell_kernel/.test(line))).toHaveLength(4);
        const processIds = (await fresh.sandbox.usage?.())?.processIds ?? [];
        fresh.sandbox.input.end();
        const exit = await fresh.sandbox.exited;
        expect(exit.reason).toBe('exited');
        expect(exit.code).toBe(0);
        for (const pid of processIds) expect(isAlive(pid)).toBe(false);
      } finally {
        await fresh.close();
      }
    });

    it('for a version-1 host, the Python kernel’s death ends the sandbox with its status', async () => {
      const fresh = await RawSandbox.open(backend);
      try {
        await fresh.ready();
        fresh.send({ type: 'execute', id: 'e', code: 'import os, signal\nos.kill(os.getpid(), signal.SIGKILL)' });
        expect(await fresh.sandbox.exited).toMatchObject({ code: 128 + 9 });
      } finally {
        await fresh.close();
      }
    });
  });
}
