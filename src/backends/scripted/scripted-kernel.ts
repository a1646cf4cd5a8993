/**
 * One context's kernel, answering from a script: execute, reset, ping,
 * complete and inspect run one at a time in order (completion and inspection
 * read the script's state: its names, and a name's value); interrupt,
 * is-complete and input-reply are heard at once, even during a run. What it sends goes through its supervisor, which adds the
 * context's id.
 */
import type { Completion, Inspection } from '../../session/assist-replies.js';
import type { ContextBoundMessage, KernelMessage, SkippedName } from '../../session/kernel-messages.js';
import type { SandboxExit } from '../spec.js';
import type { ScriptedFileStore } from './file-store.js';
import type { ScriptedRun, ScriptedStep } from './script.js';

type InputReply = Extract<ContextBoundMessage, { type: 'input-reply' }>;

const STATE_MAGIC = 'sandcell-scripted-state 1\n';

/** How often a `wait` step checks its condition. */
const WAIT_POLL_MS = 5;

export interface ScriptedKernelOptions {
  contextId: string;
  language: string;
  run: ScriptedRun;
  files: ScriptedFileStore;
  /** The sandbox's state directory (state-save writes there, state-load reads). */
  stateFiles: Map<string, Buffer>;
  kernelNumber: number;
  /** The context's working directory. */
  cwd: string;
  /** Sends a message as this kernel, one the real protocol has (the supervisor adds the context). */
  send: (message: KernelMessage) => void;
  /** Writes what a script forges as this kernel, whatever it is (the supervisor adds the context). */
  forge: (message: Record<string, unknown>) => void;
  /** Writes a raw line on the sandbox's channel. */
  sendRaw: (line: string | Record<string, unknown>) => void;
  /** The whole sandbox ends. */
  die: (exit: Partial<SandboxExit>) => void;
  /** This kernel ends alone. */
  exit: (exit: { code: number | null; signal: string | null; outOfMemory: boolean }) => void;
}

/** The run in progress: its id, and how to wake a step waiting for an interrupt. */
interface CurrentRun {
  id: string;
  interrupted: boolean;
  wake: () => void;
  /** Whether the host answers input (`stdin` on the execute). */
  stdin: boolean;
  /** Set while an `input` step waits: takes the host's input-reply. */
  answer?: (reply: InputReply) => void;
}

export class ScriptedKernel {
  private readonly state = new Map<string, unknown>();
  private executionCount = 0;
  private queue: Promise<void> = Promise.resolve();
  private current?: CurrentRun;
  private stopped = false;
  /** A step made the sandbox stuck: a restart of this context is never answered. */
  stalled = false;

  constructor(private readonly options: ScriptedKernelOptions) {}

  handle(message: ContextBoundMessage): void {
    if (message.type === 'interrupt') this.interrupt(message.id);
    else if (message.type === 'is-complete') this.answerIsComplete(message);
    else if (message.type === 'input-reply') this.current?.answer?.(message);
    else this.queue = this.queue.then(() => this.runRequest(message));
  }

  /** The kernel ended (restarted, removed, its sandbox gone): nothing more is sent, and a waiting step stops waiting. */
  stop(): void {
    this.stopped = true;
    this.current?.wake();
  }

  // A trailing colon is the one incomplete statement a script needs.
  private answerIsComplete(message: Extract<ContextBoundMessage, { type: 'is-complete' }>): void {
    const incomplete = message.code.trimEnd().endsWith(':');
    this.send({
      type: 'reply',
      id: message.id,
      ok: true,
      ...(incomplete ? { status: 'incomplete', indent: 4 } : { status: 'complete', indent: 0 }),
    });
  }

  private send(message: KernelMessage): void {
    if (!this.stopped) this.options.send(message);
  }

  private interrupt(id: string): void {
    const current = this.current;
    if (!current || id !== current.id) return;
    current.interrupted = true;
    current.wake();
  }

