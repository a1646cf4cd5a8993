/**
 * envd's PTYs: `Start` with `pty` opens a terminal of the sandbox's session
 * (the program the SDK asks for, `/bin/bash -i -l`, on a pseudo-terminal the
 * supervisor opens); `SendInput` and `StreamInput` with `pty` write to it,
 * `Update` resizes it, `SendSignal` ends it, `Connect` reattaches with the
 * recent output first (`REPLAY_BYTES`).
 *
 * A stream is paced by its client: the terminal is held while the response
 * holds more than STREAM_HIGH_WATER bytes unread, so a slow client stops the
 * program's output rather than growing the server's memory. `Connect-Timeout-Ms`
 * (the SDK's `timeoutMs`, 60 s by default) ends the stream with
 * `deadline_exceeded`, never the terminal: `pty.connect(pid)` finds it again,
 * and `pty.kill(pid)` ends it. A terminal sandcell ended (a pause, the
 * sandbox's loss) ends its streams with that reason as the end event's error.
 */
import type { Context } from 'hono';
import type { TerminalEnd } from '../../session/terminal.js';
import { terminalExitCode } from '../../session/terminal.js';
import type { TerminalHandle } from '../../session/terminals.js';
import type { ServerContext } from '../core/context.js';
import { decodeRequestEnvelope, END_STREAM_FLAG, encodeEndStream, encodeEnvelope } from './connect-envelope.js';
import { ConnectError, toConnectError } from './errors.js';
import { streamClock } from './process-stream.js';
import type { E2bProcess } from './process-table.js';
import type { E2bSandbox } from './sandbox-row.js';

/** Bytes a PTY stream's response may hold unread before the terminal waits for its client. */
export const STREAM_HIGH_WATER = 256 * 1024;

export interface PtyStreamOptions {
  process: E2bProcess;
  terminal: TerminalHandle;
  keepaliveMs: number;
  deadlineMs?: number;
}

/** envd's end event for a terminal's end. */
function endEvent(end: TerminalEnd) {
  const exitCode = terminalExitCode(end);
  const status = end.reason ?? (end.signal ? `signal: ${end.signal}` : `exit status ${exitCode}`);
  return {
    event: {
      end: {
        exitCode,
        exited: end.signal === undefined && end.reason === undefined,
        status,
        ...(exitCode !== 0 ? { error: end.reason ? `The terminal ended: ${end.reason}.` : status } : {}),
      },
    },
  };
}

/** A PTY's events as a Connect server stream: start, its output as `pty` data, keepalives, its end. */
export function ptyEventStream(options: PtyStreamOptions): ReadableStream<Uint8Array> {
  const timers: NodeJS.Timeout[] = [];
  let finished = false;
  let detach = (): void => undefined;
  let release = (): void => undefined;
  const stop = () => {
    finished = true;
    for (const timer of timers) clearTimeout(timer);
    detach();
  };
  return new ReadableStream<Uint8Array>(
    {
      start(controller) {
        const finish = (error?: ConnectError) => {
          if (finished) return;
          stop();
          controller.enqueue(encodeEndStream(error));
          controller.close();
        };
        controller.enqueue(encodeEnvelope({ event: { start: { pid: options.process.pid } } }));
        const attachment = options.terminal.attach({
          data: (chunk) => {
            if (finished) return;
            controller.enqueue(encodeEnvelope({ event: { data: { pty: chunk.toString('base64') } } }));
            if ((controller.desiredSize ?? 1) <= 0) attachment.hold();
          },
          end: (end) => {
            if (finished) return;
            controller.enqueue(encodeEnvelope(endEvent(end)));
            finish();
          },
        });
        detach = () => attachment.detach();
        release = () => attachment.release();
        timers.push(
          ...streamClock(controller, {
            keepaliveMs: options.keepaliveMs,
            ...(options.deadlineMs !== undefined ? { deadlineMs: options.deadlineMs } : {}),
            open: () => !finished,
            expire: () =>
              finish(new ConnectError('deadline_exceeded', 'The stream reached its timeout; the PTY runs on.')),
          }),
        );
      },
      pull() {
        release();
      },
      cancel() {
        stop();
      },
    },
    { highWaterMark: STREAM_HIGH_WATER, size: (chunk) => chunk.byteLength },
  );
}

