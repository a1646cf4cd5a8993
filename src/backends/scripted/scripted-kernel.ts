/**
 * The kernel protocol as sandcell_kernel.py speaks it, answered from a script:
 * execute, reset and ping run one at a time in order; interrupt, the file
 * operations and is-complete are answered at once, even during a run.
 */
import type { SandboxExit } from '../spec.js';
import { ScriptedFileError, type ScriptedFileStore } from './file-store.js';
import type { ScriptedRun, ScriptedStep } from './script.js';

type Message = Record<string, unknown>;

/** How often a `wait` step checks its condition. */
const WAIT_POLL_MS = 5;

export interface ScriptedKernelOptions {
  run: ScriptedRun;
  files: ScriptedFileStore;
  kernelNumber: number;
  send: (line: string | Message) => void;
  die: (exit: Partial<SandboxExit>) => void;
}

/** The run in progress: its id, and how to wake a step waiting for an interrupt. */
interface CurrentRun {
  id: unknown;
  interrupted: boolean;
  wake: () => void;
}

const FILE_OPERATIONS: Record<string, (files: ScriptedFileStore, message: Message) => Message> = {
  'file-read': (files, message) => ({ data: files.read(String(message.path ?? '')).toString('base64') }),
  'file-write': (files, message) => {
    const data = Buffer.from(String(message.data ?? ''), 'base64');
    files.write(String(message.path ?? ''), data);
    return { size: data.length };
  },
  'file-list': (files, message) => ({
    entries: files.list(String(message.path ?? ''), { recursive: message.recursive === true }),
  }),
  'file-remove': (files, message) => {
    files.remove(String(message.path ?? ''));
    return {};
  },
  // A trailing colon is the one incomplete statement a script needs.
  'is-complete': (_files, message) =>
    String(message.code ?? '')
      .trimEnd()
      .endsWith(':')
      ? { status: 'incomplete', indent: 4 }
      : { status: 'complete', indent: 0 },
};

export class ScriptedKernel {
  private readonly state = new Map<string, unknown>();
  private executionCount = 0;
  private queue: Promise<void> = Promise.resolve();
  private current?: CurrentRun;
  private stopped = false;

  constructor(private readonly options: ScriptedKernelOptions) {}

  handle(message: Message): void {
    const kind = message.type;
    const operation = typeof kind === 'string' ? FILE_OPERATIONS[kind] : undefined;
    if (kind === 'interrupt') this.interrupt(message.id);
    else if (kind === 'shutdown') this.options.die({ code: 0, reason: 'exited' });
    else if (operation) this.reply(message, () => operation(this.options.files, message));
    else if (kind === 'execute' || kind === 'reset' || kind === 'ping') {
      this.queue = this.queue.then(() => this.runRequest(message));
    } else this.unknown(message);
  }

  private unknown(message: Message): void {
    const kind = message.type;
    this.options.send({
      type: 'reply',
      id: message.id,
      ok: false,
      error: { code: 'unknown-request', message: `unknown request type ${String(kind)}` },
    });
  }

  /** The sandbox ended: nothing more is sent, and a waiting step stops waiting. */
  stop(): void {
    this.stopped = true;
    this.current?.wake();
  }

  private reply(message: Message, handler: () => Message): void {
    try {
      this.options.send({ ...handler(), type: 'reply', id: message.id, ok: true });
    } catch (error) {
      const code = error instanceof ScriptedFileError ? error.reason : 'internal';
      this.options.send({
        type: 'reply',
        id: message.id,
        ok: false,
        error: { code, message: (error as Error).message },
      });
    }
  }

  private interrupt(id: unknown): void {
    const current = this.current;
    if (!current || (id !== undefined && id !== current.id)) return;
    current.interrupted = true;
    current.wake();
  }

  private async runRequest(message: Message): Promise<void> {
    if (this.stopped) return;
    if (message.type === 'execute') {
      await this.execute(message.id, String(message.code ?? ''));
      return;
    }
    if (message.type === 'reset') {
      this.state.clear();
      this.executionCount = 0;
    }
    this.options.send({ type: 'reply', id: message.id, ok: true });
  }

  private async execute(id: unknown, code: string): Promise<void> {
    const current: CurrentRun = { id, interrupted: false, wake: () => undefined };
    this.current = current;
    this.executionCount += 1;
    let failed = false;
    const fail = (name: string, value: string, traceback: string[] = []) => {
      failed = true;
      this.options.send({ type: 'error', id, name, value, traceback });
    };
    try {
      const steps = await this.options.run({
        code,
        executionId: id,
        executionCount: this.executionCount,
        state: this.state,
        files: this.options.files,
        kernelNumber: this.options.kernelNumber,
      });
      for (const step of steps) {
        if (this.stopped) return;
        if (current.interrupted) {
          fail('KeyboardInterrupt', '', ['KeyboardInterrupt']);
          break;
        }
        if (step.type === 'exit') {
          this.options.die({ code: step.code, signal: step.signal, reason: step.reason });
          return;
        }
        if (!(await this.perform(step, current, fail))) break;
      }
    } catch (error) {
      // A script that throws is user code raising: an error in the run, not a dead kernel.
      fail((error as Error).name ?? 'Error', (error as Error).message ?? String(error));
    } finally {
      this.current = undefined;
    }
    if (this.stopped) return;
    this.options.send({
      type: 'execution-end',
      id,
      status: failed ? 'error' : 'ok',
      executionCount: this.executionCount,
      outputTruncated: false,
    });
  }

  /** Does one step; false when the run stops here (interrupted). */
  private async perform(
    step: Exclude<ScriptedStep, { type: 'exit' }>,
    current: CurrentRun,
    fail: (name: string, value: string, traceback?: string[]) => void,
  ): Promise<boolean> {
    const { id } = current;
    switch (step.type) {
      case 'stdout':
      case 'stderr':
        this.options.send({ type: 'stream', id, name: step.type, text: step.text });
        return true;
      case 'result':
      case 'display':
        this.options.send({ type: step.type, id, data: step.data, metadata: step.metadata ?? {} });
        return true;
      case 'error':
        fail(step.name, step.value, step.traceback);
        return true;
      case 'send':
        this.options.send(step.line);
        return true;
      case 'wait':
        return this.waitUntil(step.until, current, fail);
      case 'sleep':
      case 'hang': {
        const ignoreInterrupt = step.type === 'hang' && step.ignoreInterrupt === true;
        await new Promise<void>((resolve) => {
          const timer = step.type === 'sleep' ? setTimeout(resolve, step.ms) : undefined;
          current.wake = () => {
            if (ignoreInterrupt && !this.stopped) return;
            clearTimeout(timer);
            resolve();
          };
          if (current.interrupted && !ignoreInterrupt) current.wake();
        });
        if (current.interrupted && !this.stopped) {
          fail('KeyboardInterrupt', '', ['KeyboardInterrupt']);
          return false;
        }
        return true;
      }
    }
  }

  /** Checks `until` every few milliseconds; false when an interrupt ended the run first. */
  private async waitUntil(
    until: () => boolean,
    current: CurrentRun,
    fail: (name: string, value: string, traceback?: string[]) => void,
  ): Promise<boolean> {
    await new Promise<void>((resolve) => {
      const timer = setInterval(() => {
        if (until()) current.wake();
      }, WAIT_POLL_MS);
      current.wake = () => {
        clearInterval(timer);
        resolve();
      };
      if (current.interrupted || until()) current.wake();
    });
    if (current.interrupted && !this.stopped) {
      fail('KeyboardInterrupt', '', ['KeyboardInterrupt']);
      return false;
    }
    return true;
  }
}
