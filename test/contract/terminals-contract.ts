/**
 * Terminals of a session's sandbox, on one backend: a real pseudo-terminal opened by the supervisor
 * (a /dev/pts device, the session's uid and limits, its working directory and environment), input,
 * resize, Ctrl-C to the foreground job, output paced so that 20 MiB arrive whole through a client
 * that holds, a reattach with the recent output, the session’s bound on terminals, and a
 * restart that ends a terminal saying why (a pause: the E2B and /v1 tests).
 */
import { describe, expect, it } from 'vitest';
import type { SandboxBackend } from '../../src/backends/spec.js';
import { TooManyTerminalsError } from '../../src/errors.js';
import type { Session } from '../../src/session/session.js';
import type { TerminalHandle } from '../../src/session/terminals.js';
import { withSession } from './contract-support.js';

/** A client of a terminal that gathers its output as text. */
function screen(terminal: TerminalHandle, options: { replay?: boolean } = {}) {
  const state = { text: '', ended: undefined as unknown };
  const attachment = terminal.attach(
    {
      data: (chunk) => {
        state.text += chunk.toString('utf8');
      },
      end: (end) => {
        state.ended = end;
      },
    },
    options,
  );
  return {
    state,
    attachment,
    async waitFor(pattern: RegExp, ms = 20_000) {
      const deadline = Date.now() + ms;
      while (!pattern.test(state.text)) {
        if (Date.now() > deadline)
          throw new Error(`No ${pattern}; the terminal shows ${JSON.stringify(state.text.slice(-300))}`);
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
    },
  };
}

export function runTerminalsContract({ name, createBackend }: { name: string; createBackend: () => SandboxBackend }) {
  describe(`terminals of a sandbox: ${name}`, () => {
    const backend = createBackend();
    const withTerminals = <T>(body: (session: Session) => Promise<T>) =>
      withSession(backend, { maxTerminals: 2 }, body);

    it('a shell on a real terminal, as the session’s user, in its directory and environment; resize; Ctrl-C', async () => {
      await withTerminals(async (session) => {
        const canary = await session.run('import os; print(os.getuid())');
        const terminal = await session.terminals.open({ cols: 90, rows: 20, cwd: '/tmp', env: { GREETING: 'hi' } });
        const client = screen(terminal);
        terminal.write('echo "$((6*7)) $(id -u) $PWD $GREETING $TERM"; tty; stty size\r');
        await client.waitFor(
          new RegExp(`[\\r\\n]42 ${canary.stdout.trim()} /tmp hi xterm-256color\\r\\n/dev/pts/\\d+\\r\\n20 90\\r\\n`),
        );
        terminal.resize(120, 40);
        terminal.write('stty size\r');
        await client.waitFor(/[\r\n]40 120\r\n/);
        terminal.write('sleep 100; echo slept\r');
        await new Promise((resolve) => setTimeout(resolve, 300));
        terminal.write('\x03');
        terminal.write('echo "alive $((1+1))"\r');
        await client.waitFor(/alive 2/, 5_000);
        expect(client.state.text).not.toMatch(/[\r\n]slept\r\n/);
        const end = await terminal.close();
        expect(end).toMatchObject({ exitCode: null, signal: 'SIGKILL' });
        expect(session.terminals.list()).toEqual([]);
      });
    });

    it('20 MiB of output arrive whole through a client that holds and releases', async () => {
      await withTerminals(async (session) => {
        const terminal = await session.terminals.open({
          command: ['bash', '-c', 'head -c 15000000 /dev/zero | base64 -w 0; echo; echo done-$((2*21))'],
        });
        let bytes = 0;
        let tail = '';
        let held = 0;
        const attachment = terminal.attach({
          data: (chunk) => {
            bytes += chunk.length;
            tail = (tail + chunk.toString('latin1')).slice(-64);
            // A slow client: it holds after every chunk and lets go a moment later.
            attachment.hold();
            held += 1;
            setTimeout(() => attachment.release(), 1);
          },
          end: () => undefined,
        });
        const end = await terminal.ended;
        expect(end).toMatchObject({ exitCode: 0 });
        // base64 of 15,000,000 bytes, the line ends the terminal adds, and the last line.
        expect(bytes).toBeGreaterThanOrEqual(20_000_000);
        expect(tail).toMatch(/done-42\r\n$/);
        expect(held).toBeGreaterThan(10);
      });
    });

    it('a client that attaches later sees the recent output; the session’s bound on terminals holds', async () => {
      await withTerminals(async (session) => {
        const terminal = await session.terminals.open();
        terminal.write('echo "before-$((3*3))"\r');
        await new Promise((resolve) => setTimeout(resolve, 500));
        const late = screen(terminal);
        await late.waitFor(/before-9/);
        const fresh = screen(terminal, { replay: false });
        terminal.write('echo after\r');
        await fresh.waitFor(/after/);
        expect(fresh.state.text).not.toContain('before-9');
        await session.terminals.open();
        await expect(session.terminals.open()).rejects.toBeInstanceOf(TooManyTerminalsError);
      });
    });

    it('a restart ends a terminal, saying so, and the new sandbox opens new ones', async () => {
      await withTerminals(async (session) => {
        const terminal = await session.terminals.open();
        const client = screen(terminal);
        terminal.write('echo up\r');
        await client.waitFor(/up/);
        await session.restart();
        expect(await terminal.ended).toMatchObject({ exitCode: null, reason: expect.stringMatching(/restarted/) });
        const again = await session.terminals.open();
        const second = screen(again);
        again.write('echo "again $((4+4))"\r');
        await second.waitFor(/again 8/);
        expect(second.state.ended).toBeUndefined();
      });
    });
  });
}
