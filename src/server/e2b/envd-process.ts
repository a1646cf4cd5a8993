/**
 * envd's `process.Process` service: Start and Connect stream a process's
 * events; List, SendInput, StreamInput, CloseStdin, SendSignal and Update act
 * on the processes started here. A process is a background command of the
 * sandbox's session, `exec`ing the requested program with its arguments, or,
 * started with `pty`, a terminal of the session running it (envd-pty.ts); in
 * /home/user unless told otherwise, with the sandbox's environment variables
 * under the call's own.
 */
import type { Context } from 'hono';
import { z } from 'zod';
import type { ServerContext } from '../core/context.js';
import { decodeRequestEnvelope } from './connect-envelope.js';
import type { UnaryMethod } from './envd-filesystem.js';
import { HOME, shellQuote } from './envd-paths.js';
import { openPty, ptyEventStream, resizePty, streamInput } from './envd-pty.js';
import { ConnectError, parseConnectMessage as parse } from './errors.js';
import { PendingEvents, processEventStream } from './process-stream.js';
import { E2bProcess, ProcessTable } from './process-table.js';
import type { E2bSandbox } from './sandbox-row.js';

const DEFAULT_KEEPALIVE_SECONDS = 50;
const MAX_ARGUMENTS = 4096;

const Selector = z.looseObject({ pid: z.number().int().min(0).optional(), tag: z.string().max(256).optional() });
const StartRequest = z.looseObject({
  process: z.looseObject({
    cmd: z.string().min(1).max(4096),
    args: z.array(z.string()).max(MAX_ARGUMENTS).optional(),
    envs: z.record(z.string(), z.string()).optional(),
    cwd: z.string().max(4096).optional(),
  }),
  pty: z.unknown().optional(),
  tag: z.string().max(256).optional(),
  stdin: z.boolean().optional(),
});
const SelectRequest = z.looseObject({ process: Selector });
const UpdateRequest = z.looseObject({ process: Selector, pty: z.unknown().optional() });
const InputRequest = z.looseObject({
  process: Selector,
  input: z.looseObject({ stdin: z.base64().optional(), pty: z.base64().optional() }),
});
const SignalRequest = z.looseObject({
  process: Selector,
  signal: z.union([z.enum(['SIGNAL_SIGTERM', 'SIGNAL_SIGKILL', 'SIGNAL_UNSPECIFIED']), z.literal(9), z.literal(15)]),
});

/** By session: a resumed sandbox has a new one, and none of the processes it had. */
const tables = new WeakMap<object, ProcessTable>();
function processesOf(sandbox: E2bSandbox): ProcessTable {
  let table = tables.get(sandbox.entry);
  if (!table) {
    table = new ProcessTable();
    tables.set(sandbox.entry, table);
  }
  return table;
}

function selected(sandbox: E2bSandbox, selector: z.output<typeof Selector>): E2bProcess {
  const process = processesOf(sandbox).find(selector);
  if (!process) {
    throw new ConnectError('not_found', `No running process ${selector.pid ?? JSON.stringify(selector.tag ?? '')}.`);
  }
  return process;
}

/** `Connect-Timeout-Ms`: up to 10 digits (the Connect protocol's bound); absent or 0 means none. */
function connectTimeout(context: Context): number | undefined {
  const header = context.req.header('connect-timeout-ms');
  if (header === undefined) return undefined;
  if (!/^\d{1,10}$/.test(header)) throw new ConnectError('invalid_argument', 'Connect-Timeout-Ms must be digits.');
  const value = Number(header);
  return value === 0 ? undefined : value;
}

function keepaliveMs(context: Context): number {
  const seconds = Number(context.req.header('keepalive-ping-interval') ?? DEFAULT_KEEPALIVE_SECONDS);
  return Math.min(Math.max(Number.isFinite(seconds) ? seconds : DEFAULT_KEEPALIVE_SECONDS, 1), 300) * 1000;
}

const streamHeaders = { 'content-type': 'application/connect+json', 'cache-control': 'no-store' };

async function readStreamRequest(context: Context, server: ServerContext): Promise<unknown> {
  const type = context.req.header('content-type') ?? '';
  if (!/^application\/connect\+json\b/i.test(type)) {
    throw new ConnectError('unimplemented', `Only the JSON codec is served (application/connect+json), not ${type}.`);
  }
  return decodeRequestEnvelope(new Uint8Array(await context.req.arrayBuffer()), server.options.limits.maxRequestBytes);
}

