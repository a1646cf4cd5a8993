/**
 * PTYs through the unmodified E2B JS SDK on real bubblewrap sandboxes: `sandbox.pty.create` opens an
 * interactive bash on a real pseudo-terminal; input, resize, Ctrl-C, kill and connect (a reattach that
 * sees what was written while detached) as envd serves them; another key's sandbox refused; a pause
 * ends the terminal saying so.
 */
import { CommandExitError, Sandbox } from 'e2b';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { asKey, OTHER_KEY, startE2bServer, type TestServer } from '../support/e2b.js';

let server: TestServer;
let sandbox: Sandbox;

/** Output of one PTY as text, and a wait for a pattern in it. */
function screen() {
  const state = { text: '' };
  const decoder = new TextDecoder();
  return {
    onData: (data: Uint8Array) => {
      state.text += decoder.decode(data, { stream: true });
    },
    get text() {
      return state.text;
    },
    async waitFor(pattern: RegExp, ms = 15_000): Promise<RegExpMatchArray> {
      const deadline = Date.now() + ms;
      for (;;) {
        const match = state.text.match(pattern);
        if (match) return match;
        if (Date.now() > deadline)
          throw new Error(`No ${pattern} on the terminal; it shows ${JSON.stringify(state.text.slice(-400))}`);
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    },
  };
}

const typed = (text: string) => new TextEncoder().encode(text);

beforeAll(async () => {
  server = await startE2bServer();
  sandbox = await Sandbox.create();
});
afterAll(async () => {
  await sandbox?.kill().catch(() => undefined);
  await server?.close();
});

describe('E2B PTYs', () => {
  it('runs an interactive bash on a real terminal: input, its tty, resize, Ctrl-C, kill', async () => {
    expect((await sandbox.commands.run('echo canary')).stdout).toBe('canary\n');
    const out = screen();
    const pty = await sandbox.pty.create({ cols: 80, rows: 24, onData: out.onData, timeoutMs: 0 });
    expect(pty.pid).toBeGreaterThan(0);
    await sandbox.pty.sendInput(pty.pid, typed('echo $((6*7)); tty; echo "term=$TERM"; stty size\n'));
    await out.waitFor(/[\r\n]42\r\n/);
    await out.waitFor(/\/dev\/pts\/\d+/);
    await out.waitFor(/term=xterm-256color/);
    await out.waitFor(/[\r\n]24 80\r\n/);
    await sandbox.pty.resize(pty.pid, { cols: 132, rows: 50 });
    await sandbox.pty.sendInput(pty.pid, typed('stty size\n'));
    await out.waitFor(/[\r\n]50 132\r\n/);
    // Ctrl-C interrupts the foreground job, and the shell lives on.
    await sandbox.pty.sendInput(pty.pid, typed('sleep 100; echo slept\n'));
    await new Promise((resolve) => setTimeout(resolve, 300));
    await sandbox.pty.sendInput(pty.pid, typed('\x03'));
    await sandbox.pty.sendInput(pty.pid, typed('echo "alive $((40+2))"\n'));
    await out.waitFor(/alive 42/, 5_000);
    expect(out.text).not.toMatch(/[\r\n]slept\r\n/);
    // It is one of the sandbox's processes: the list shows it.
    expect((await sandbox.commands.list()).map((process) => process.pid)).toContain(pty.pid);
    expect(await sandbox.pty.kill(pty.pid)).toBe(true);
    await expect(pty.wait()).rejects.toBeInstanceOf(CommandExitError);
    expect((await sandbox.commands.list()).map((process) => process.pid)).not.toContain(pty.pid);
    expect(await sandbox.pty.kill(pty.pid)).toBe(false);
  });

  it('an exit ends it with the shell’s status', async () => {
    const out = screen();
    const pty = await sandbox.pty.create({
      cols: 80,
      rows: 24,
      onData: out.onData,
      cwd: '/tmp',
      envs: { GREETING: 'hi' },
    });
    await sandbox.pty.sendInput(pty.pid, typed('echo "$GREETING from $PWD"; exit 3\n'));
    const error = await pty.wait().catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(CommandExitError);
    expect((error as CommandExitError).exitCode).toBe(3);
    expect(out.text).toContain('hi from /tmp');
  });

  it('connect reattaches and sees what was written while no one was attached', async () => {
    const first = screen();
    const pty = await sandbox.pty.create({ cols: 80, rows: 24, onData: first.onData, timeoutMs: 0 });
    await sandbox.pty.sendInput(pty.pid, typed('echo first-$((1+1))\n'));
    await first.waitFor(/first-2/);
    await pty.disconnect();
    await sandbox.pty.sendInput(pty.pid, typed('sleep 0.2; echo "while-away-$((3*3))"\n'));
    await new Promise((resolve) => setTimeout(resolve, 800));
    const second = screen();
    const again = await sandbox.pty.connect(pty.pid, { onData: second.onData, timeoutMs: 0 });
    await second.waitFor(/while-away-9/);
    await sandbox.pty.sendInput(pty.pid, typed('echo back-$((2+2))\n'));
    await second.waitFor(/back-4/);
    expect(first.text).not.toContain('back-4');
    await sandbox.pty.kill(again.pid);
  });

  it('input for a PTY needs the sandbox’s access token; another key cannot even connect to the sandbox', async () => {
    const out = screen();
    const pty = await sandbox.pty.create({ cols: 80, rows: 24, onData: out.onData, timeoutMs: 0 });
    const input = (token: string) =>
      fetch(`${server.url}/e2b/process.Process/SendInput`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'e2b-sandbox-id': sandbox.sandboxId,
          'e2b-sandbox-port': '49983',
          'x-access-token': token,
        },
        body: JSON.stringify({
          process: { pid: pty.pid },
          input: { pty: Buffer.from('echo "forged-$((2*3))"\n').toString('base64') },
        }),
      });
    const forged = await input('not-the-token');
    expect(forged.status).toBe(401);
    await asKey(OTHER_KEY, async () => {
      await expect(Sandbox.connect(sandbox.sandboxId)).rejects.toThrow();
    });
    // The canary: the same request with the token does type into it.
    // The SDK keeps the token to itself (a protected field); the test reads it as the SDK sends it.
    const genuine = await input((sandbox as unknown as { envdAccessToken?: string }).envdAccessToken ?? '');
    expect(genuine.status).toBe(200);
    await out.waitFor(/[\r\n]forged-6\r\n/);
    expect(out.text.match(/[\r\n]forged-6\r\n/g)).toHaveLength(1);
    await sandbox.pty.kill(pty.pid);
  });

  it('a pause ends an open terminal, saying why, and a resumed sandbox opens new ones', async () => {
    const target = await Sandbox.create();
    try {
      const out = screen();
      const pty = await target.pty.create({ cols: 80, rows: 24, onData: out.onData, timeoutMs: 0 });
      await target.pty.sendInput(pty.pid, typed('echo before-pause\n'));
      await out.waitFor(/before-pause/);
      const ended = pty.wait().catch((caught: unknown) => caught);
      expect(await target.pause()).toBe(true);
      const error = await ended;
      expect(error).toBeInstanceOf(CommandExitError);
      expect(String((error as CommandExitError).error)).toMatch(/paused.*not kept by a pause/);
      const resumed = await Sandbox.connect(target.sandboxId);
      const after = screen();
      const fresh = await resumed.pty.create({ cols: 80, rows: 24, onData: after.onData, timeoutMs: 0 });
      await resumed.pty.sendInput(fresh.pid, typed('echo after-$((5+5))\n'));
      await after.waitFor(/after-10/);
      await resumed.pty.kill(fresh.pid);
    } finally {
      await target.kill().catch(() => undefined);
    }
  });
});
