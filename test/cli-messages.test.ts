/**
 * What the sandcell command says to a person, as they see it: the built CLI
 * as processes, on real sandboxes. Saved files are neither doubled nor
 * silently overwritten, each failure is said once, limits are flags named as
 * flags with sizes in MiB, and the server's log is readable on a terminal.
 * Timeouts are generous: several real sandboxes start in a test, on a busy machine.
 */
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { startFakeOpenAI } from './support/fake-providers.js';
import { type Finished, runProcess } from './support/process.js';
import { startServeLine } from './support/readme.js';

const root = path.resolve(import.meta.dirname, '..');
const bin = path.join(root, 'bin', 'sandcell.js');
const csv = path.join(root, 'examples', 'traffic_accidents.csv');
const workspace = mkdtempSync(path.join(os.tmpdir(), 'sandcell-cli-messages-'));
afterAll(() => rmSync(workspace, { recursive: true, force: true }));

function sandcell(args: string[], input?: string, env?: Record<string, string>): Promise<Finished> {
  return runProcess(process.execPath, [bin, ...args], { cwd: workspace, input, env });
}

describe('sandcell run saves what the code made, once, and never over an existing file', { timeout: 180_000 }, () => {
  it('hello.py twice into one directory: its chart is saved once per run; the second run numbers its files and says so', async () => {
    const hello = path.join(root, 'examples', 'hello.py');
    const first = await sandcell(['run', hello, '-o', 'out']);
    expect(first.code, first.stderr).toBe(0);
    // The figure shown at the end is the chart the code saved as daily.png: one file, named by the code.
    expect(existsSync(path.join(workspace, 'out', 'figure-1.png'))).toBe(false);
    expect(first.stdout).toContain('[image saved to out/daily.png]');
    // Said once: the image line names the file; no file line repeats it.
    expect(first.stdout.match(/daily\.png/g)).toHaveLength(1);
    const original = readFileSync(path.join(workspace, 'out', 'daily.csv'));

    const second = await sandcell(['run', hello, '-o', 'out']);
    expect(second.code, second.stderr).toBe(0);
    expect(readFileSync(path.join(workspace, 'out', 'daily.csv'))).toEqual(original);
    expect(existsSync(path.join(workspace, 'out', 'daily-2.csv'))).toBe(true);
    expect(second.stdout).toContain('[file saved to out/daily-2.csv: out/daily.csv already existed and was kept]');
    expect(second.stdout).toContain('[image saved to out/daily-2.png: out/daily.png already existed and was kept]');
    expect(second.stdout.match(/daily-2\.png/g)).toHaveLength(1);
    expect(existsSync(path.join(workspace, 'out', 'figure-1.png'))).toBe(false);
  });

  it('a figure the code did not save is still saved as figure-N', async () => {
    const result = await sandcell(['run', '-', '-o', 'figures'], 'import matplotlib.pyplot as plt\nplt.plot([1, 2])\n');
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toContain('[image saved to figures/figure-1.png]');
  });
});

describe('sandcell run says each failure once', { timeout: 180_000 }, () => {
  it('a kernel that dies: KernelDied and why, printed once', async () => {
    const result = await sandcell(['run', '-'], 'import os\nos.kill(os.getpid(), 9)\n');
    expect(result.code).toBe(1);
    expect(result.stderr.match(/The kernel died/g)).toHaveLength(1);
    expect(result.stderr).toContain('KernelDied: The kernel died (killed by SIGKILL)');
  });

  it('a JavaScript error: its stack, naming the error once', async () => {
    const result = await sandcell(['run', '--language', 'javascript', '-'], 'throw new Error("boom");\n');
    expect(result.code).toBe(1);
    expect(result.stderr.match(/Error: boom/g)).toHaveLength(1);
    expect(result.stderr).toContain('throw new Error("boom")');
  });
});