async function start(context: Context, sandbox: E2bSandbox, server: ServerContext): Promise<Response> {
  const request = parse(StartRequest, await readStreamRequest(context, server));
  const { cmd, args = [], envs = {}, cwd } = request.process;
  const timeoutMs = connectTimeout(context);
  const process = new E2bProcess({ cmd, args, envs, ...(cwd !== undefined ? { cwd } : {}) }, request.tag);
  const directory = cwd === undefined || cwd === '' ? HOME : cwd.startsWith('/') ? cwd : `${HOME}/${cwd}`;
  if (request.pty !== undefined && request.pty !== null) {
    process.terminal = await openPty(sandbox, server, {
      argv: [cmd, ...args],
      cwd: directory,
      env: { HOME, PWD: directory, ...sandbox.envVars, ...envs },
      size: (request.pty as { size?: unknown }).size,
    });
    processesOf(sandbox).add(process);
    const stream = ptyEventStream({
      process,
      terminal: process.terminal,
      keepaliveMs: keepaliveMs(context),
      ...(timeoutMs !== undefined ? { deadlineMs: timeoutMs } : {}),
    });
    return context.body(stream, 200, streamHeaders);
  }
  const command = `exec ${[cmd, ...args].map(shellQuote).join(' ')}`;
  const pending = new PendingEvents();
  const unsubscribe = process.subscribe(pending.listen);
  try {
    // The registry's command path: admission, the time cap, metrics and the session's activity.
    const handle = await server.registry.commands.start(sandbox.entry, command, {
      cwd: directory,
      // PWD too: /home/user and /mnt/data are one directory, and a shell trusts an inherited PWD naming it.
      env: { HOME, PWD: directory, ...sandbox.envVars, ...envs },
      ...(timeoutMs !== undefined ? { timeoutMs } : {}),
      onStdout: (text) => process.emit({ kind: 'stdout', text }),
      onStderr: (text) => process.emit({ kind: 'stderr', text }),
    });
    if (!request.stdin) handle.closeStdin();
    process.started(handle);
    processesOf(sandbox).add(process);
  } catch (error) {
    unsubscribe();
    throw error;
  }
  const stream = processEventStream({
    process,
    pending,
    unsubscribe,
    keepaliveMs: keepaliveMs(context),
    sandboxClosed: () => sandbox.entry.session.closed,
  });
  return context.body(stream, 200, streamHeaders);
}

async function connect(context: Context, sandbox: E2bSandbox, server: ServerContext): Promise<Response> {
  const request = parse(SelectRequest, await readStreamRequest(context, server));
  const process = selected(sandbox, request.process);
  const deadlineMs = connectTimeout(context);
  if (process.terminal) {
    const stream = ptyEventStream({
      process,
      terminal: process.terminal,
      keepaliveMs: keepaliveMs(context),
      ...(deadlineMs !== undefined ? { deadlineMs } : {}),
    });
    return context.body(stream, 200, streamHeaders);
  }
  const pending = new PendingEvents();
  const unsubscribe = process.subscribe(pending.listen);
  const stream = processEventStream({
    process,
    pending,
    unsubscribe,
    keepaliveMs: keepaliveMs(context),
    ...(deadlineMs !== undefined ? { deadlineMs } : {}),
    sandboxClosed: () => sandbox.entry.session.closed,
  });
  return context.body(stream, 200, streamHeaders);
}

/** The server-streaming methods: errors before the stream starts answer as unary errors. */
export const processStreams: Record<
  string,
  (context: Context, sandbox: E2bSandbox, server: ServerContext) => Promise<Response>
> = {
  Start: start,
  Connect: connect,
  StreamInput: (context, sandbox, server) =>
    streamInput(
      context,
      (selector) => selected(sandbox, selector),
      (process, data) => {
        if (!process.terminal) server.registry.commands.admit(sandbox.entry, data.toString('latin1'));
      },
      server.options.limits.maxRequestBytes,
    ),
};

export const processMethods: Record<string, UnaryMethod> = {
  async List(sandbox) {
    return {
      processes: processesOf(sandbox)
        .list()
        .map((process) => ({
          config: process.config,
          pid: process.pid,
          ...(process.tag !== undefined ? { tag: process.tag } : {}),
        })),
    };
  },

  async SendInput(sandbox, server, message) {
    const request = parse(InputRequest, message);
    const data = request.input.stdin ?? request.input.pty;
    if (data === undefined) throw new ConnectError('invalid_argument', 'Send input as `stdin` (base64).');
    const process = selected(sandbox, request.process);
    const bytes = Buffer.from(data, 'base64');
    // Keystrokes are not work the key's rate counts (opening the terminal was); their size is bounded.
    if (process.terminal) process.terminal.write(bytes);
    else {
      server.registry.commands.admit(sandbox.entry, bytes.toString('latin1'));
      process.command.sendStdin(bytes.toString('utf8'));
    }
    return {};
  },

  async CloseStdin(sandbox, _server, message) {
    selected(sandbox, parse(SelectRequest, message).process).command.closeStdin();
    return {};
  },

  async SendSignal(sandbox, _server, message) {
    const request = parse(SignalRequest, message);
    const process = selected(sandbox, request.process);
    const signal = request.signal === 'SIGNAL_SIGTERM' || request.signal === 15 ? 'SIGTERM' : 'SIGKILL';
    if (process.terminal) {
      // A SIGKILL answers once it has ended, as a command's does.
      if (signal === 'SIGKILL') await process.terminal.close();
      else process.terminal.signal(signal);
      return {};
    }
    await process.command.kill(signal);
    // A SIGKILL answers once the process has ended, so a List right after no longer shows it
    // (the run itself bounds that wait, for a sandbox that does not answer).
    if (signal === 'SIGKILL') await process.command.wait().catch(() => undefined);
    return {};
  },

  async Update(sandbox, _server, message) {
    const request = parse(UpdateRequest, message);
    resizePty(selected(sandbox, request.process), request.pty);
    return {};
  },
};
