import { createHash, randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  FileOperationError,
  InvalidInputError,
  InvalidPathError,
  KernelRequestError,
  SessionClosedError,
} from '../../src/errors.js';
import { Session } from '../../src/session/session.js';
import { assistContractCases } from './assist-contract.js';
import { commandCases } from './commands-contract.js';
import { contextCases } from './contexts-contract.js';

import { type ContractOptions, isAlive, KERNEL_FROM_SHELL, withSession } from './contract-support.js';

export function runBackendContract({ name, createBackend }: ContractOptions): void {
  describe(`backend contract: ${name}`, () => {
    const backend = createBackend();
    let session: Session;

    beforeAll(async () => {
      session = await Session.create({ backend });
    });
    afterAll(async () => {
      await session?.close();
    });

    it('returns the value of the last expression, and keeps state between runs', async () => {
      const first = await session.run('1+1');
      expect(first.status).toBe('ok');
      expect(first.results).toEqual([{ type: 'execute_result', data: { 'text/plain': '2' }, metadata: {} }]);
      await session.run('counter = 41');
      const second = await session.run('counter + 1');
      expect(second.results[0]?.data['text/plain']).toBe('42');
      expect(second.executionCount).toBeGreaterThan(first.executionCount);
    });

    it('streams stdout and stderr as they happen, including output written straight to fd 1 and 2', async () => {
      const seen: string[] = [];
      const execution = await session.run(
        [
          'import os, subprocess, sys, time, ctypes',
          'print("from print", flush=True)',
          'time.sleep(0.3)',
          'print("to stderr", file=sys.stderr)',
          'os.system("echo from-os-system")',
          'subprocess.run(["sh", "-c", "echo from-subprocess; echo sub-err >&2"])',
          'os.write(1, b"raw fd write\\n")',
          'ctypes.CDLL(None).printf(b"from C printf\\n")',
        ].join('\n'),
        { onStdout: (text) => seen.push(text) },
      );
      expect(execution.status).toBe('ok');
      expect(seen[0]).toBe('from print\n'); // arrived before the run ended
      for (const line of ['from print', 'from-os-system', 'from-subprocess', 'raw fd write', 'from C printf']) {
        expect(execution.stdout).toContain(line);
      }
      expect(execution.stderr).toContain('to stderr');
      expect(execution.stderr).toContain('sub-err');
    });

    it('gives rich results as MIME bundles: DataFrames as HTML, figures as PNG, SVG and JSON', async () => {
      const frame = await session.run('import pandas as pd\npd.DataFrame({"a": [1, 2], "b": ["x", "y"]})');
      expect(frame.results[0]?.data['text/html']).toContain('<table');
      expect(frame.results[0]?.data['text/plain']).toContain('a');

      const figure = await session.run('import matplotlib.pyplot as plt\nplt.plot([1, 3, 2])\nplt.title("t")');
      const png = figure.results.find((result) => result.type === 'display_data' && result.data['image/png']);
      expect(png).toBeDefined();
      const bytes = Buffer.from(String(png?.data['image/png']), 'base64');
      expect(bytes.subarray(0, 8)).toEqual(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]));

      const other = await session.run(
        'from IPython.display import SVG, JSON, display\n' +
          "display(SVG(\"<svg xmlns='http://www.w3.org/2000/svg' width='4' height='4'></svg>\"))\n" +
          'display(JSON({"k": [1, 2]}))',
      );
      expect(other.results[0]?.data['image/svg+xml']).toContain('<svg');
      expect(other.results[1]?.data['application/json']).toEqual({ k: [1, 2] });
    });

    it('reports errors in user code as data, with the traceback, and keeps going', async () => {
      const execution = await session.run('def f():\n    return 1 / 0\nf()');
      expect(execution.status).toBe('error');
      expect(execution.error?.name).toBe('ZeroDivisionError');
      expect(execution.error?.value).toBe('division by zero');
      expect(execution.error?.traceback.join('\n')).toContain('return 1 / 0');
      const syntax = await session.run('def broken(:');
      expect(syntax.status).toBe('error');
      expect(syntax.error?.name).toBe('SyntaxError');
      expect((await session.run('"still here"')).results[0]?.data['text/plain']).toBe("'still here'");
    });

    it('runs a second run after the first, in order (runs queue)', async () => {
      const slow = session.run('import time\ntime.sleep(0.3)\norder = ["slow"]');
      const fast = session.run('order.append("fast")\norder');
      const [first, second] = await Promise.all([slow, fast]);
      expect(first.status).toBe('ok');
      expect(second.results[0]?.data['text/plain']).toBe("['slow', 'fast']");
    });

    it('interrupts code at the timeout and keeps the state when the code stops', async () => {
      await session.run('kept = "yes"');
      const execution = await session.run('import time\nwhile True:\n    time.sleep(0.01)', { timeoutMs: 500 });
      expect(execution.status).toBe('timeout');
      expect(execution.error?.name).toBe('TimeoutError');
      expect(execution.stateLost).toBeUndefined();
      expect((await session.run('kept')).results[0]?.data['text/plain']).toBe("'yes'");
    });

    it('interrupts a pure-Python busy loop too', async () => {
      const execution = await session.run('while True:\n    pass', { timeoutMs: 500 });
      expect(execution.status).toBe('timeout');
      expect(execution.stateLost).toBeUndefined();
    });

    it('aborts a run through its AbortSignal', async () => {
      const controller = new AbortController();
      setTimeout(() => controller.abort(), 300);
      const execution = await session.run('import time\ntime.sleep(30)', { signal: controller.signal });
      expect(execution.status).toBe('error');
      expect(execution.error?.name).toBe('KeyboardInterrupt');
    });

    it('is the user `sandbox` with home /tmp, however the code asks, and its tools find their places', async () => {
      const execution = await session.run(
        `import getpass, grp, os, pwd, subprocess
import IPython, matplotlib
entry = pwd.getpwuid(os.getuid())
print("pwd", entry.pw_name, entry.pw_dir)
print("group", grp.getgrgid(os.getgid()).gr_name)
print("getpass", getpass.getuser())
print("home", os.path.expanduser("~"))
print("id", subprocess.run(["id", "-un"], capture_output=True, text=True).stdout.strip())
print("mpl", os.access(matplotlib.get_configdir(), os.W_OK), matplotlib.get_configdir())
print("ipython", IPython.paths.get_ipython_dir())
print("data owner is me", os.stat("/mnt/data").st_uid == os.getuid())`,
      );
      expect(execution.error).toBeUndefined();
      expect(execution.stdout.trim().split('\n')).toEqual([
        'pwd sandbox /tmp',
        'group sandbox',
        'getpass sandbox',
        'home /tmp',
        'id sandbox',
        'mpl True /tmp/.config/matplotlib',
        'ipython /tmp/.ipython',
        'data owner is me True',
      ]);
    });

    it('moves files in and out of /mnt/data', async () => {
      const binary = Buffer.from([0, 1, 2, 255, 254, 10, 13]);
      await session.files.write('in/data.bin', binary);
      await session.files.write('/mnt/data/notes.txt', 'héllo');
      const seen = await session.run(
        'import os\nsorted(os.listdir("/mnt/data/in")), open("notes.txt", encoding="utf-8").read()',
      );
      expect(seen.results[0]?.data['text/plain']).toBe("(['data.bin'], 'héllo')");
      await session.run('open("/mnt/data/made.csv", "w").write("a,b\\n1,2\\n")');
      expect((await session.files.read('made.csv')).toString()).toBe('a,b\n1,2\n');
      expect(await session.files.read('in/data.bin')).toEqual(binary);
      const listing = await session.files.list('', { recursive: true });
      expect(listing.map((entry) => entry.path)).toEqual(
        expect.arrayContaining(['in', 'in/data.bin', 'notes.txt', 'made.csv']),
      );
      expect(listing.find((entry) => entry.path === 'in/data.bin')).toMatchObject({ type: 'file', size: 7 });
      await session.files.remove('in');
      await expect(session.files.read('in/data.bin')).rejects.toMatchObject({ reason: 'not-found' });
      await expect(session.files.read('missing.txt')).rejects.toBeInstanceOf(FileOperationError);
    });

    it('streams a file over the transfer limit in chunks, and ends with an error when it changes meanwhile', async () => {
      await withSession(backend, { fileTransferBytes: 1 << 20 }, async (small) => {
        const written = await small.run(
          'import hashlib, os\ndata = os.urandom(10_000_000)\nopen("big.bin", "wb").write(data)\nhashlib.sha256(data).hexdigest()',
        );
        const digest = String(written.results[0]?.data['text/plain']).replace(/'/g, '');
        expect(digest).toMatch(/^[0-9a-f]{64}$/);
        // The point: read() stops at the transfer limit, stream() does not.
        await expect(small.files.read('big.bin')).rejects.toMatchObject({ reason: 'too-large' });
        const hash = createHash('sha256');
        const sizes: number[] = [];
        for await (const chunk of small.files.stream('big.bin', { expectedBytes: 10_000_000 })) {
          hash.update(chunk);
          sizes.push(chunk.length);
        }
        expect(sizes).toEqual([4 << 20, 4 << 20, 10_000_000 - (8 << 20)]);
        expect(hash.digest('hex')).toBe(digest);

        const reading = small.files.stream('big.bin', { chunkBytes: 1 << 20 });
        expect((await reading.next()).value).toHaveLength(1 << 20);
        await small.run('open("big.bin", "ab").write(b"more")');
        const error = await (async () => {
          for await (const _ of reading);
        })().catch((caught: unknown) => caught);
        expect(error).toBeInstanceOf(FileOperationError);
        expect(error).toMatchObject({
          reason: 'changed',
          message: expect.stringContaining('changed while it was read'),
        });
        await expect(small.files.stream('big.bin', { expectedBytes: 10_000_000 }).next()).rejects.toMatchObject({
          reason: 'changed',
        });
        await expect(small.files.stream('missing.bin').next()).rejects.toMatchObject({ reason: 'not-found' });
      });
    });

    it('writes a file over the transfer limit from a stream, and removes what it wrote when the write fails', async () => {
      await withSession(backend, { fileTransferBytes: 1 << 20 }, async (small) => {
        const content = randomBytes(10_000_000);
        // Pieces of odd sizes, as a socket gives them: the host cuts them into frames.
        async function* pieces(data: Buffer, failAfter?: number) {
          for (let at = 0; at < data.length; at += 65_537) {
            if (failAfter !== undefined && at >= failAfter) throw new Error('the client went away');
            yield data.subarray(at, at + 65_537);
          }
        }
        // The point: write() stops at the transfer limit, writeStream() does not.
        await expect(small.files.write('in/big.bin', content)).rejects.toBeInstanceOf(InvalidInputError);
        expect(await small.files.writeStream('in/big.bin', pieces(content))).toEqual({
          path: 'in/big.bin',
          size: content.length,
        });
        const digest = await small.run('import hashlib\nhashlib.sha256(open("in/big.bin", "rb").read()).hexdigest()');
        expect(digest.results[0]?.data['text/plain']).toBe(`'${createHash('sha256').update(content).digest('hex')}'`);
        expect(await small.files.writeStream('empty.txt', pieces(Buffer.alloc(0)))).toEqual({
          path: 'empty.txt',
          size: 0,
        });
        expect(await small.files.read('empty.txt')).toEqual(Buffer.alloc(0));

        // A source that fails part-way, and one past maxBytes: nothing is left of either.
        await expect(small.files.writeStream('cut.bin', pieces(content, 6_000_000))).rejects.toThrow(
          'the client went away',
        );
        await expect(
          small.files.writeStream('capped.bin', pieces(content), {
            maxBytes: 5_000_000,
            tooLarge: (max) => `over ${max}`,
          }),
        ).rejects.toMatchObject({ reason: 'too-large', message: 'over 5000000' });
        const names = (await small.files.list()).map((entry) => entry.path);
        expect(names).toContain('in');
        expect(names).not.toContain('cut.bin');
        expect(names).not.toContain('capped.bin');
        await expect(small.files.writeStream('/etc/passwd', pieces(content))).rejects.toBeInstanceOf(InvalidPathError);
      });
    });

    it('refuses FIFOs, sockets and over-long names with typed errors, without blocking the kernel', async () => {
      // Canary: the file operations work at all, so a refusal below is the refusal asked for.
      await session.files.write('canary.txt', 'ok');
      expect((await session.files.read('canary.txt')).toString()).toBe('ok');
      const made = await session.run(
        [
          'import os, socket',
          "os.mkfifo('/mnt/data/fifo')",
          "os.mkfifo('/mnt/data/held')",
          // A reader holding `held` open: a blocking open for writing would now succeed and write into it.
          "reader = os.open('/mnt/data/held', os.O_RDONLY | os.O_NONBLOCK)",
          "listener = socket.socket(socket.AF_UNIX); listener.bind('/mnt/data/sock')",
          "os.makedirs('/mnt/data/deep', exist_ok=True)",
        ].join('\n'),
      );
      expect(made.error).toBeUndefined();
      for (const name of ['fifo', 'held', 'sock']) {
        await expect(session.files.write(name, 'x'), name).rejects.toMatchObject({ reason: 'not-a-file' });
        await expect(session.files.read(name), name).rejects.toMatchObject({ reason: 'not-a-file' });
      }
      // 4096 characters: within the host's bound, but over the kernel's PATH_MAX once under /mnt/data.
      const deep = `deep/${Array.from({ length: 16 }, () => 'd'.repeat(240)).join('/')}/${'f'.repeat(235)}`;
      expect(deep.length).toBe(4096);
      await expect(session.files.write(deep, 'x')).rejects.toMatchObject({ reason: 'name-too-long' });
      await expect(session.files.write('n'.repeat(256), 'x')).rejects.toBeInstanceOf(InvalidPathError);
      // Nothing was written into the FIFO, and the kernel still answers (its control thread did not block).
      const after = await session.run("os.read(reader, 10), os.path.getsize('/mnt/data/canary.txt')");
      expect(after.results[0]?.data['text/plain']).toBe("(b'', 2)");
      await session.run(
        "os.close(reader); listener.close()\nfor name in ('fifo', 'held', 'sock'): os.unlink('/mnt/data/' + name)",
      );
    });

    it('says a full /mnt/data is out of space, by reason rather than by message', async () => {
      const dataBytes = 1024 * 1024;
      await withSession(backend, { limits: { dataBytes } }, async (small) => {
        // Canary: a file that fits is written, so the refusal below is the full disk.
        await small.files.write('fits.bin', Buffer.alloc(1000));
        const error = await small.files.write('big.bin', Buffer.alloc(2 * dataBytes)).catch((caught) => caught);
        expect(error).toBeInstanceOf(FileOperationError);
        expect(error).toMatchObject({ reason: 'no-space' });
        expect((await small.run('1 + 1')).results[0]?.data['text/plain']).toBe('2');
      });
    });

    it('a failed request that is not a file operation is a KernelRequestError, not a file error', async () => {
      // Canary: the request works before the code breaks the kernel's handler for it.
      expect(await session.checkComplete('for x in y:')).toEqual({ status: 'incomplete', indent: 4 });
      const broken = await session.run(
        'import IPython.core.inputtransformer2 as transformers\n' +
          'original_check = transformers.TransformerManager.check_complete\n' +
          'transformers.TransformerManager.check_complete = lambda self, code: 1 / 0',
      );
      expect(broken.error).toBeUndefined();
      const error = await session.checkComplete('x = 1').catch((caught) => caught);
      expect(error).toBeInstanceOf(KernelRequestError);
      expect(error).not.toBeInstanceOf(FileOperationError);
      expect(error).toMatchObject({ code: 'kernel-request-failed', reason: 'internal' });
      await session.run('transformers.TransformerManager.check_complete = original_check');
      expect(await session.checkComplete('x = 1')).toEqual({ status: 'complete', indent: 0 });
    });

    it('refuses paths that leave /mnt/data, before they reach the sandbox', async () => {
      for (const path of ['../../etc/passwd', '/etc/passwd', 'a/../../b', 'nul\0byte']) {
        await expect(session.files.read(path)).rejects.toBeInstanceOf(InvalidPathError);
        await expect(session.files.write(path, 'x')).rejects.toBeInstanceOf(InvalidPathError);
      }
    });

    it('handles bad code input with typed errors or well-defined results', async () => {
      const empty = await session.run('');
      expect(empty).toMatchObject({ status: 'ok', stdout: '', results: [] });
      const nul = await session.run('x = 1\0');
      expect(nul.status).toBe('error');
      await expect(session.run('#'.repeat(10 * 1024 * 1024))).rejects.toBeInstanceOf(InvalidInputError);
      await expect(session.run(42 as unknown as string)).rejects.toBeInstanceOf(InvalidInputError);
      const invalidUtf8 = await session.run('import os\nos.write(1, b"bad \\xff\\xfe bytes\\n")\nprint("\\udcff")');
      expect(invalidUtf8.status).toBe('ok');
      expect(invalidUtf8.stdout).toContain('bad \uFFFD\uFFFD bytes');
      expect((await session.run('1')).status).toBe('ok');
    });

    it('a NUL byte in code is a SyntaxError in the code, and the state is kept', async () => {
      await session.run('before_nul = "kept"');
      const execution = await session.run('print(1)\u0000');
      expect(execution.status).toBe('error');
      expect(execution.error?.name).toBe('SyntaxError');
      expect(execution.error?.value).toContain('null bytes');
      expect(execution.stateLost).toBeUndefined();
      expect((await session.run('before_nul')).results[0]?.data['text/plain']).toBe("'kept'");
    });

    it('bounds result metadata and error values the kernel sends, saying so; the session goes on', async () => {
      const resultBytes = 32 * 1024 * 1024; // the default
      await session.run('before_caps = "kept"');
      const displays = await session.run(
        "from IPython.display import display\n[display({'text/plain': 'x'}, metadata={'m': 'M' * (8 << 20)}, raw=True) for _ in range(60)]\nNone",
      );
      expect(displays.status).toBe('ok');
      expect(displays.outputTruncated).toBe(true);
      expect(displays.results).toHaveLength(60);
      expect(displays.results[0]).toEqual({ type: 'display_data', data: { 'text/plain': 'x' }, metadata: {} });
      expect(JSON.stringify(displays.results).length).toBeLessThanOrEqual(resultBytes);

      const raised = await session.run("raise ValueError('E' * (40 << 20))");
      expect(raised.status).toBe('error');
      expect(raised.outputTruncated).toBe(true);
      expect(raised.error?.name).toBe('ValueError');
      expect(raised.error?.value).toMatch(/^E+\n\[sandcell cut this error value: 41943040 bytes/);
      expect(Buffer.byteLength(raised.error?.value ?? '')).toBeLessThanOrEqual(1024 * 1024);
      expect(raised.error?.traceback.join('\n')).toContain("raise ValueError('E' * (40 << 20))");
      expect(Buffer.byteLength(raised.error?.traceback.join('') ?? '')).toBeLessThanOrEqual(1024 * 1024);
      expect(raised.stateLost).toBeUndefined();
      expect((await session.run('before_caps')).results[0]?.data['text/plain']).toBe("'kept'");
    });

    it('bounds what code writing straight to the kernel channel sends: too large is dropped or cut; the state is kept', async () => {
      const resultBytes = 32 * 1024 * 1024; // the default
      await session.run('before_forgery = "kept"');
      // The kernel's own channel object, found by user code: everything sent on
      // it skips the kernel's caps, so only the host's bounds apply.
      const forge = [
        'import json, os',
        // Through the shell's display hook, which holds it (gc.get_objects() misses a template's frozen objects).
        KERNEL_FROM_SHELL,
        "execution = kernel.current['id']",
        'def forged_display(metadata_bytes):',
        "    message = {'type': 'display', 'id': execution, 'data': {'text/plain': 'forged'}, 'metadata': {'m': 'M' * metadata_bytes}}",
        "    return (json.dumps(message) + '\\n').encode()",
        'def write(line):',
        '    with kernel.channel._lock:',
        '        view = memoryview(line)',
        '        while view:',
        '            view = view[os.write(kernel.channel._fd, view):]',
      ].join('\n');
      const forged = await session.run(
        `${forge}\n` +
          'huge = forged_display(40 << 20)\nfor _ in range(3): write(huge)\n' +
          'large = forged_display(20 << 20)\nfor _ in range(5): write(large)\n' +
          "kernel.channel.send({'type': 'error', 'id': execution, 'name': 'N' * 5000, 'value': 'V' * (10 << 20), 'traceback': ['T' * (10 << 20)]})\n" +
          '"after"',
      );
      expect(forged.outputTruncated).toBe(true);
      expect(forged.results.map((result) => result.data['text/plain'])).toEqual(['forged', "'after'"]);
      expect(JSON.stringify(forged.results).length).toBeLessThanOrEqual(resultBytes);
      expect(Buffer.byteLength(forged.error?.name ?? '')).toBeLessThanOrEqual(1024);
      expect(forged.error?.value).toMatch(/^V+\n\[sandcell cut this error value: 10485760 bytes/);
      expect(Buffer.byteLength(forged.error?.value ?? '')).toBeLessThanOrEqual(1024 * 1024);
      expect(Buffer.byteLength(forged.error?.traceback.join('') ?? '')).toBeLessThanOrEqual(1024 * 1024);
      expect(forged.stateLost).toBeUndefined();
      expect((await session.run('before_forgery')).results[0]?.data['text/plain']).toBe("'kept'");
    });

    it('cuts a flood of output at the per-execution cap', async () => {
      await withSession(backend, { outputBytes: 64 * 1024 }, async (small) => {
        const execution = await small.run('while True:\n    print("x" * 10000)', { timeoutMs: 1500 });
        expect(execution.status).toBe('timeout');
        expect(execution.outputTruncated).toBe(true);
        expect(Buffer.byteLength(execution.stdout)).toBeLessThanOrEqual(64 * 1024);
        expect(Buffer.byteLength(execution.stdout)).toBeGreaterThan(32 * 1024);
      });
    });

    it('drops results past the per-execution cap instead of failing the session', async () => {
      await withSession(backend, { resultBytes: 256 * 1024 }, async (small) => {
        const execution = await small.run(
          'from IPython.display import HTML, display\nfor index in range(5):\n    display(HTML("<p>" + "x" * 100_000 + "</p>"))\n"done"',
        );
        expect(execution.status).toBe('ok');
        expect(execution.outputTruncated).toBe(true);
        expect(execution.results.filter((result) => result.type === 'display_data')).toHaveLength(2);
        expect(execution.stateLost).toBeUndefined();
      });
    });

    it('kills and restarts a kernel that ignores the interrupt; state is lost and says so, files stay', async () => {
      await withSession(backend, { interruptGraceMs: 500 }, async (fresh) => {
        await fresh.files.write('keep.txt', 'kept');
        await fresh.run('value = 1');
        const execution = await fresh.run(
          'import signal, time\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nwhile True:\n    time.sleep(0.05)',
          { timeoutMs: 500 },
        );
        expect(execution.status).toBe('timeout');
        expect(execution.stateLost).toBe(true);
        expect(execution.stateLostReason).toMatch(/state .*was lost/);
        const after = await fresh.run('value');
        expect(after.error?.name).toBe('NameError');
        expect((await fresh.files.read('keep.txt')).toString()).toBe('kept');
      });
    });

    it('reports a crashed kernel plainly and starts a new one', async () => {
      await withSession(backend, {}, async (fresh) => {
        await fresh.run('value = 1');
        const crash = await fresh.run('import os, signal\nos.kill(os.getpid(), signal.SIGKILL)');
        expect(crash.status).toBe('error');
        expect(crash.error?.name).toBe('KernelDied');
        expect(crash.stateLost).toBe(true);
        expect((await fresh.run('2 * 21')).results[0]?.data['text/plain']).toBe('42');
      });
    });

    it('a line on the kernel channel that is not a protocol message is dropped; the run and the state go on', async () => {
      await withSession(backend, {}, async (fresh) => {
        await fresh.run('before_garbage = "kept"');
        const forged = await fresh.run(
          'import os, stat\nfor fd in range(3, 64):\n    try:\n        if stat.S_ISSOCK(os.fstat(fd).st_mode) or stat.S_ISFIFO(os.fstat(fd).st_mode):\n            os.write(fd, b"this is not json\\n")\n    except OSError:\n        pass\n"after"',
        );
        expect(forged.status).toBe('ok');
        expect(forged.results[0]?.data['text/plain']).toBe("'after'");
        expect(forged.stdout).not.toContain('this is not json');
        expect(forged.stateLost).toBeUndefined();
        expect((await fresh.run('before_garbage')).results[0]?.data['text/plain']).toBe("'kept'");
      });
    });

    it('reset interrupts a running execution, then clears the state', async () => {
      await withSession(backend, {}, async (fresh) => {
        await fresh.run('before = 1');
        const running = fresh.run('import time\ntime.sleep(30)');
        await new Promise((resolve) => setTimeout(resolve, 300));
        await fresh.reset();
        expect((await running).error?.name).toBe('KeyboardInterrupt');
        expect((await fresh.run('before')).error?.name).toBe('NameError');
      });
    });

    it('reset clears variables; restart replaces the kernel; both keep files', async () => {
      await withSession(backend, {}, async (fresh) => {
        await fresh.files.write('f.txt', 'x');
        await fresh.run('a = 1');
        await fresh.reset();
        expect((await fresh.run('a')).error?.name).toBe('NameError');
        await fresh.run('b = 2');
        await fresh.restart();
        expect((await fresh.run('b')).error?.name).toBe('NameError');
        expect((await fresh.files.read('f.txt')).toString()).toBe('x');
      });
    });

    it('reports the CPU its processes have used, which grows with the work its code does', async () => {
      await withSession(backend, {}, async (fresh) => {
        const before = (await fresh.usage()).cpuSeconds;
        // The kernel's start used some: the pool weighs warm starts by it.
        expect(before).toBeGreaterThan(0);
        const spin = await fresh.run(
          'import time\nend = time.process_time() + 0.5\nwhile time.process_time() < end: pass\n"spun"',
        );
        expect(spin.results[0]?.data['text/plain']).toBe("'spun'");
        const after = (await fresh.usage()).cpuSeconds ?? 0;
        expect(after - (before ?? 0)).toBeGreaterThan(0.4);
      });
    });

    it('after close, no process of the session remains and it refuses work', async () => {
      const fresh = await Session.create({ backend });
      await fresh.run('import subprocess\nsubprocess.Popen(["sleep", "600"])');
      const usage = await fresh.usage();
      await fresh.close();
      for (const pid of usage.processIds ?? []) expect(isAlive(pid)).toBe(false);
      await expect(fresh.run('1')).rejects.toBeInstanceOf(SessionClosedError);
      await expect(fresh.files.list()).rejects.toBeInstanceOf(SessionClosedError);
      await fresh.close(); // idempotent
    });

    contextCases(backend);
    commandCases(backend);
    assistContractCases(backend);
  });
}
