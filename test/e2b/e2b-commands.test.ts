/**
 * envd's Process service through the unmodified SDK on a real bubblewrap
 * sandbox: commands.run in the foreground and in the background, their
 * environment, directory, timeout, stdin, listing, reconnection and kill.
 */
import { Sandbox as InterpreterSandbox } from '@e2b/code-interpreter';
import { CommandExitError, Sandbox, TimeoutError } from 'e2b';
import { Sandbox as Sandbox249 } from 'e2b-2-49';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startE2bServer, type TestServer } from '../support/e2b.js';

let server: TestServer;
let sandbox: Sandbox;

beforeAll(async () => {
  server = await startE2bServer();
  sandbox = await Sandbox.create({ envs: { FROM_SANDBOX: 'sandbox-wide', SHARED: 'sandbox' } });
});
afterAll(async () => {
  await sandbox?.kill().catch(() => undefined);
  await server?.close();
});

describe('E2B commands', () => {
  it('runs a command in /home/user and gives its output, streaming it to callbacks', async () => {
    const seen: string[] = [];
    const result = await sandbox.commands.run('echo out; echo err >&2; pwd', {
      onStdout: (text) => void seen.push(text),
    });
    expect(result).toMatchObject({ exitCode: 0, stdout: 'out\n/home/user\n', stderr: 'err\n' });
    expect(seen.join('')).toBe('out\n/home/user\n');
  });

  it('raises CommandExitError for a non-zero exit, with its output', async () => {
    const failure = await sandbox.commands.run('echo partial; exit 3').catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(CommandExitError);
    expect(failure).toMatchObject({ exitCode: 3, stdout: 'partial\n' });
  });

  it('passes the sandbox’s and the call’s environment variables (the call’s win) and a working directory', async () => {
    await sandbox.files.makeDir('/home/user/work');
    const result = await sandbox.commands.run('echo "$FROM_SANDBOX $SHARED $OWN"; pwd', {
      envs: { SHARED: 'call', OWN: 'mine' },
      cwd: '/home/user/work',
    });
    expect(result.stdout).toBe('sandbox-wide call mine\n/home/user/work\n');
  });

  it('kills a command at its timeout and raises TimeoutError; the sandbox keeps working', async () => {
    await expect(sandbox.commands.run('sleep 30', { timeoutMs: 1500 })).rejects.toBeInstanceOf(TimeoutError);
    // The client gives up at its deadline and the server kills the command at the same one: it leaves the list.
    await expect
      .poll(async () => (await sandbox.commands.list()).map((process) => process.args.join(' ')), { timeout: 20_000 })
      .not.toContain('-l -c sleep 30');
    expect((await sandbox.commands.run('echo alive')).stdout).toBe('alive\n');
  });

  it('runs in the background: listed, fed stdin, reconnected to, killed', async () => {
    const handle = await sandbox.commands.run('read line; echo "got $line"; sleep 60', {
      background: true,
      stdin: true,
      timeoutMs: 0,
    });
    expect(handle.pid).toBeGreaterThan(0);
    const listed = await sandbox.commands.list();
    expect(listed.find((process) => process.pid === handle.pid)).toMatchObject({
      cmd: '/bin/bash',
      args: ['-l', '-c', 'read line; echo "got $line"; sleep 60'],
    });

    await sandbox.commands.sendStdin(handle.pid, 'hello\n');
    const reconnected = await sandbox.commands.connect(handle.pid, { timeoutMs: 0 });
    await expect.poll(() => handle.stdout, { timeout: 20_000 }).toBe('got hello\n');

    expect(await handle.kill()).toBe(true);
    await expect(handle.wait()).rejects.toBeInstanceOf(CommandExitError);
    await expect(reconnected.wait()).rejects.toBeInstanceOf(CommandExitError);
    expect((await sandbox.commands.list()).map((process) => process.pid)).not.toContain(handle.pid);
    expect(await sandbox.commands.kill(handle.pid)).toBe(false);
  });

  it('works the same from e2b 2.49', async () => {
    const older = await Sandbox249.connect(sandbox.sandboxId);
    const result = await older.commands.run('echo "$FROM_SANDBOX"');
    expect(result.stdout).toBe('sandbox-wide\n');
    await expect(older.commands.run('exit 1')).rejects.toThrow(/exit status 1/);
  });

  it('the code interpreter’s Sandbox has the same files and commands', async () => {
    const interpreter = await InterpreterSandbox.create({ envs: { GREETING: 'hello' } });
    try {
      await interpreter.files.write('/home/user/greet.sh', 'echo "$GREETING from $(pwd)"\n');
      const result = await interpreter.commands.run('bash greet.sh');
      expect(result.stdout).toBe('hello from /home/user\n');
      await expect(interpreter.commands.run('false')).rejects.toBeInstanceOf(CommandExitError);
    } finally {
      await interpreter.kill();
    }
  });
});