  private async runRequest(
    message: Extract<
      ContextBoundMessage,
      { type: Exclude<ContextBoundMessage['type'], 'interrupt' | 'is-complete' | 'input-reply'> }
    >,
  ): Promise<void> {
    if (this.stopped) return;
    if (message.type === 'state-save' || message.type === 'state-load') {
      this.send(message.type === 'state-save' ? this.saveState(message) : this.loadState(message));
      return;
    }
    if (message.type === 'execute') {
      await this.execute(message.id, message.code, message.stdin === true);
      return;
    }
    if (message.type === 'complete') {
      this.send({ type: 'reply', id: message.id, ok: true, ...this.complete(message.code, message.cursorPos) });
      return;
    }
    if (message.type === 'inspect') {
      this.send({ type: 'reply', id: message.id, ok: true, ...this.inspect(message.code, message.cursorPos) });
      return;
    }
    if (message.type === 'reset') {
      this.state.clear();
      this.executionCount = 0;
    }
    this.send({ type: 'reply', id: message.id, ok: true });
  }

  /**
   * The script's names written to the state directory: each that JSON keeps (a
   * function or a symbol is skipped with its type, as a socket is in Python).
   */
  private saveState(message: { id: string; path: string }): KernelMessage {
    const values: Record<string, unknown> = {};
    const skipped: SkippedName[] = [];
    for (const [name, value] of this.state) {
      const text = typeof value === 'bigint' ? undefined : JSON.stringify(value);
      if (text === undefined) skipped.push({ name, reason: typeof value });
      else values[name] = JSON.parse(text);
    }
    const state = { values, skipped, executionCount: this.executionCount };
    this.options.stateFiles.set(message.path, Buffer.from(`${STATE_MAGIC}${JSON.stringify(state)}`));
    return {
      type: 'reply',
      id: message.id,
      ok: true,
      saved: Object.keys(values),
      skipped,
      executionCount: this.executionCount,
    };
  }

  private loadState(message: { id: string; path: string }): KernelMessage {
    const file = this.options.stateFiles.get(message.path);
    if (!file) {
      return {
        type: 'reply',
        id: message.id,
        ok: false,
        error: { code: 'state-failed', message: `${message.path}: no such file` },
      };
    }
    const text = file.toString('utf8');
    if (!text.startsWith(STATE_MAGIC)) {
      return {
        type: 'reply',
        id: message.id,
        ok: false,
        error: { code: 'state-invalid', message: 'not a scripted state file' },
      };
    }
    const state = JSON.parse(text.slice(STATE_MAGIC.length)) as {
      values: Record<string, unknown>;
      skipped: SkippedName[];
      executionCount: number;
    };
    for (const [name, value] of Object.entries(state.values)) this.state.set(name, value);
    this.executionCount = state.executionCount;
    return {
      type: 'reply',
      id: message.id,
      ok: true,
      restored: Object.keys(state.values),
      skipped: state.skipped,
      executionCount: state.executionCount,
    };
  }

  /** Completion of the script's names before the cursor. */
  private complete(code: string, cursorPos: number): Completion {
    const cursor = Math.min(cursorPos || 0, code.length);
    const prefix = /\w*$/.exec(code.slice(0, cursor))?.[0] ?? '';
    const matches = [...this.state.keys()].filter((name) => name.startsWith(prefix)).sort();
    return { matches, cursorStart: cursor - prefix.length, cursorEnd: cursor, metadata: {} };
  }

  /** A name's value as its inspection. */
  private inspect(code: string, cursorPos: number): Inspection {
    const cursor = Math.min(cursorPos || 0, code.length);
    const prefix = /\w*$/.exec(code.slice(0, cursor))?.[0] ?? '';
    const name = prefix + (/^\w*/.exec(code.slice(cursor))?.[0] ?? '');
    if (!this.state.has(name)) return { found: false, data: {}, metadata: {} };
    return { found: true, data: { 'text/plain': String(this.state.get(name)) }, metadata: {} };
  }

