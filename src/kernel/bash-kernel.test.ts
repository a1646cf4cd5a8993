/**
 * The bash kernel on the host, started as the supervisor starts it (an fd 3/4
 * kernel in its own process group): real python3, real bash, no sandbox.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { FdKernel, processGone, sandboxLikeEnvironment } from '../../test/support/fd-kernel.js';

const KERNEL = path.join(path.dirname(fileURLToPath(import.meta.url)), 'sandcell_bash_kernel.py');

let home: string;
const started: FdKernel[] = [];

async function startKernel(): Promise<FdKernel> {
  const kernel = FdKernel.start(['/usr/bin/python3', '-I', '-B', KERNEL], {
    env: sandboxLikeEnvironment(home, { SANDCELL_KERNEL_OPTIONS: '{"outputBytes": 1048576}' }),
    cwd: home,
  });
  started.push(kernel);
  await kernel.ready();
  return kernel;
}

/** Whether any process of the group runs (zombies waiting to be reaped run nothing). */
function groupAlive(group: number): boolean {
  return readdirSync('/proc')
    .filter((entry) => /^\d+$/.test(entry))
    .some((pid) => {
      try {
        const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
        const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
        return Number(fields[2]) === group && fields[0] !== 'Z';
      } catch {
        return false;
      }
    });
}

beforeAll(() => {
  home = mkdtempSync(path.join(os.tmpdir(), 'sandcell-bash-kernel-'));
});
afterEach(async () => {
  await Promise.all(started.splice(0).map((kernel) => kernel.close()));
});
afterAll(() => rmSync(home, { recursive: true, force: true }));