describe('sandcell run and exec say which limit cut the output and which flag raises it', { timeout: 180_000 }, () => {
  it('run: printed output past --max-output; a --max-data that --memory cannot hold is said, with what it became', async () => {
    const result = await sandcell(['run', '-', '--max-output', '1K', '--max-data', '4G'], 'print("x" * 5000)\n');
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout.length).toBeLessThanOrEqual(1024);
    expect(result.stderr).toContain(
      '[output was cut at 1 KiB, what an execution keeps of stdout and stderr; raise it with --max-output (e.g. --max-output 4K)]',
    );
    expect(result.stderr).toContain(
      'note: /mnt/data will hold at most 1.9 GiB, not the 4 GiB of --max-data: its files are RAM within --memory (2 GiB, the default), which keeps 128 MiB for the kernel; raise --memory to hold more (e.g. --memory 5G).',
    );
  });

  it("exec: a command's stdout past --max-output", async () => {
    const result = await sandcell(['exec', '--max-output', '2K', '--', 'sh', '-c', 'yes | head -c 10000']);
    expect(result.code).toBe(0);
    expect(result.stdout.length).toBe(2048);
    expect(result.stderr).toContain(
      '[output was cut at 2 KiB, what a command keeps of its stdout and of its stderr; raise it with --max-output (e.g. --max-output 8K)]',
    );
  });
});

describe('sandcell run when the script reads a file from its own folder', { timeout: 180_000 }, () => {
  it('FileNotFoundError, then a hint naming the --upload that brings the file in', async () => {
    const folder = path.join(workspace, 'project');
    mkdirSync(folder, { recursive: true });
    writeFileSync(path.join(folder, 'data.csv'), 'a,b\n1,2\n');
    writeFileSync(path.join(folder, 'read.py'), 'import pandas as pd\nprint(pd.read_csv("data.csv").a.sum())\n');
    const missing = await sandcell(['run', 'project/read.py']);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain("FileNotFoundError: [Errno 2] No such file or directory: 'data.csv'");
    expect(missing.stderr).toContain(
      'hint: data.csv is beside the script on this machine, not in the sandbox; add --upload project/data.csv',
    );
    const uploaded = await sandcell(['run', 'project/read.py', '--upload', 'project/data.csv']);
    expect(uploaded.code, uploaded.stderr).toBe(0);
    expect(uploaded.stdout).toBe('1\n');
    expect(uploaded.stderr).not.toContain('hint:');
  });
});