  private async execute(id: string, code: string, stdin: boolean): Promise<void> {
    const current: CurrentRun = { id, interrupted: false, wake: () => undefined, stdin };
    this.current = current;
    this.executionCount += 1;
    let failed = false;
    let exitStatus: number | undefined;
    const fail = (name: string, value: string, traceback: string[] = []) => {
      failed = true;
      this.send({ type: 'error', id, name, value, traceback });
    };
    try {
      const steps = await this.options.run({
        code,
        executionId: id,
        executionCount: this.executionCount,
        state: this.state,
        files: this.options.files,
        kernelNumber: this.options.kernelNumber,
        contextId: this.options.contextId,
        language: this.options.language,
        cwd: this.options.cwd,
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
        if (step.type === 'exit-status') {
          exitStatus = step.status;
          break;
        }
        if (step.type === 'kernel-exit') {
          this.options.exit({
            code: step.code ?? null,
            signal: step.signal ?? (step.code === undefined ? 'SIGKILL' : null),
            outOfMemory: step.outOfMemory === true,
          });
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
    this.send({
      type: 'execution-end',
      id,
      status: failed ? 'error' : 'ok',
      executionCount: this.executionCount,
      outputTruncated: false,
      ...(exitStatus !== undefined ? { exitStatus } : {}),
    });
  }

  /** Does one step; false when the run stops here (interrupted). */
  private async perform(
    step: Exclude<ScriptedStep, { type: 'exit' | 'kernel-exit' | 'exit-status' }>,
    current: CurrentRun,
    fail: (name: string, value: string, traceback?: string[]) => void,
  ): Promise<boolean> {
    const { id } = current;
    switch (step.type) {
      case 'stdout':
      case 'stderr':
        this.send({ type: 'stream', id, name: step.type, text: step.text });
        return true;
      case 'result':
        // A result says which run it is the value of (IPython's Out[n]).
        this.send({
          type: 'result',
          id,
          data: step.data,
          metadata: step.metadata ?? {},
          executionCount: this.executionCount,
        });
        return true;
      case 'display':
        this.send({ type: 'display', id, data: step.data, metadata: step.metadata ?? {} });
        return true;
      case 'error':
        fail(step.name, step.value, step.traceback);
        return true;
      case 'send':
        if (step.from === 'kernel' && typeof step.line === 'object') {
          if (!this.stopped) this.options.forge(step.line);
        } else this.options.sendRaw(step.line);
        return true;
      case 'wait':
        return this.waitUntil(step.until, current, fail);
      case 'input':
        return this.askInput(step, current, fail);
      case 'sleep':
      case 'hang': {
        const ignoreInterrupt = step.type === 'hang' && step.ignoreInterrupt === true;
        if (step.type === 'hang' && step.stallRestart) this.stalled = true;
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

  /** An `input` step: false when it failed the run (no input given, or interrupted). */
  private async askInput(
    step: { prompt?: string; password?: boolean },
    current: CurrentRun,
    fail: (name: string, value: string, traceback?: string[]) => void,
  ): Promise<boolean> {
    if (!current.stdin) {
      fail('EOFError', 'EOF when reading a line');
      return false;
    }
    this.send({ type: 'input-request', id: current.id, prompt: step.prompt ?? '', password: step.password === true });
    const reply = await new Promise<InputReply | undefined>((resolve) => {
      current.answer = (message) => {
        if (message.id === current.id) resolve(message);
      };
      current.wake = () => resolve(undefined);
      if (current.interrupted) resolve(undefined);
    });
    current.answer = undefined;
    if (reply === undefined) {
      if (!this.stopped) fail('KeyboardInterrupt', '', ['KeyboardInterrupt']);
      return false;
    }
    if (typeof reply.value !== 'string') {
      fail('EOFError', 'no input was given');
      return false;
    }
    this.send({ type: 'stream', id: current.id, name: 'stdout', text: reply.value });
    return true;
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
