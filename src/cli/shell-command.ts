/**
 * `sandcell shell`: an interactive shell (or the program given after --) on a
 * terminal in a fresh sandbox, with exec's flags; or, with `--server URL
 * --session ID`, in a running server's session, through /v1's terminal
 * socket (the key in SANDCELL_API_KEY), like `docker exec -it`.
 *
 * On a TTY, stdin goes raw: every key, Ctrl-C included, is the terminal's
 * (Ctrl-C interrupts the program in the sandbox, not sandcell), and the
 * window's size follows it. On a pipe, what comes is typed in, and its end is
 * a Ctrl-D. The exit code is the shell's (128+N for signal N). Output is paced
 * by this terminal's stdout: a slow one holds the program, not memory.
 */
import { once } from 'node:events';
import WebSocket from 'ws';
import { InvalidInputError } from '../errors.js';
import type { TerminalAttachment, TerminalClient, TerminalEnd } from '../session/terminal.js';
import { terminalExitCode } from '../session/terminal.js';
import type { BackendCliOptions } from './backend-option.js';
import { CliExit, EXIT_SANDBOX_FAILURE, EXIT_USAGE } from './exit-codes.js';
import type { LimitCliOptions } from './limit-options.js';
import type { NetworkCliOptions } from './network-options.js';
import { copyOutputFiles, dim, printRefused, savedFileLine } from './render.js';
import { startSessionWithUploads } from './start-session.js';

export interface ShellCommandOptions extends BackendCliOptions, LimitCliOptions, NetworkCliOptions {
  upload: string[];
  outputDir: string;
  server?: string;
  session?: string;
}

/** What the local terminal does for either kind of remote end. */
interface Far {
  write(data: Buffer): void;
  resize(cols: number, rows: number): void;
  attach(client: TerminalClient): Pick<TerminalAttachment, 'hold' | 'release'>;
}

const size = () => ({ cols: process.stdout.columns || 80, rows: process.stdout.rows || 24 });

/** Connects this process's terminal to `far` until it ends; resolves with its end. */
async function connectTerminal(far: Far): Promise<TerminalEnd> {
  const stdin = process.stdin;
  const raw = stdin.isTTY === true;
  let attachment: Pick<TerminalAttachment, 'hold' | 'release'> | undefined;
  const ended = new Promise<TerminalEnd>((resolve) => {
    attachment = far.attach({
      data(chunk) {
        if (!process.stdout.write(chunk)) {
          attachment?.hold();
          process.stdout.once('drain', () => attachment?.release());
        }
      },
      end: resolve,
    });
  });
  const onInput = (chunk: Buffer) => far.write(chunk);
  const onEnd = () => far.write(Buffer.from([4]));
  const onResize = () => far.resize(size().cols, size().rows);
  if (raw) stdin.setRawMode(true);
  stdin.on('data', onInput);
  stdin.on('end', onEnd);
  process.stdout.on('resize', onResize);
  stdin.resume();
  try {
    return await ended;
  } finally {
    stdin.off('data', onInput);
    stdin.off('end', onEnd);
    process.stdout.off('resize', onResize);
    if (raw) stdin.setRawMode(false);
    stdin.pause();
  }
}

function sayEnd(end: TerminalEnd): number {
  if (end.reason) process.stderr.write(`\r\nThe terminal ended: ${end.reason}.\n`);
  return terminalExitCode(end) < 0 ? EXIT_SANDBOX_FAILURE : terminalExitCode(end);
}

export async function shellCommand(words: string[], options: ShellCommandOptions): Promise<number> {
  if ((options.server === undefined) !== (options.session === undefined)) {
    throw new CliExit(EXIT_USAGE, '--server and --session go together: `sandcell shell --server URL --session ID`.');
  }
  if (options.server !== undefined && options.session !== undefined) {
    return remoteShell(options.server, options.session, words);
  }
  const { session, uploaded } = await startSessionWithUploads(options, { timeoutMs: undefined });
  try {
    const terminal = await session.terminals.open({ ...size(), ...(words.length > 0 ? { command: words } : {}) });
    const end = await connectTerminal({
      write: (data) => terminal.write(data),
      resize: (cols, rows) => terminal.resize(cols, rows),
      attach: (client) => terminal.attach(client),
    });
    const files = await copyOutputFiles(session, options.outputDir, uploaded, printRefused);
    for (const copied of files) process.stderr.write(dim(`${savedFileLine(copied)}\n`, process.stderr));
    return sayEnd(end);
  } catch (error) {
    if (error instanceof InvalidInputError) throw new CliExit(EXIT_USAGE, error.message);
    throw error;
  } finally {
    await session.close();
  }
}

/** A shell in session `id` of the server at `base`, through /v1. */
async function remoteShell(base: string, id: string, words: string[]): Promise<number> {
  let url: URL;
  try {
    url = new URL(base);
  } catch {
    throw new CliExit(
      EXIT_USAGE,
      `--server must be the server's URL, like http://127.0.0.1:8080; got ${JSON.stringify(base)}.`,
    );
  }
  const key = process.env.SANDCELL_API_KEY;
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    ...(key ? { authorization: `Bearer ${key}` } : {}),
  };
  const answer = await fetch(new URL(`/v1/sessions/${encodeURIComponent(id)}/terminals`, url), {
    method: 'POST',
    headers,
    body: JSON.stringify({ ...size(), ...(words.length > 0 ? { command: words } : {}) }),
  });
  if (!answer.ok) {
    const body = (await answer.json().catch(() => ({}))) as { error?: { message?: string } };
    throw new CliExit(
      EXIT_SANDBOX_FAILURE,
      `The server refused the terminal (${answer.status}): ${body.error?.message ?? answer.statusText}`,
    );
  }
  const { socket: path } = (await answer.json()) as { socket: string };
  const socketUrl = new URL(path, url);
  socketUrl.protocol = url.protocol === 'https:' ? 'wss:' : 'ws:';
  const socket = new WebSocket(socketUrl, ['sandcell.terminal'], {
    headers: key ? { authorization: `Bearer ${key}` } : {},
  });
  await once(socket, 'open');
  const end = await connectTerminal({
    write: (data) => socket.send(data, { binary: true }),
    resize: (cols, rows) => socket.send(JSON.stringify({ type: 'resize', cols, rows })),
    attach: (client) => {
      socket.on('message', (data, isBinary) => {
        const bytes = Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data as ArrayBuffer);
        if (isBinary) {
          client.data(bytes);
          return;
        }
        const control = JSON.parse(bytes.toString('utf8')) as { type?: string } & Partial<TerminalEnd>;
        if (control.type === 'exit') {
          client.end({
            exitCode: control.exitCode ?? null,
            ...(control.signal ? { signal: control.signal } : {}),
            ...(control.reason ? { reason: control.reason } : {}),
          });
        }
      });
      socket.on('close', () => client.end({ exitCode: null, reason: 'the connection to the server closed' }));
      return { hold: () => socket.pause(), release: () => socket.resume() };
    },
  });
  socket.close();
  return sayEnd(end);
}
