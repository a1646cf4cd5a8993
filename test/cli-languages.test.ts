/**
 * The sandcell command with languages and commands, as a user runs it: the
 * built CLI on real sandboxes. `run` picks the kernel from the script's
 * extension, `exec` runs one command with its exit code passed through, and
 * `repl --language` keeps a kernel's state.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { type Finished, runProcess } from './support/process.js';

const root = path.resolve(import.meta.dirname, '..');
const bin = path.join(root, 'bin', 'sandcell.js');
const workspace = mkdtempSync(path.join(os.tmpdir(), 'sandcell-cli-languages-'));

afterAll(() => rmSync(workspace, { recursive: true, force: true }));

function sandcell(args: string[], input?: string): Promise<Finished> {
  return runProcess(process.execPath, [bin, ...args], { cwd: workspace, input });
}

function script(name: string, text: string): string {
  const file = path.join(workspace, name);
  writeFileSync(file, text);
  return file;
}

describe('sandcell run picks the language from the extension', () => {
  it('runs a .py file as Python; a file of an unknown extension only with --language', async () => {
    const python = await sandcell(['run', script('sum.py', 'import sys\nprint(sys.version_info[0], sum(range(5)))')]);
    expect(python.code).toBe(0);
    expect(python.stdout).toContain('3 10');
    const notes = script('notes.txt', 'print("from a txt", 6 * 7)');
    const unknown = await sandcell(['run', notes]);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('unknown extension .txt; pass --language python|javascript|typescript|bash|r');
    const text = await sandcell(['run', '--language', 'python', notes]);
    expect(text.stdout).toContain('from a txt 42');
    const refused = await sandcell(['run', '--language', 'cobol', '-'], '1');
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain('--language must be one of python, javascript, typescript, bash, r');
  });

  it('runs .js, .mjs and .ts files in the JavaScript and TypeScript kernels', async () => {
    const js = await sandcell([
      'run',
      script('hello.js', 'const xs = [1, 2, 3];\nconsole.log("js", xs.map((x) => x * 2).join(","));'),
    ]);
    expect(js.stderr).toBe('');
    expect(js.code).toBe(0);
    expect(js.stdout).toContain('js 2,4,6');
    const mjs = await sandcell(['run', script('hello.mjs', 'console.log("mjs", typeof process.version);')]);
    expect(mjs.stdout).toContain('mjs string');
    const ts = await sandcell(['run', script('hello.ts', 'const n: number = 40;\nconsole.log("ts", n + 2);')]);
    expect(ts.code).toBe(0);
    expect(ts.stdout).toContain('ts 42');
    const failing = await sandcell(['run', script('fail.js', 'throw new Error("bad value");')]);
    expect(failing.code).toBe(1);
    expect(failing.stderr).toContain('bad value');
    const override = await sandcell(['run', '--language', 'javascript', '-'], 'console.log(6 * 7)');
    expect(override.stdout).toContain('42');
  });

  it('ends a .js or .ts script when its event loop is empty, as node does, within --timeout', async () => {
    const js = await sandcell([
      'run',
      script('later.js', 'setTimeout(() => console.log("later"), 500);\nconsole.log("now");'),
    ]);
    expect(js.stderr).toBe('');
    expect(js.code).toBe(0);
    expect(js.stdout).toBe('now\nlater\n');
    const ts = await sandcell([
      'run',
      script(
        'later.ts',
        'const delay: number = 300;\nsetTimeout(() => console.log("ts later"), delay);\nconsole.log("ts now");',
      ),
    ]);
    expect(ts.code).toBe(0);
    expect(ts.stdout).toBe('ts now\nts later\n');
    const forever = await sandcell(['run', '--timeout', '2', script('forever.js', 'setInterval(() => {}, 100);')]);
    expect(forever.code).toBe(124);
    expect(forever.stderr).toContain('time limit');
  });

  it("runs a .sh file in the bash kernel; a failing command exits 1, the script's own `exit n` with n", async () => {
    const bash = await sandcell(['run', script('hello.sh', 'cd /tmp\necho "in $(pwd) with bash $BASH_VERSINFO"')]);
    expect(bash.code).toBe(0);
    expect(bash.stdout).toMatch(/in \/tmp with bash \d/);
    const failing = await sandcell(['run', script('fail.sh', 'echo before\nfalse')]);
    expect(failing.stdout).toContain('before');
    expect(failing.code).toBe(1);
    // The script's own exit is its status, as `bash script.sh` gives it.
    const exited = await sandcell(['run', script('exit.sh', 'echo before\nexit 5\necho after')]);
    expect(exited.stdout).toBe('before\n');
    expect(exited.stderr).not.toContain('ShellExited');
    expect(exited.code).toBe(5);
  });

  it('runs a .R file in the R kernel, and saves its chart', async () => {
    const outputDir = path.join(workspace, 'r-out');
    const r = await sandcell([
      'run',
      script('chart.R', 'x <- c(1, 4, 9)\ncat("mean", mean(x), "\\n")\nplot(x)'),
      '--output-dir',
      outputDir,
    ]);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('mean 4.666667');
    expect(existsSync(path.join(outputDir, 'figure-1.png'))).toBe(true);
  });
});

describe('sandcell exec', () => {
  it('passes arguments through unchanged, streams stdout and stderr apart, and exits with the command’s code', async () => {
    const result = await sandcell([
      'exec',
      '--',
      'sh',
      '-c',
      'printf "%s|" "$@"; echo; echo oops >&2; exit 7',
      'sh',
      "it's",
      'a b',
      '$HOME;rm',
      '*',
    ]);
    expect(result.stdout).toBe("it's|a b|$HOME;rm|*|\n");
    expect(result.stderr).toContain('oops');
    expect(result.code).toBe(7);
  });

  it('exits 0 for a command that succeeds, 128+N for one a signal ended, 124 on a timeout', async () => {
    expect((await sandcell(['exec', '--', 'true'])).code).toBe(0);
    expect((await sandcell(['exec', '--', 'sh', '-c', 'kill -TERM $$'])).code).toBe(128 + 15);
    const slow = await sandcell(['exec', '--timeout', '1', '--', 'sleep', '60']);
    expect(slow.code).toBe(124);
    expect(slow.stderr).toContain('time limit');
  });

  it('uploads files, runs in /mnt/data, and copies the files the command wrote to --output-dir', async () => {
    const input = script('numbers.txt', '3\n1\n2\n');
    const outputDir = path.join(workspace, 'exec-out');
    const result = await sandcell([
      'exec',
      '--upload',
      input,
      '--output-dir',
      outputDir,
      '--',
      'sh',
      '-c',
      'pwd; sort -n numbers.txt > sorted.txt; mkdir -p deep && echo x > deep/y.txt',
    ]);
    expect(result.code).toBe(0);
    expect(result.stdout).toBe('/mnt/data\n');
    expect(readFileSync(path.join(outputDir, 'sorted.txt'), 'utf8')).toBe('1\n2\n3\n');
    expect(readFileSync(path.join(outputDir, 'deep', 'y.txt'), 'utf8')).toBe('x\n');
    // The upload is input, not output.
    expect(existsSync(path.join(outputDir, 'numbers.txt'))).toBe(false);
    expect(result.stderr).toContain('[file saved to');
  });

  it('is a usage error without a command', async () => {
    const result = await sandcell(['exec']);
    expect(result.code).toBe(2);
  });
});

describe('sandcell repl --language', () => {
  it('bash, piped: cd and variables carry over, open blocks continue, and stdout holds the output alone', async () => {
    const result = await sandcell(
      ['repl', '--language', 'bash'],
      'cd /tmp\nname=world\nfor i in 1 2; do\necho "line $i"\ndone\necho "$(pwd) $name"\n',
    );
    expect(result.code).toBe(0);
    expect(result.stdout).toBe('line 1\nline 2\n/tmp world\n');
    expect(result.stderr).toContain('bash in a sandbox');
  });

  it('bash, at a terminal: the prompt names the language, an open block continues, and exit ends it', async () => {
    const steps = [
      { expect: 'bash> ', send: 'for i in 1 2; do\r' },
      { expect: '....> ', send: 'echo "line $i"\r' },
      { expect: '....> ', send: 'done\r' },
      { expect: 'line 2', send: '' },
      { expect: 'bash> ', send: 'exit\r' },
    ];
    const driver = path.join(root, 'test', 'fixtures', 'pty_steps.py');
    const result = await runProcess(
      '/usr/bin/python3',
      [driver, JSON.stringify(steps), process.execPath, bin, 'repl', '--language', 'bash'],
      { cwd: workspace, env: { XDG_STATE_HOME: path.join(workspace, 'state') } },
    );
    expect(result.stdout, result.stdout).toContain('line 1\r\nline 2\r\n');
    expect(result.stdout).not.toContain('ShellExited');
    expect(result.stdout).toContain('exit=0');
  });

  it('refuses an unknown language as a usage error', async () => {
    const result = await sandcell(['repl', '--language', 'cobol'], '');
    expect(result.code).toBe(2);
  });
});
