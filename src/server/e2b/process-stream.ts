/**
 * A process's events as a Connect server stream: the start event, output as
 * base64 data events, keepalives (so proxies keep an idle stream open), and the
 * end event followed by the end-stream envelope — carrying
 * `deadline_exceeded` when the command was killed at its timeout, so the SDK
 * raises its TimeoutError. A client that goes away only stops listening: the
 * process keeps running, and Process.Connect finds it again.
 */
import type { CommandResult } from '../../session/command.js';
import { encodeEndStream, encodeEnvelope } from './connect-envelope.js';
import { ConnectError, toConnectError } from './errors.js';
import type { E2bProcess, ProcessEvent, ProcessListener } from './process-table.js';

/** Holds a process's events until a stream takes them, so nothing said before the start event is lost. */
export class PendingEvents {
  private readonly events: ProcessEvent[] = [];
  private target?: ProcessListener;

  readonly listen: ProcessListener = (event) => {
    if (this.target) this.target(event);
    else this.events.push(event);
  };

  attach(target: ProcessListener): void {
    this.target = target;
    for (const event of this.events.splice(0)) target(event);
  }
}

export interface StreamOptions {
  process: E2bProcess;
  pending: PendingEvents;
  unsubscribe: () => void;
  keepaliveMs: number;
  /** When the stream itself ends with `deadline_exceeded` (Process.Connect's timeout); the process runs on. */
  deadlineMs?: number;
  /** Whether the sandbox was closed, which turns a failed command into "the sandbox is gone". */
  sandboxClosed: () => boolean;
}

const base64 = (text: string): string => Buffer.from(text, 'utf8').toString('base64');

/** envd's end event; a failure's `error` is its status, as Go's `exec` words it, which the SDK makes CommandExitError's message. */
function endEvent(result: CommandResult) {
  const status = result.signal === undefined ? `exit status ${result.exitCode}` : `signal: ${result.signal}`;
  return {
    event: {
      end: {
        exitCode: result.exitCode,
        exited: result.signal === undefined,
        status,
        ...(result.exitCode !== 0 ? { error: status } : {}),
      },
    },
  };
}

/**
 * A stream's clock: a keepalive envelope every `keepaliveMs` while it is `open` (so proxies keep an idle
 * stream), and, with `deadlineMs`, `expire` then. The timers, for the stream's stop to clear.
 */
export function streamClock(
  controller: ReadableStreamDefaultController<Uint8Array>,
  clock: { keepaliveMs: number; deadlineMs?: number; open: () => boolean; expire: () => void },
): NodeJS.Timeout[] {
  const timers = [
    setInterval(() => {
      if (clock.open()) controller.enqueue(encodeEnvelope({ event: { keepalive: {} } }));
    }, clock.keepaliveMs),
  ];
  if (clock.deadlineMs !== undefined) timers.push(setTimeout(clock.expire, clock.deadlineMs));
  return timers;
}

export function processEventStream(options: StreamOptions): ReadableStream<Uint8Array> {
  const timers: NodeJS.Timeout[] = [];
  let finished = false;
  const stop = () => {
    finished = true;
    options.unsubscribe();
    for (const timer of timers) clearTimeout(timer);
  };
  return new ReadableStream<Uint8Array>({
    start(controller) {
      const finish = (error?: ConnectError) => {
        if (finished) return;
        stop();
        controller.enqueue(encodeEndStream(error));
        controller.close();
      };
      controller.enqueue(encodeEnvelope({ event: { start: { pid: options.process.pid } } }));
      options.pending.attach((event) => {
        if (finished) return;
        if (event.kind === 'stdout' || event.kind === 'stderr') {
          controller.enqueue(encodeEnvelope({ event: { data: { [event.kind]: base64(event.text) } } }));
        } else if (event.kind === 'end') {
          controller.enqueue(encodeEnvelope(endEvent(event.result)));
          finish(
            event.result.timedOut
              ? new ConnectError('deadline_exceeded', 'The command ran past its timeout and was killed.')
              : undefined,
          );
        } else if (event.kind === 'failed') {
          finish(
            options.sandboxClosed()
              ? new ConnectError('unavailable', 'The sandbox was killed or reached its timeout.')
              : toConnectError(event.error),
          );
        }
      });
      timers.push(
        ...streamClock(controller, {
          keepaliveMs: options.keepaliveMs,
          ...(options.deadlineMs !== undefined ? { deadlineMs: options.deadlineMs } : {}),
          open: () => !finished,
          expire: () => finish(new ConnectError('deadline_exceeded', 'The stream reached its timeout.')),
        }),
      );
    },
    cancel() {
      stop();
    },
  });
}