/** Opens the PTY a `Start` request asks for. */
export async function openPty(
  sandbox: E2bSandbox,
  server: ServerContext,
  settings: { argv: string[]; cwd: string; env: Record<string, string>; size: unknown },
): Promise<TerminalHandle> {
  const size = (settings.size ?? {}) as { cols?: unknown; rows?: unknown };
  const cols = size.cols ?? 80;
  const rows = size.rows ?? 24;
  if (typeof cols !== 'number' || typeof rows !== 'number') {
    throw new ConnectError('invalid_argument', 'pty.size needs cols and rows as numbers.');
  }
  return server.registry.terminals.open(sandbox.entry, {
    cols,
    rows,
    cwd: settings.cwd,
    env: settings.env,
    command: settings.argv,
  });
}

/** The terminal of a PTY process, or envd's refusal for a process that has none. */
export function ptyOf(process: E2bProcess): TerminalHandle {
  if (!process.terminal) throw new ConnectError('invalid_argument', `Process ${process.pid} is not a PTY.`);
  return process.terminal;
}

/** A PTY's size from `Update`'s `pty.size`. */
export function resizePty(process: E2bProcess, pty: unknown): void {
  const size = (pty as { size?: { cols?: unknown; rows?: unknown } } | undefined)?.size;
  if (!size || typeof size.cols !== 'number' || typeof size.rows !== 'number') {
    throw new ConnectError('invalid_argument', 'Update needs pty.size with cols and rows.');
  }
  ptyOf(process).resize(size.cols, size.rows);
}

/**
 * `StreamInput`: a client stream of envelopes (a start naming the process, then
 * data, keepalives), read as it arrives, each bounded; answered once the body
 * ends. Input for a command's stdin goes there, for a PTY to its terminal.
 */
export async function streamInput(
  context: Context,
  find: (selector: { pid?: number; tag?: string }) => E2bProcess,
  admit: (process: E2bProcess, data: Buffer) => void,
  maxBytes: number,
): Promise<Response> {
  const body = context.req.raw.body;
  let target: E2bProcess | undefined;
  let pending = Buffer.alloc(0);
  const take = (message: unknown) => {
    // A oneof's member lies on the message itself in protobuf's JSON: `{"start": …}`, `{"data": …}`, `{"keepalive": {}}`.
    const event = (message ?? {}) as Record<string, unknown>;
    if ('start' in event) {
      const selector = (event.start as { process?: { pid?: unknown; tag?: unknown } } | undefined)?.process ?? {};
      target = find({
        ...(typeof selector.pid === 'number' ? { pid: selector.pid } : {}),
        ...(typeof selector.tag === 'string' ? { tag: selector.tag } : {}),
      });
      return;
    }
    if ('data' in event) {
      if (!target)
        throw new ConnectError('invalid_argument', 'StreamInput must start with a start event naming the process.');
      const input = (event.data as { input?: { stdin?: unknown; pty?: unknown } } | undefined)?.input ?? {};
      const encoded = input.pty ?? input.stdin;
      if (typeof encoded !== 'string')
        throw new ConnectError('invalid_argument', 'A data event carries `stdin` or `pty` (base64).');
      const data = Buffer.from(encoded, 'base64');
      admit(target, data);
      if (target.terminal) target.terminal.write(data);
      else target.command.sendStdin(data.toString('utf8'));
    }
  };
  try {
    if (body) {
      for await (const chunk of body) {
        pending = Buffer.concat([pending, chunk]);
        while (pending.length >= 5) {
          const length = pending.readUInt32BE(1);
          if (length > maxBytes)
            throw new ConnectError('resource_exhausted', `A message is ${length} bytes; at most ${maxBytes}.`);
          if (pending.length < 5 + length) break;
          const envelope = pending.subarray(0, 5 + length);
          pending = pending.subarray(5 + length);
          if (envelope[0]! & END_STREAM_FLAG) continue;
          take(decodeRequestEnvelope(envelope, maxBytes));
        }
      }
    }
    if (pending.length > 0) throw new ConnectError('invalid_argument', 'The stream ended inside a message.');
  } catch (error) {
    return streamAnswer(toConnectError(error));
  }
  return streamAnswer();
}

function streamAnswer(error?: ConnectError): Response {
  const parts = error ? [encodeEndStream(error)] : [encodeEnvelope({}), encodeEndStream()];
  return new Response(Buffer.concat(parts), { status: 200, headers: { 'content-type': 'application/connect+json' } });
}
