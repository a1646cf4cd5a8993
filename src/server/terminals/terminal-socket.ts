/**
 * A WebSocket attached to a terminal, in one of two framings:
 *
 * - `jupyter` (Jupyter Server's terminals, terminado's frames): JSON arrays,
 *   `["stdin", text]` and `["set_size", rows, cols, …]` from the client;
 *   `["setup", {}]` on opening, `["stdout", text]`, and `["disconnect", 1]` when
 *   the terminal ends (after a last line saying why, when sandcell ended it).
 * - `sandcell` (/v1 and the web UI): binary frames are the terminal's bytes
 *   both ways; text frames are JSON control messages: from the client
 *   `{"type":"resize","cols","rows"}` and `{"type":"signal","signal"}`; from the
 *   server `{"type":"ready","id","pid","cols","rows"}` first and
 *   `{"type":"exit","exitCode","signal","reason"}` last, then a close (1000).
 *
 * Every frame is bounded (the socket's maxPayload, and TERMINAL_INPUT_BYTES
 * for input); one that is not understood is dropped and said in the log, and
 * the socket goes on. A client that reads slowly holds the terminal (the
 * program waits in its write) while more than HIGH_WATER bytes wait unsent,
 * and lets it go once fewer than LOW_WATER do: the server's memory per socket
 * is bounded whatever the program writes. Input counts as the session's activity.
 */
import { StringDecoder } from 'node:string_decoder';
import type { WebSocket } from 'ws';
import type { TerminalEnd } from '../../session/terminal.js';
import type { TerminalHandle } from '../../session/terminals.js';
import { checkSize, checkTerminalSignal } from '../../session/terminals.js';

export type TerminalFraming = 'jupyter' | 'sandcell';

const HIGH_WATER = 1024 * 1024;
const LOW_WATER = 256 * 1024;
const DRAIN_CHECK_MS = 10;

export interface TerminalSocketOptions {
  /** Said in the log for a frame that was dropped. */
  onDropped?: (reason: string) => void;
  /** The terminal's output written while no one was attached comes first (a reattach after a reload). */
  replay?: boolean;
}

/** What the terminal said last, as a person reads it, for a framing that has no field for it. */
export function endLine(end: TerminalEnd): string {
  if (end.reason) return `\r\n[sandcell: the terminal ended: ${end.reason}]\r\n`;
  return '';
}

export function attachTerminalSocket(
  socket: WebSocket,
  terminal: TerminalHandle,
  framing: TerminalFraming,
  options: TerminalSocketOptions = {},
): void {
  const decoder = new StringDecoder('utf8');
  let drainTimer: NodeJS.Timeout | undefined;
  const send = (data: string | Buffer) => {
    if (socket.readyState === socket.OPEN) socket.send(data);
  };
  if (framing === 'jupyter') send(JSON.stringify(['setup', {}]));
  else
    send(
      JSON.stringify({ type: 'ready', id: terminal.id, pid: terminal.pid, cols: terminal.cols, rows: terminal.rows }),
    );

  const attachment = terminal.attach(
    {
      data(chunk) {
        if (framing === 'jupyter') {
          const text = decoder.write(chunk);
          if (text) send(JSON.stringify(['stdout', text]));
        } else send(chunk);
        if (socket.bufferedAmount > HIGH_WATER && drainTimer === undefined) {
          attachment.hold();
          drainTimer = setInterval(() => {
            if (socket.readyState !== socket.OPEN || socket.bufferedAmount < LOW_WATER) {
              clearInterval(drainTimer);
              drainTimer = undefined;
              attachment.release();
            }
          }, DRAIN_CHECK_MS);
        }
      },
      end(end) {
        if (framing === 'jupyter') {
          const last = decoder.end() + endLine(end);
          if (last) send(JSON.stringify(['stdout', last]));
          send(JSON.stringify(['disconnect', 1]));
        } else {
          send(
            JSON.stringify({
              type: 'exit',
              exitCode: end.exitCode,
              signal: end.signal ?? null,
              reason: end.reason ?? null,
            }),
          );
        }
        socket.close(1000, 'the terminal ended');
      },
    },
    { replay: options.replay !== false },
  );

  socket.on('message', (data, isBinary) => {
    const bytes = Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data as ArrayBuffer);
    try {
      if (framing === 'sandcell' && isBinary) {
        terminal.write(bytes);
        return;
      }
      const message: unknown = JSON.parse(bytes.toString('utf8'));
      if (framing === 'jupyter') jupyterMessage(terminal, message);
      else controlMessage(terminal, message);
    } catch (error) {
      options.onDropped?.(error instanceof Error ? error.message : String(error));
    }
  });
  const stop = () => {
    if (drainTimer !== undefined) clearInterval(drainTimer);
    attachment.detach();
  };
  socket.on('close', stop);
  socket.on('error', stop);
}

function jupyterMessage(terminal: TerminalHandle, message: unknown): void {
  if (!Array.isArray(message) || typeof message[0] !== 'string') throw new Error('a frame that is not ["kind", …]');
  switch (message[0]) {
    case 'stdin':
      if (typeof message[1] !== 'string') throw new Error('stdin without its text');
      terminal.write(message[1]);
      return;
    case 'set_size':
      terminal.resize(checkSize('cols', message[2]), checkSize('rows', message[1]));
      return;
    default:
      throw new Error(`an unknown frame ${JSON.stringify(message[0].slice(0, 40))}`);
  }
}

function controlMessage(terminal: TerminalHandle, message: unknown): void {
  const control = (message ?? {}) as {
    type?: unknown;
    cols?: unknown;
    rows?: unknown;
    signal?: unknown;
    data?: unknown;
  };
  switch (control.type) {
    case 'resize':
      terminal.resize(checkSize('cols', control.cols), checkSize('rows', control.rows));
      return;
    case 'signal':
      terminal.signal(checkTerminalSignal(control.signal));
      return;
    case 'input':
      if (typeof control.data !== 'string') throw new Error('input without its text');
      terminal.write(control.data);
      return;
    default:
      throw new Error(`an unknown control message ${JSON.stringify(String(control.type).slice(0, 40))}`);
  }
}
