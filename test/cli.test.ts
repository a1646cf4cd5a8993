/** The sandcell command as a user runs it: the built CLI, real sandboxes, real files. */
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { type Finished, runProcess, startProcessGroup } from './support/process.js';

const root = path.resolve(import.meta.dirname, '..');
const bin = path.join(root, 'bin', 'sandcell.js');
const workspace = mkdtempSync(path.join(os.tmpdir(), 'sandcell-cli-'));

afterAll(() => rmSync(workspace, { recursive: true, force: true }));

function sandcell(args: string[], input?: string): Promise<Finished> {
  return runProcess(process.execPath, [bin, ...args], { cwd: workspace, input });
}

describe('sandcell run', () => {
  it('runs examples/hello.py: prints a table, saves the chart and the files it wrote', async () => {
    const outputDir = path.join(workspace, 'hello-out');
    const result = await sandcell(['run', path.join(root, 'examples', 'hello.py'), '--output-dir', outputDir]);
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('Busiest days:');
    expect(result.stdout).toContain('conversion');
    for (const name of ['daily.png', 'daily.csv']) expect(existsSync(path.join(outputDir, name))).toBe(true);
    expect(readFileSync(path.join(outputDir, 'daily.png')).subarray(1, 4).toString()).toBe('PNG');
    expect(readFileSync(path.join(outputDir, 'daily.csv'), 'utf8').split('\n')[0]).toBe(
      'day,visitors,orders,conversion',
    );
    // The chart the code saved and showed is said once, where it showed.
    expect(result.stdout).toContain(`[image saved to ${path.relative(workspace, path.join(outputDir, 'daily.png'))}]`);
    expect(result.stdout).not.toContain('[file saved to hello-out/daily.png]');
  });

  it('uploads the traffic accidents CSV and finds the strongest factor', async () => {
    const outputDir = path.join(workspace, 'accidents-out');
    const result = await sandcell([
      'run',
      path.join(root, 'examples', 'accidents.py'),
      '--upload',
      path.join(root, 'examples', 'traffic_accidents.csv'),
      '-o',
      outputDir,
    ]);
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('8756 rows, 10 columns');
    expect(result.stdout).toMatch(/traffic_fine_amount\s+-0\.745/);
    expect(existsSync(path.join(outputDir, 'accident_factors.png'))).toBe(true);
    expect(existsSync(path.join(outputDir, 'figure-1.png'))).toBe(true);
    // The upload is input, not output: it is not copied back.
    expect(existsSync(path.join(outputDir, 'traffic_accidents.csv'))).toBe(false);
  });

  it('reads code from stdin and prints the execution as JSON', async () => {
    const result = await sandcell(['run', '-', '--json'], 'print("hi")\n6 * 7');
    expect(result.code).toBe(0);
    const execution = JSON.parse(result.stdout);
    expect(execution).toMatchObject({ status: 'ok', stdout: 'hi\n' });
    expect(execution.results[0].data['text/plain']).toBe('42');
  });

  it('exits 1 on an error in the code, with the traceback on stderr', async () => {
    const result = await sandcell(['run', '-'], 'raise ValueError("bad value")');
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('ValueError: bad value');
  });

  it("exits with the script's own exit status, as python3 would: sys.exit(0) and exit() are a success", async () => {
    const done = await sandcell(['run', '-', '--json'], 'import sys\nprint("done")\nsys.exit(0)\nprint("never")');
    expect(done.code).toBe(0);
    expect(JSON.parse(done.stdout)).toMatchObject({ status: 'ok', stdout: 'done\n', exitStatus: 0 });
    expect(await sandcell(['run', '-'], 'import sys\nsys.exit(3)')).toEqual({ code: 3, stdout: '', stderr: '' });
    // A message instead of a status is printed, and the status is 1.
    expect(await sandcell(['run', '-'], 'raise SystemExit("no input file")')).toEqual({
      code: 1,
      stdout: '',
      stderr: 'no input file\n',
    });
    expect(await sandcell(['run', '-'], 'print(1)\nexit()\nprint(2)')).toEqual({ code: 0, stdout: '1\n', stderr: '' });
    expect((await sandcell(['exec', '--', 'python3', '-c', 'import sys; sys.exit(3)'])).code).toBe(3);
  });

  it('exits 124 on a timeout', async () => {
    const result = await sandcell(['run', '-', '--timeout', '0.5'], 'import time\ntime.sleep(30)');
    expect(result.code).toBe(124);
    expect(result.stderr).toContain('TimeoutError');
  });

  it('exits 2 on usage errors, with a message that says what to do', async () => {
    const missing = await sandcell(['run', path.join(workspace, 'nope.py')]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('Cannot read');
    const flag = await sandcell(['run', '--no-such-flag']);
    expect(flag.code).toBe(2);
    const timeout = await sandcell(['run', '-', '--timeout', 'soon'], '1');
    expect(timeout.code).toBe(2);
    expect(timeout.stderr).toContain('--timeout');
  });

  it('refuses a binary file with a usage error, before starting a sandbox', async () => {
    const binary = path.join(workspace, 'program.bin');
    writeFileSync(binary, Buffer.from([0x7f, 0x45, 0x4c, 0x46, 0x02, 0x01, 0x00, 0x00, 0x70, 0x72, 0x69, 0x6e, 0x74]));
    const latin1 = path.join(workspace, 'latin1.py');
    writeFileSync(latin1, Buffer.from('print("caf\xe9")\n', 'latin1'));
    // An unusable Docker engine: had a sandbox been started, this would fail with 3, not 2.
    const noEngine = { DOCKER_HOST: 'unix:///nonexistent/docker.sock' };
    const refused = await runProcess(process.execPath, [bin, 'run', binary, '--backend', 'docker'], {
      cwd: workspace,
      env: noEngine,
    });
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain('is a binary file (a NUL byte at offset 6)');
    expect(refused.stderr).toContain('--upload');
    const notUtf8 = await runProcess(process.execPath, [bin, 'run', latin1, '--backend', 'docker'], {
      cwd: workspace,
      env: noEngine,
    });
    expect(notUtf8.code).toBe(2);
    expect(notUtf8.stderr).toContain('is not UTF-8 text');
  });

  it('never writes outside the output directory, whatever names the code gives its files', async () => {
    const outputDir = path.join(workspace, 'names-out');
    const script = path.join(workspace, 'names.py');
    writeFileSync(
      script,
      'import os\nos.makedirs("sub", exist_ok=True)\nopen("sub/a.txt", "w").write("a")\nos.symlink("/etc/passwd", "link")\n',
    );
    const result = await sandcell(['run', script, '-o', outputDir]);
    expect(result.code).toBe(0);
    expect(readFileSync(path.join(outputDir, 'sub', 'a.txt'), 'utf8')).toBe('a');
    expect(existsSync(path.join(outputDir, 'link'))).toBe(false);
  });
});

describe('sandcell repl', () => {
  it('keeps state across inputs, reads multi-line blocks, and quits at end of input', async () => {
    const result = await sandcell(['repl'], 'x = 20\nfor i in range(2):\n    print("line", i)\n\nx + 22\n1/0\nx\n');
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('line 0\nline 1\n');
    expect(result.stdout).toContain('Out[3]: 42');
    expect(result.stderr).toContain('ZeroDivisionError');
    expect(result.stdout).toContain('Out[5]: 20');
  });
});

describe('sandcell repl with piped input', () => {
  it('takes --upload, gives input() the next line, prints no prompts, and ends at sys.exit with its status', async () => {
    const upload = path.join(workspace, 'greeting.txt');
    writeFileSync(upload, 'hello from the host\n');
    const result = await sandcell(
      ['repl', '--upload', upload],
      'print(open("greeting.txt").read().strip())\nname = input("Name? ")\nAda\nprint("hi", name)\nimport sys\nsys.exit(4)\nprint("never")\n',
    );
    expect(result.stdout, result.stderr).toBe('hello from the host\nName? hi Ada\n');
    expect(result.stderr).toContain('uploaded greeting.txt → /mnt/data/greeting.txt');
    expect(result.stderr).not.toContain('SystemExit');
    expect(result.code).toBe(4);
  });

  it('ends a bash prompt at exit, with its status, instead of starting a new shell', async () => {
    const result = await sandcell(['repl', '--language', 'bash'], 'echo hi\nexit 3\necho never\n');
    expect(result.stdout).toBe('hi\n');
    expect(result.stderr).not.toContain('ShellExited');
    expect(result.code).toBe(3);
  });
});

describe('sandcell doctor', () => {
  it('checks the machine and reports it ready', async () => {
    const result = await sandcell(['doctor', '--json']);
    const report = JSON.parse(result.stdout);
    expect(report.ok).toBe(true);
    expect(result.code).toBe(0);
    const titles = report.checks.map((check: { title: string }) => check.title).join('\n');
    expect(titles).toContain('python: pandas');
    expect(titles).toContain('sandbox network: blocked');
    // Each language is listed: available with its version, or not, with how to add it.
    expect(titles).toMatch(/language Python: available \(Python 3\.\d+/);
    for (const name of ['JavaScript', 'TypeScript', 'bash', 'R']) {
      const check = report.checks.find((entry: { title: string }) => entry.title.includes(`language ${name}:`));
      expect(check?.level === 'ok' || /sandcell image build/.test(check?.detail ?? '')).toBe(true);
    }
    // Run as root with cgroups here: both budgets hold, and doctor says so.
    expect(titles).toContain('memory budget per session: its kernels and its /mnt/data share limits.memoryBytes');
    expect(titles).toMatch(/data budget: all sessions' \/mnt\/data together stay within [\d.]+ [KMG]iB/);
    // As root, sessions fork from a warm template; doctor tried one.
    expect(titles).toMatch(
      /session start: forked from a warm template of the environment \(its first start \d+ ms, a fork \d+ ms\)/,
    );
  });
});

describe('sandcell repl in a terminal', () => {
  it('Ctrl-C interrupts the running code, not the session; at the prompt it drops the typed line', async () => {
    // As a person types: code, Ctrl-C while it runs, Ctrl-C at the prompt after typing `abc`, then Ctrl-D.
    const steps = [
      { expect: '>>> ', send: "kept = 'state'\r" },
      { expect: '>>> ', send: 'import time; print("sleep" + "ing", flush=True); time.sleep(60)\r' },
      { expect: 'sleeping', send: '\u0003' },
      { expect: 'KeyboardInterrupt' },
      { expect: '>>> ', send: 'kept\r' },
      { expect: 'Out[' },
      { expect: '>>> ', send: 'abc' },
      { expect: 'abc', send: '\u0003' },
      { expect: 'KeyboardInterrupt' },
      { expect: '>>> ', send: '2+2\r' },
      { expect: 'Out[' },
      { expect: '>>> ', send: '\u0004' },
    ];
    const driver = path.join(root, 'test', 'fixtures', 'pty_steps.py');
    const result = await runProcess(
      '/usr/bin/python3',
      [driver, JSON.stringify(steps), process.execPath, bin, 'repl'],
      {
        cwd: workspace,
      },
    );
    expect(result.stdout).toContain('KeyboardInterrupt');
    expect(result.stdout).toContain("Out[3]: 'state'");
    // Ctrl-C at the prompt dropped the typed `abc`: `2+2` ran alone.
    expect(result.stdout).toContain('Out[4]: 4');
    expect(result.stdout).not.toContain('abc2');
    expect(result.stdout).toContain('exit=0');
    expect(result.code).toBe(0);
  });
});

describe('sandcell repl in a terminal: completion, input and exit', () => {
  it('completes with Tab from the kernel, reads input() and getpass() from the terminal, and ends at exit(n)', async () => {
    const steps = [
      { expect: '>>> ', send: 'import os\r' },
      { expect: '>>> ', send: 'os.getcw\t' },
      { expect: 'getcwd', send: '()\r' },
      { expect: "Out[2]: '/mnt/data'" },
      // The prompts are built at run time, so what is typed does not already show them.
      { expect: '>>> ', send: 'name = input("Na" + "me? ")\r' },
      { expect: 'Name? ', send: 'Ada\r' },
      { expect: '>>> ', send: 'import getpass; secret = getpass.getpass("Pass" + "word? ")\r' },
      { expect: 'Password? ', send: 'hunter2\r' },
      { expect: '>>> ', send: 'name, len(secret)\r' },
      { expect: "Out[5]: ('Ada', 7)" },
      { expect: '>>> ', send: 'exit(5)\r' },
    ];
    const state = path.join(workspace, 'repl-state');
    const driver = path.join(root, 'test', 'fixtures', 'pty_steps.py');
    const result = await runProcess(
      '/usr/bin/python3',
      [driver, JSON.stringify(steps), process.execPath, bin, 'repl'],
      {
        cwd: workspace,
        env: { XDG_STATE_HOME: state },
      },
    );
    expect(result.stdout).toContain('os.getcwd()');
    expect(result.stdout).toContain("Out[5]: ('Ada', 7)");
    // The password is neither shown nor kept in the history.
    expect(result.stdout).not.toContain('hunter2');
    const history = readFileSync(path.join(state, 'sandcell', 'repl_history'), 'utf8');
    expect(history).toContain('exit(5)');
    expect(history).not.toContain('hunter2');
    expect(result.stdout).toContain('exit=5');
  });
});

describe('Ctrl-C from a terminal (SIGINT to the whole process group)', () => {
  const sandcellGroup = (args: string[]) => startProcessGroup(process.execPath, [bin, ...args], { cwd: workspace });

  it('`sandcell run`: the code gets a KeyboardInterrupt, its traceback prints, and run exits 130', async () => {
    const script = path.join(workspace, 'long.py');
    writeFileSync(script, 'import time\nprint("sleep" + "ing", flush=True)\ntime.sleep(60)\n');
    const run = sandcellGroup(['run', script]);
    await run.printed('sleeping');
    run.pressCtrlC();
    const { code } = await run.exited;
    expect(run.output.stderr).toContain('KeyboardInterrupt');
    expect(run.output.stderr).not.toContain('KernelDied');
    expect(code).toBe(130);
  });

  it('`sandcell repl` with piped input: Ctrl-C interrupts the running code and keeps the state', async () => {
    const repl = sandcellGroup(['repl']);
    repl.child.stdin.write('x = 41\nimport time; print("sleep" + "ing", flush=True); time.sleep(60)\n');
    await repl.printed('sleeping');
    repl.pressCtrlC();
    await repl.printed('KeyboardInterrupt');
    repl.child.stdin.end('x + 1\n');
    const { code } = await repl.exited;
    expect(repl.output.stdout).toContain('Out[3]: 42');
    expect(repl.output.stderr).not.toContain('KernelDied');
    expect(code).toBe(0);
  });
});

describe('sandcell run --backend', () => {
  it('auto picks bubblewrap here and says so', async () => {
    const result = await sandcell(['run', '-', '--backend', 'auto'], 'print(6*7)');
    expect(result.code).toBe(0);
    expect(result.stdout).toBe('42\n');
    expect(result.stderr).toContain('using the bubblewrap backend — bubblewrap is usable here');
  });

  it('refuses an unknown backend, and --rootfs with docker, as usage errors', async () => {
    const unknown = await sandcell(['run', '-', '--backend', 'podman'], 'print(1)');
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('bubblewrap, docker, gvisor, auto');
    const mixed = await sandcell(['run', '-', '--backend', 'docker', '--rootfs', 'runtime'], 'print(1)');
    expect(mixed.code).toBe(2);
    expect(mixed.stderr).toContain('--rootfs applies to the bubblewrap backend');
  });

  it('says how to build a root filesystem when --rootfs names none', async () => {
    const result = await sandcell(['run', '-', '--rootfs', path.join(workspace, 'no-such-rootfs')], 'print(1)');
    expect(result.code).toBe(3);
    expect(result.stderr).toContain('sandcell image build --backend bubblewrap');
  });
});