describe('the bash kernel', { timeout: 30_000 }, () => {
  it('says it is ready with protocol 2, the language, bash version and its pid; counts executions from 1', async () => {
    const kernel = await startKernel();
    const ready = await kernel.ready();
    expect(ready).toMatchObject({ protocolVersion: 2, language: 'bash', pid: kernel.pid });
    expect(ready.version).toMatch(/^\d+\.\d+\.\d+$/);
    const first = await kernel.execute('echo one');
    const second = await kernel.execute('echo two');
    expect(first.stdout).toBe('one\n');
    expect([first.end.executionCount, second.end.executionCount]).toEqual([1, 2]);
    expect(first.end).toMatchObject({ status: 'ok', outputTruncated: false });
  });

  it('keeps the working directory, variables, functions and aliases between executions', async () => {
    const kernel = await startKernel();
    await kernel.execute(
      'mkdir -p sub && cd sub; greeting=hello; shout() { echo "$1" | tr a-z A-Z; }; alias hi="echo hi from alias"',
    );
    const run = await kernel.execute('pwd; echo "$greeting"; shout "$greeting"; hi');
    expect(run.stdout).toBe(`${path.join(home, 'sub')}\nhello\nHELLO\nhi from alias\n`);
  });

  it('runs code as written: quotes, backslashes, unicode, line breaks, here documents, "!" and tabs', async () => {
    const kernel = await startKernel();
    const code = [
      `printf '%s\\n' "it's \\"quoted\\"" 'back\\slash' "été 日本 hi!"`,
      'cat <<EOF',
      'line one',
      '\tindented $((1 + 2))',
      'EOF',
    ].join('\n');
    const run = await kernel.execute(code);
    expect(run.stdout).toBe(`it's "quoted"\nback\\slash\nété 日本 hi!\nline one\n\tindented 3\n`);
    expect(run.end.status).toBe('ok');
  });

  it('reports a non-zero exit status as the error, after the output, and keeps $? for the next run', async () => {
    const kernel = await startKernel();
    const run = await kernel.execute('echo before; ls /no/such/path');
    expect(run.stdout).toBe('before\n');
    expect(run.stderr).toContain('/no/such/path');
    expect(run.error).toMatchObject({ name: 'ExitStatus', value: 'exit status 2', traceback: [] });
    expect(run.end.status).toBe('error');
    expect(run.events.map((event) => event.type)).toEqual(['error', 'execution-end']);
    expect((await kernel.execute('echo "last: $?"')).stdout).toBe('last: 2\n');
    expect((await kernel.execute('(exit 137)')).error?.value).toBe('exit status 137 (SIGKILL)');
  });

  it('gives code an empty stdin: reading gets end of file instead of hanging', async () => {
    const kernel = await startKernel();
    const run = await kernel.execute('read -r line; echo "read: $?"; cat; head -c 10; echo done');
    expect(run.stdout).toBe('read: 1\ndone\n');
  });

  it('stops the running command on SIGINT with an Interrupted error and keeps the shell and its state', async () => {
    const kernel = await startKernel();
    await kernel.execute('kept=yes; cd /');
    // Several rounds: the shell's status and the kernel's own SIGINT race each time.
    for (let round = 0; round < 10; round++) {
      const sleeping = kernel.start(`echo started ${round}; sleep 60; echo after the sleep`);
      await kernel.waitForStdout(`started ${round}`);
      const interrupted = await kernel.interruptUntilEnded(kernel.finish(sleeping));
      expect(interrupted.error).toMatchObject({ name: 'Interrupted' });
      expect(interrupted.end.status).toBe('error');
      expect(interrupted.stdout).not.toContain('after the sleep');
    }

    const looping = kernel.start('echo looping; while :; do :; done; echo after the loop');
    await kernel.waitForStdout('looping');
    kernel.interrupt();
    const loop = await kernel.finish(looping);
    expect(loop.error?.name).toBe('Interrupted');
    expect(loop.stdout).not.toContain('after the loop');

    const after = await kernel.execute('echo "$kept $PWD"');
    expect(after.stdout).toBe('yes /\n');
    expect(after.end.status).toBe('ok');
  });

  it('stops a cell interrupted at once, before the shell has read its line', async () => {
    const kernel = await startKernel();
    await kernel.execute('kept=yes');
    for (let round = 0; round < 10; round++) {
      // As the supervisor does: the request is in the kernel's pipe, perhaps not read yet, when SIGINT comes
      // (and comes again while the run goes on).
      const sleeping = await kernel.startWritten(`sleep 60; echo "after ${round}"`);
      const run = await kernel.interruptUntilEnded(kernel.finish(sleeping));
      expect(run.error?.name).toBe('Interrupted');
      expect(run.stdout).toBe('');
    }
    expect((await kernel.execute('echo "$kept"')).stdout).toBe('yes\n');
  });

  it('ignores a SIGINT that arrives between executions', async () => {
    const kernel = await startKernel();
    await kernel.execute('kept=yes');
    for (let round = 0; round < 10; round++) {
      kernel.interrupt();
      // The signal must have been handled before the next request is written, or it is that cell's
      // (an interrupt that finds a request waiting belongs to it); a busy machine takes a while.
      await new Promise((resolve) => setTimeout(resolve, 200));
      const run = await kernel.execute(`echo "$kept ${round}"`);
      expect(run.stdout).toBe(`yes ${round}\n`);
      expect(run.end.status).toBe('ok');
    }
  });

  it('starts a fresh shell when the code exits the shell, and says the state was reset', async () => {
    const kernel = await startKernel();
    await kernel.execute('lost=value; cd /');
    const exited = await kernel.execute('echo bye; exit 3; echo never');
    expect(exited.stdout).toBe('bye\n');
    expect(exited.error?.name).toBe('ShellExited');
    expect(exited.error?.value).toContain('exited with status 3');
    expect(exited.error?.value).toContain('reset');
    // The shell's status, for `sandcell run script.sh` to exit with and `repl` to end at.
    expect(exited.end.exitStatus).toBe(3);
    const after = await kernel.execute('echo "[$lost] $PWD"');
    expect(after.stdout).toBe(`[] ${home}\n`);
    expect(after.end).not.toHaveProperty('exitStatus');
    const errexit = await kernel.execute('set -e; false; echo never');
    expect(errexit.error?.value).toContain('exited with status 1');
    expect(errexit.end.exitStatus).toBe(1);
    expect((await kernel.execute('echo alive')).stdout).toBe('alive\n');
  });

  it('reset gives a fresh shell: variables gone, count from 1, background jobs of the old one ended', async () => {
    const kernel = await startKernel();
    const background = await kernel.execute('gone=1; sleep 300 & echo $!');
    const sleeper = Number(background.stdout.trim().split('\n').pop());
    expect(processGone(sleeper)).toBe(false);
    expect(await kernel.request('reset')).toMatchObject({ ok: true });
    const run = await kernel.execute('echo "[$gone]"');
    expect(run.stdout).toBe('[]\n');
    expect(run.end.executionCount).toBe(1);
    expect(processGone(sleeper)).toBe(true);
  });

  it('answers is-complete with bash -n: open constructs are incomplete, stray keywords invalid', async () => {
    const kernel = await startKernel();
    const status = async (code: string) => (await kernel.request('is-complete', { code })).status;
    expect(await status('echo ok')).toBe('complete');
    expect(await status('if true; then')).toBe('incomplete');
    expect(await status('echo "open quote')).toBe('incomplete');
    expect(await status('cat <<EOF\nline')).toBe('incomplete');
    expect(await status('echo one \\')).toBe('incomplete');
    expect(await status('ls |')).toBe('incomplete');
    expect(await status('fi')).toBe('invalid');
  });

  it('answers is-complete and ping while an execution is running; queues the next execution', async () => {
    const kernel = await startKernel();
    const running = kernel.start('sleep 0.5; echo first');
    const next = kernel.start('echo second');
    expect((await kernel.request('is-complete', { code: 'while true' })).status).toBe('incomplete');
    expect((await kernel.finish(running)).stdout).toContain('first');
    expect((await kernel.finish(next)).stdout).toContain('second');
  });

  it('refuses code with a NUL byte as a SyntaxError and unknown requests with a reply', async () => {
    const kernel = await startKernel();
    const run = await kernel.execute('echo a\u0000b');
    expect(run.error).toMatchObject({ name: 'SyntaxError' });
    expect(await kernel.request('no-such-request')).toMatchObject({ ok: false, error: { code: 'unknown-request' } });
    expect(await kernel.request('ping')).toMatchObject({ ok: true });
  });

  it('exits when its requests close, ending the processes its shell started', async () => {
    const kernel = await startKernel();
    await kernel.execute('sleep 300 &');
    kernel.closeRequests();
    expect(await kernel.exited).toMatchObject({ code: 0 });
    // SIGKILL takes effect when the killed process next runs: give a busy machine a moment.
    for (let attempt = 0; attempt < 50 && groupAlive(kernel.pid); attempt++) {
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    expect(groupAlive(kernel.pid)).toBe(false);
  });
});

describe('the bash kernel: snapshots (state-save in one kernel, state-load in a fresh one)', {
  timeout: 30_000,
}, () => {
  const INSPECT = [
    'declare -p plain exported list table text',
    'declare -f greet',
    'alias hi',
    'set -o | grep -E "pipefail|nounset"',
    'shopt -p globstar',
    'pwd',
  ].join('; ');

  it('restores variables, functions, aliases, options and the working directory; the count goes on', async () => {
    const directory = mkdtempSync(path.join(home, 'snapshot-'));
    const file = path.join(directory, 'state');
    const first = await startKernel();
    await first.execute(`mkdir -p ${directory}/sub; plain=one; export exported="two words"`);
    await first.execute(
      `list=(a "b c" $'d\\ne'); declare -A table=([key]=value ["with space"]=x); text=$'it\\'s "quoted"\\nété 日本'`,
    );
    await first.execute(
      `greet() { echo "hello $1"; }; alias hi="echo hi there"; set -o pipefail -u; shopt -s globstar; cd ${directory}/sub`,
    );
    const saved = await first.request('state-save', { path: file });
    const names = [
      'plain',
      'exported',
      'list',
      'table',
      'text',
      '(working directory)',
      'greet',
      'alias hi',
      '(options)',
    ];
    // Only what the code set: nothing of the environment, of bash's own, or of the kernel's.
    expect(saved).toMatchObject({ ok: true, skipped: [], executionCount: 3 });
    expect([...(saved.saved as string[])].sort()).toEqual([...names].sort());
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(readFileSync(file, 'utf8').startsWith('# sandcell-bash-state 1\n')).toBe(true);
    const before = await first.execute(INSPECT);
    expect(before.stdout).toContain(`declare -a list=([0]="a" [1]="b c" [2]=$'d\\ne')`);
    expect(before.stdout).toContain(`${directory}/sub\n`);
    expect(before.stdout).toMatch(/nounset\s+on/);

    const second = await startKernel();
    const loaded = await second.request('state-load', { path: file });
    expect(loaded).toMatchObject({ ok: true, skipped: [], executionCount: 3 });
    expect([...(loaded.restored as string[])].sort()).toEqual([...names].sort());
    const after = await second.execute(INSPECT);
    expect(after.stdout).toBe(before.stdout);
    expect(after.end).toMatchObject({ status: 'ok', executionCount: 4 });
    const used = await second.execute('greet world; hi; env | grep -c "^plain=";  env | grep "^exported="');
    expect(used.stdout).toBe('hello world\nhi there\n0\nexported=two words\n');
  });

  it('reports a running background job as not kept and saves the rest', async () => {
    const file = path.join(mkdtempSync(path.join(home, 'snapshot-')), 'state');
    const first = await startKernel();
    await first.execute('kept=yes; sleep 60 &');
    const saved = await first.request('state-save', { path: file });
    expect(saved).toMatchObject({
      ok: true,
      skipped: [{ name: 'job %1', reason: 'a running process is not kept' }],
      executionCount: 1,
    });
    expect(saved.saved).toContain('kept');

    const second = await startKernel();
    expect(await second.request('state-load', { path: file })).toMatchObject({ ok: true, skipped: [] });
    expect((await second.execute('echo "$kept"; jobs')).stdout).toBe('yes\n');
  });

  it('refuses a file that is not a bash state, a missing file or a bad path, and changes nothing', async () => {
    const directory = mkdtempSync(path.join(home, 'snapshot-'));
    const kernel = await startKernel();
    await kernel.execute('mine=1; cd /');
    const files: [string, string][] = [
      ['random', 'x=2\ncd /tmp\n'],
      ['python', '# sandcell-python-state 1\n# execution-count 7\nmine=2\n'],
      ['no-count', '# sandcell-bash-state 1\nmine=2\n'],
    ];
    for (const [name, text] of files) {
      writeFileSync(path.join(directory, name), text);
      const reply = await kernel.request('state-load', { path: path.join(directory, name) });
      expect(reply).toMatchObject({ ok: false, error: { code: 'state-invalid' } });
    }
    const missing = await kernel.request('state-load', { path: path.join(directory, 'missing') });
    expect(missing).toMatchObject({ ok: false, error: { code: 'state-failed' } });
    expect((missing.error as { message: string }).message).toContain('No such file or directory');
    const nowhere = await kernel.request('state-save', { path: path.join(directory, 'missing', 'state') });
    expect(nowhere).toMatchObject({ ok: false, error: { code: 'state-failed' } });
    for (const type of ['state-save', 'state-load']) {
      for (const fields of [{}, { path: 42 }, { path: 'relative/state' }]) {
        expect(await kernel.request(type, fields)).toMatchObject({ ok: false, error: { code: 'invalid-request' } });
      }
    }
    const after = await kernel.execute('echo "$mine $PWD"');
    expect(after.stdout).toBe('1 /\n');
    expect(after.end).toMatchObject({ status: 'ok', executionCount: 2 });
  });

  it('saves once the running execution has ended', async () => {
    const file = path.join(mkdtempSync(path.join(home, 'snapshot-')), 'state');
    const first = await startKernel();
    await first.execute('x=before');
    const running = first.start('sleep 1; x=after');
    const saved = await first.request('state-save', { path: file });
    const end = (await first.finish(running)).end;
    expect(saved).toMatchObject({ ok: true, executionCount: 2 });
    expect(first.events.indexOf(end)).toBeLessThan(first.events.indexOf(saved));

    const second = await startKernel();
    expect(await second.request('state-load', { path: file })).toMatchObject({ ok: true, executionCount: 2 });
    expect((await second.execute('echo "$x"')).stdout).toBe('after\n');
  });

  it('reports a working directory that no longer exists as skipped and restores the rest', async () => {
    const directory = mkdtempSync(path.join(home, 'snapshot-'));
    const file = path.join(directory, 'state');
    const gone = path.join(directory, 'gone');
    const first = await startKernel();
    await first.execute(`mkdir ${gone} && cd ${gone}; kept=1`);
    expect(await first.request('state-save', { path: file })).toMatchObject({ ok: true });
    await first.execute(`cd / && rmdir ${gone}`);

    const second = await startKernel();
    const loaded = await second.request('state-load', { path: file });
    expect(loaded).toMatchObject({
      ok: true,
      restored: ['kept'],
      skipped: [{ name: '(working directory)', reason: `${gone}: No such file or directory` }],
    });
    const after = await second.execute('echo "$kept $PWD"');
    expect(after.stdout).toBe(`1 ${home}\n`);
    expect(after.end.status).toBe('ok');
  });
});