describe('usage, before any sandbox starts', () => {
  it('exec ls -la: -la is not an exec option; the error shows the command after --', async () => {
    const result = await sandcell(['exec', '--timeout', '5', 'ls', '-la']);
    expect(result.code).toBe(2);
    expect(result.stderr).toBe(
      "error: unknown option '-la'\nThe command's own options go after --: sandcell exec --timeout 5 -- ls -la\n",
    );
  });

  it('run hello.rb: the extension is unknown, and --language says which language it is', async () => {
    writeFileSync(path.join(workspace, 'hello.rb'), 'puts "hello"\n');
    const result = await sandcell(['run', 'hello.rb']);
    expect(result.code).toBe(2);
    expect(result.stderr).toBe(
      'Cannot run hello.rb: unknown extension .rb; pass --language python|javascript|typescript|bash|r to say which language it is.\n',
    );
  });

  it('run --help and exec --help list every exit status, Ctrl-C (130) included, and the units', async () => {
    for (const command of ['run', 'exec']) {
      const help = await sandcell([command, '--help']);
      expect(help.code).toBe(0);
      expect(help.stdout).toContain('124 timeout, 130 interrupted (Ctrl-C)');
      expect(help.stdout).toContain('Durations: 250ms, 30s, 5m, 1h (a bare number is seconds)');
      expect(help.stdout).toMatch(/-t, --timeout <duration>/);
    }
  });

  it('discord: defaults with their units; an --idle-timeout without a unit (it took minutes) is refused', async () => {
    const help = await sandcell(['discord', '--help']);
    expect(help.stdout).toMatch(/--idle-timeout <duration>[\s\S]*\(default: 30m\)/);
    expect(help.stdout).toMatch(/--approval-timeout <duration>[\s\S]*\(default: 5m\)/);
    expect(help.stdout).not.toMatch(/default: "/);
    const bare = await sandcell(['discord', '--idle-timeout', '30'], undefined, { DISCORD_BOT_TOKEN: 'not-a-token' });
    expect(bare.code).toBe(2);
    expect(bare.stderr).toContain('--idle-timeout takes a duration with its unit, e.g. 30m for 30 minutes; got "30".');
  });
});

/** The host pid of the process whose command line is `words`, once it runs (undefined after `waitMs`). */
async function hostProcess(words: string[], waitMs: number): Promise<number | undefined> {
  const wanted = `${words.join('\0')}\0`;
  for (const deadline = Date.now() + waitMs; Date.now() < deadline; ) {
    for (const name of readdirSync('/proc').filter((entry) => /^\d+$/.test(entry))) {
      // A process may end between the listing and the read.
      const commandLine = (() => {
        try {
          return readFileSync(`/proc/${name}/cmdline`, 'utf8');
        } catch {
          return '';
        }
      })();
      if (commandLine === wanted) return Number(name);
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return undefined;
}

/** The host pid of the first process of `pid`'s PID namespace (its init): `pid` itself or an ancestor. */
function namespaceInit(pid: number): number {
  for (let current = pid; current > 1; ) {
    const status = readFileSync(`/proc/${current}/status`, 'utf8');
    if (/^NSpid:.*\t1$/m.test(status)) return current;
    current = Number(/^PPid:\t(\d+)$/m.exec(status)?.[1]);
  }
  throw new Error(`no PID namespace init above ${pid}`);
}

describe('sandcell run when the code goes for its sandbox', { timeout: 180_000 }, () => {
  it('killing its parent (the supervisor) ends nothing: the code goes on', async () => {
    const result = await sandcell(
      ['run', '-'],
      'print("before", flush=True)\nimport os, signal\nos.kill(os.getppid(), signal.SIGKILL)\nprint("after")\n',
    );
    expect(result).toEqual({ code: 0, stdout: 'before\nafter\n', stderr: '' });
  });

  it('a sandbox ended from outside: the output before it, and one message saying what ended and what was lost', async () => {
    // A process of the code's that the host can find; its namespace's init is the sandbox's supervisor.
    const marker = ['sleep', `3599.${Date.now() % 1_000_000}`];
    const running = sandcell(
      ['run', '-'],
      `import subprocess, time\nprint("before", flush=True)\nsubprocess.Popen(${JSON.stringify(marker)})\ntime.sleep(120)\nprint("after")\n`,
    );
    const pid = await hostProcess(marker, 60_000);
    expect(pid).toBeDefined();
    process.kill(namespaceInit(pid as number), 'SIGKILL');
    const result = await running;
    expect(result.code).toBe(1);
    expect(result.stdout).toBe('before\n');
    expect(result.stderr).toBe(
      "KernelDied: The sandbox ended (killed), and every kernel and command in it with it. A new sandbox replaces it: the session's state (variables, imports) was lost. Files in /mnt/data were kept.\n",
    );
  });
});

describe('sandcell image status', { timeout: 180_000 }, () => {
  it('with the Docker Engine unreachable says so, not that the image is not built', async () => {
    const result = await sandcell(['image', 'status'], undefined, { DOCKER_HOST: 'tcp://127.0.0.1:1' });
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(
      /docker: +sandcell-runtime:\S+ unknown: the Docker Engine is unreachable \(connect ECONNREFUSED/,
    );
    expect(result.stdout).not.toContain('not built — sandcell image build\n');
    const json = await sandcell(['image', 'status', '--json'], undefined, { DOCKER_HOST: 'tcp://127.0.0.1:1' });
    expect(JSON.parse(json.stdout).docker).toMatchObject({ present: null, engineUnreachable: expect.any(String) });
  });
});

describe('sandcell chat --approve at a terminal', { timeout: 180_000 }, () => {
  it('edit with neither $EDITOR nor $VISUAL set: the code is typed in at the prompt and runs', async () => {
    const provider = await startFakeOpenAI([
      { toolCalls: [{ name: 'execute_python_code', arguments: { code: 'print("as the model wrote it")' } }] },
      { text: 'Done.' },
    ]);
    try {
      const steps = [
        { expect: 'Ask about the data', send: 'Count the rows\r' },
        { expect: '[e]dit: ', send: 'e\r' },
        { expect: 'end with a line holding only', send: 'print("typed", 6 * 7)\r.\r' },
        { expect: 'Done.', send: 'exit\r' },
      ];
      const chat = [bin, 'chat', '--approve', '--data', csv, '--base-url', provider.baseURL, '--model', 'local'];
      const result = await runProcess(
        '/usr/bin/python3',
        [path.join(root, 'test', 'fixtures', 'pty_steps.py'), JSON.stringify(steps), process.execPath, ...chat],
        { cwd: workspace, env: { PTY_UNSET: 'EDITOR,VISUAL', OPENAI_API_KEY: '', OPENAI_BASE_URL: '' } },
      );
      expect(result.stdout).toContain('typed 42');
      expect(result.stdout).not.toContain('as the model wrote it\r\n');
      expect(result.stdout).toContain('exit=0');
    } finally {
      await provider.close();
    }
  });
});

describe('sandcell chat at a terminal', { timeout: 180_000 }, () => {
  it("Ctrl-C at an empty prompt quits, leaving the shell's prompt a line of its own", async () => {
    const provider = await startFakeOpenAI([]);
    try {
      const steps = [
        { expect: 'Ask about the data', send: '' },
        { expect: '> ', send: '\u0003' },
      ];
      const chat = [bin, 'chat', '--data', csv, '--base-url', provider.baseURL, '--model', 'local'];
      const result = await runProcess(
        '/usr/bin/python3',
        [path.join(root, 'test', 'fixtures', 'pty_steps.py'), JSON.stringify(steps), process.execPath, ...chat],
        { cwd: workspace, env: { OPENAI_API_KEY: '', OPENAI_BASE_URL: '' } },
      );
      // After the prompt (and readline's cursor move), a line break; then the fixture's own line.
      const afterPrompt = result.stdout.slice(result.stdout.lastIndexOf('> ') + 2);
      expect(afterPrompt).toMatch(/^[^\n]*\r?\n\nexit=0\n$/);
      expect(provider.requests).toHaveLength(0);
    } finally {
      await provider.close();
    }
  });
});

describe('sandcell serve logs', { timeout: 180_000 }, () => {
  const serveInPty = (args: string[]) =>
    runProcess(
      '/usr/bin/python3',
      [
        path.join(root, 'test', 'fixtures', 'pty_steps.py'),
        JSON.stringify([{ expect: 'web UI at', send: '\u0003' }]),
        process.execPath,
        bin,
        'serve',
        '--port',
        '0',
        '--pool-size',
        '0',
        ...args,
      ],
      { cwd: workspace, env: { OPENAI_BASE_URL: '' } },
    );

  it('on a terminal: readable lines (time, level, message, fields), not JSON; Ctrl-C stops it', async () => {
    const result = await serveInPty([]);
    expect(result.stdout).toMatch(
      /^\d\d:\d\d:\d\d INFO {2}sandcell listening on http:\/\/127\.0\.0\.1:\d+ .* url=http/m,
    );
    expect(result.stdout).toMatch(/^\d\d:\d\d:\d\d INFO {2}stopped\r?$/m);
    expect(result.stdout).not.toContain('{"level"');
    expect(result.stdout).toContain('exit=0');
  });

  it('on a terminal with --log-format json, and piped by default: JSON lines', async () => {
    const json = await serveInPty(['--log-format', 'json']);
    expect(json.stdout).toMatch(/^\{"level":30,.*"msg":"sandcell listening on/m);
    const piped = await startServeLine(`node ${bin} serve --pool-size 0`, { cwd: workspace });
    await piped.stop();
    expect(piped.output()).toMatch(/^\{"level":30,.*"msg":"sandcell listening on/m);
  });
});

describe('session limits: flags on the CLI, named as flags, with sizes in MiB', { timeout: 180_000 }, () => {
  it('run --memory: a kernel over it dies, and the message says to raise --memory', async () => {
    const result = await sandcell(
      ['run', '-', '--memory', '256M'],
      'x = bytearray(600 * 1024 * 1024)\nx[::4096] = b"x" * len(x[::4096])\n',
    );
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('more memory than its limit (256 MiB); use less memory, or raise it with --memory');
    expect(result.stderr).not.toContain('limits.memoryBytes');
  });

  it('run --max-upload: a larger --upload is refused in KiB, naming --max-upload; exec takes the flag too', async () => {
    const run = await sandcell(['run', '-', '--max-upload', '100K', '--upload', csv], '1\n');
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('traffic_accidents.csv is 515.1 KiB, over 100 KiB');
    expect(run.stderr).toContain('raise it with --max-upload');
    expect(run.stderr).not.toContain('fileTransferBytes');
    const exec = await sandcell(['exec', '--max-upload', '100K', '--upload', csv, '--', 'true']);
    expect(exec.code).toBe(2);
    expect(exec.stderr).toContain('raise it with --max-upload');
  });

  it('run --max-upload: a file the code wrote over it is not saved, and a note says why', async () => {
    const result = await sandcell(
      ['run', '-', '--max-upload', '1K', '-o', 'capped'],
      'open("big.txt", "w").write("x" * 4096)\n',
    );
    expect(result.code, result.stderr).toBe(0);
    expect(result.stderr).toContain(
      '[file not saved: big.txt: big.txt is larger than 1 KiB, the most a file moved in or out of the session may be; raise it with --max-upload',
    );
    expect(existsSync(path.join(workspace, 'capped', 'big.txt'))).toBe(false);
  });

  it('a size that is not one is a usage error, before a sandbox starts', async () => {
    for (const command of [['run', '-'], ['repl'], ['exec']]) {
      const result = await sandcell(
        [...command, '--memory', 'lots', ...(command[0] === 'exec' ? ['--', 'true'] : [])],
        '',
      );
      expect(result.code).toBe(2);
      expect(result.stderr).toContain('--memory takes a size such as 512M or 2G; got "lots".');
    }
    const ask = await sandcell([
      'ask',
      'q',
      '--data',
      csv,
      '--max-data',
      '2X',
      '--base-url',
      'http://127.0.0.1:1/v1',
      '--model',
      'm',
    ]);
    expect(ask.code).toBe(2);
    expect(ask.stderr).toContain('--max-data takes a size');
  });

  it("the server's upload limit, a size as run's --max-upload takes it, is worded as its operator's setting, in KiB", async () => {
    const server = await startServeLine(`node ${bin} serve --pool-size 0 --max-upload-bytes 1K`, { cwd: workspace });
    try {
      const created = await fetch(`http://localhost:${server.port}/v1/sessions`, { method: 'POST' });
      const { id } = (await created.json()) as { id: string };
      const upload = await fetch(`http://localhost:${server.port}/v1/sessions/${id}/files/big.txt`, {
        method: 'PUT',
        body: 'x'.repeat(4096),
      });
      expect(upload.status).toBe(413);
      expect(((await upload.json()) as { error: { message: string } }).error.message).toContain(
        "over the server's limit of 1 KiB (its operator's setting --max-upload-bytes)",
      );
    } finally {
      await server.stop();
    }
  });
});
