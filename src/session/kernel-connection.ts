/**
 * The host's side of the sandbox protocol on one sandbox: sends requests,
 * routes replies by id, execution events by id and context, command events by
 * command id, and context exits to whoever listens; and treats everything the
 * sandbox sends as untrusted (bounded line size, validated fields, a kernel
 * cannot reach another context's execution or a request sent elsewhere).
 *
 * Nothing sent to a sandbox waits forever (issue 44): `exited` settles however
 * the sandbox goes — its backend reports the end, its channel closes (and the
 * backend's report does not follow in time), or it goes quiet while work is
 * outstanding and does not answer a liveness check (its processes stopped or
 * stuck), when it is killed and counted as lost (`lostReason`). A kill is
 * bounded too. Pending requests then fail with SandboxCrashedError, and the
 * session ends what ran in it (session-sandbox.ts).
 */

import { performance } from 'node:perf_hooks';
import type { Sandbox, SandboxExit } from '../backends/spec.js';
import { ProtocolError, SandboxCrashedError, TimeoutError } from '../errors.js';
import { LineSplitter } from '../internal/line-splitter.js';
import { FRAME_MAX_BYTES } from './kernel-messages.js';
import {
  type CommandEvent,
  type ContextExitEvent,
  type ExecutionEvent,
  type KernelInstruction,
  type KernelRequest,
  parseKernelLine,
  parseReplyBody,
  type ReadyEvent,
  type ReplyEvent,
  type ReplyTo,
  type TerminalEvent,
} from './kernel-protocol.js';
import { answeringContext, requestFailure } from './kernel-replies.js';
import type { MessageLimits } from './output-limits.js';
import { describeExit } from './state-loss.js';

/** How a connection watches a sandbox that has work outstanding. */
export interface LivenessOptions {
  /** Quiet for this long with work outstanding: the supervisor is asked whether it is there. */
  quietMs: number;
  /** No byte at all this long after that question: the sandbox is lost, and killed. */
  answerMs: number;
}

/** After the channel closed, how long the backend may take to report the sandbox's end before it is taken as lost. */
const EXIT_AFTER_CLOSE_MS = 10_000;
/** How long a kill may take to be confirmed before the sandbox is taken for ended anyway. */
const KILL_CONFIRM_MS = 10_000;

interface Pending {
  /** The context whose kernel answers; undefined when the supervisor itself does. */
  context?: string;
  resolve: (reply: ReplyEvent) => void;
  reject: (error: Error) => void;
}

/** Made by the host, not the kernel: a line of the execution was too large to read and was dropped. */
export interface MessageDropped {
  type: 'message-dropped';
}

/**
 * Hears the events of one execution, with the length of the line each came
 * in (what the host-side caps count).
 */
export type ExecutionListener = (event: ExecutionEvent | MessageDropped, messageBytes: number) => void;

/** Hears one command's events, and a failed reply to its start. */
/** A command's or a terminal's events (their ids never meet: `command-N`, `terminal-N`). */
export type CommandListener = (event: CommandEvent | TerminalEvent | ReplyEvent) => void;

export class KernelConnection {
  readonly ready: Promise<ReadyEvent>;
  /** Settles when the sandbox has ended, for whatever reason. */
  readonly exited: Promise<SandboxExit>;
  private readonly pending = new Map<string, Pending>();
  private readonly listeners = new Map<string, { context: string; listener: ExecutionListener }>();
  private readonly commandListeners = new Map<string, CommandListener>();
  private readonly contextExitListeners = new Set<(event: ContextExitEvent) => void>();
  private readonly stoppedListeners = new Set<(context: string) => void>();
  /** Settles `exited`, once: with the backend's report, or the one made when the sandbox was lost. */
  private settleExit: (exit: SandboxExit) => void = () => undefined;
  /** When the sandbox last sent anything (performance.now()). */
  private lastHeard = performance.now();
  private livenessTimer?: NodeJS.Timeout;
  /** When the liveness check last ran: a check much later than its interval means this process itself stalled. */
  private lastCheck = 0;
  /** When the liveness question now unanswered was asked. */
  private askedAt?: number;
  /** Set when the sandbox was lost (it went quiet, or its end was never reported), in words for its runs' end. */
  lostReason?: string;
  private readyEvent?: ReadyEvent;
  private nextId = 1;
  private diagnostics = '';
  private dead = false;
  private exitInfo?: SandboxExit;
  /** Set when the sandbox broke the protocol and was killed for it. */
  violationReason?: string;
  /** OOM kills already blamed for a context's end. */
  private oomKillsExplained = 0;
  private readonly splitter: LineSplitter;

  private readonly liveness: LivenessOptions;

  constructor(
    readonly sandbox: Sandbox,
    options: {
      messageLimits: MessageLimits;
      startTimeoutMs: number;
      liveness: LivenessOptions;
      /** A sandbox restored from a checkpoint: its supervisor announced itself before (this), and goes on. */
      restored?: ReadyEvent;
    },
  ) {
    this.liveness = options.liveness;
    let markReady: (message: ReadyEvent) => void = () => undefined;
    let failReady: (error: Error) => void = () => undefined;
    this.ready = new Promise<ReadyEvent>((resolve, reject) => {
      markReady = resolve;
      failReady = reject;
    });
    this.ready.catch(() => undefined);
    if (options.restored) {
      this.readyEvent = options.restored;
      markReady(options.restored);
    }

    const { executionMessageBytes, replyMessageBytes } = options.messageLimits;
    const onLine = (line: string, bytes: number) => {
      const event = parseKernelLine(line);
      switch (event.type) {
        case 'violation':
          return this.violation(event.reason);
        case 'ignored':
          return;
        case 'log':
          return this.note(`log: ${event.message}`);
        case 'ready':
          this.readyEvent = event;
          return markReady(event);
        case 'reply':
          return this.frameOrSettle(event);
        case 'context-exit':
          for (const listener of this.contextExitListeners) listener(event);
          return;
        case 'command-started':
        case 'command-output':
        case 'command-end':
        case 'terminal-started':
        case 'terminal-output':
        case 'terminal-end':
          return this.commandListeners.get(event.id)?.(event);
        default: {
          const subscription = this.listeners.get(event.id);
          // The context is the kernel's, added by the supervisor: another context's kernel cannot reach this run.
          if (!subscription || (event.context !== undefined && event.context !== subscription.context)) return;
          subscription.listener(event, bytes);
        }
      }
    };
    // Lines are short unless the host asked for something large (a file read).
    // An oversized line is dropped unread rather than treated as a violation:
    // the kernel cuts what it sends, so only code writing to its channel can
    // send one, and what it costs is a cut output, not the session's state.
    this.splitter = new LineSplitter(
      () => (this.pending.size > 0 ? replyMessageBytes : executionMessageBytes),
      onLine,
      (bytes) => this.dropped(bytes),
    );
    sandbox.output.on('data', (chunk: Buffer) => {
      this.lastHeard = performance.now();
      this.askedAt = undefined;
      this.splitter.push(chunk);
    });
    sandbox.diagnostics.on('data', (chunk: Buffer) => this.keepDiagnostics(chunk.toString('utf8')));
    // Writing to a dead sandbox must not crash the host.
    sandbox.input.on('error', () => undefined);
    sandbox.output.on('error', () => undefined);
    // A closed channel is an ended sandbox: its backend's report should follow at once; if it does not, it is lost.
    sandbox.output.once('close', () => {
      const timer = setTimeout(
        () => this.lose(`its channel closed and its end was not reported within ${EXIT_AFTER_CLOSE_MS / 1000} s`),
        EXIT_AFTER_CLOSE_MS,
      );
      void this.exited.then(() => clearTimeout(timer));
    });

    const timer = setTimeout(() => {
      failReady(
        new TimeoutError(`The kernel did not start within ${options.startTimeoutMs} ms.${this.diagnosticsNote()}`),
      );
      void sandbox.kill();
    }, options.startTimeoutMs);
    this.ready.then(
      () => clearTimeout(timer),
      () => clearTimeout(timer),
    );

    const reported = new Promise<SandboxExit>((resolve) => {
      this.settleExit = resolve;
    });
    sandbox.exited.then(
      (exit) => this.settleExit(exit),
      () => this.settleExit({ code: null, signal: null }),
    );
    this.exited = reported.then((exit) => {
      this.dead = true;
      this.stopWatching();
      this.exitInfo = exit;
      clearTimeout(timer);
      failReady(
        new ProtocolError(
          `The sandbox exited before the kernel was ready (${describeExit(exit)}).${this.diagnosticsNote()}`,
        ),
      );
      const error = new SandboxCrashedError(
        this.lostReason ? `The sandbox was lost: ${this.lostReason}.` : `The sandbox ended (${describeExit(exit)}).`,
      );
      for (const pending of this.pending.values()) pending.reject(error);
      this.pending.clear();
      return exit;
    });
  }

  get alive(): boolean {
    return !this.dead;
  }

  get exit(): SandboxExit | undefined {
    return this.exitInfo;
  }

  /** What the supervisor said when it started (a checkpoint keeps it: a restored one does not say it again). */
  get announced(): ReadyEvent | undefined {
    return this.readyEvent;
  }

  /** The languages whose runtime this sandbox has (language → version or null), once it is ready. */
  get languages(): Record<string, string | null> {
    return this.readyEvent?.languages ?? {};
  }

  /** Whether its supervisor streams a Python context's state through a pipe (state-pipe), once it is ready. */
  get statePipes(): boolean {
    return this.readyEvent?.statePipes === true;
  }

  /**
   * Whether the OOM killer acted in this sandbox since the last time this was
   * asked (where the backend counts it): what explains a kernel's own end.
   */
  async outOfMemorySinceLastAsked(): Promise<boolean> {
    const kills = await this.sandbox.oomKills?.().catch(() => undefined);
    if (kills === undefined || kills <= this.oomKillsExplained) return false;
    this.oomKillsExplained = kills;
    return true;
  }

  /** Keeps the tail of the sandbox's diagnostics only: enough to explain a failed start. */
  private keepDiagnostics(text: string): void {
    this.diagnostics = (this.diagnostics + text).slice(-4000);
  }

  /** A line of the host's own or the supervisor's (`log`) among the diagnostics. */
  private note(line: string): void {
    this.keepDiagnostics(`${this.diagnostics.endsWith('\n') || !this.diagnostics ? '' : '\n'}${line}\n`);
  }

  diagnosticsNote(): string {
    const text = this.diagnostics.trim();
    return text ? ` Sandbox said: ${text}` : '';
  }

  newId(): string {
    return String(this.nextId++);
  }

  /** Sends a message that has no reply: an execution or a command (answered by their events), an interrupt, … */
  send(instruction: KernelInstruction): void {
    this.write(instruction);
  }

  private write(
    message: (KernelInstruction | KernelRequest) & { id: string },
    frame?: Uint8Array | readonly Uint8Array[],
  ): void {
    if (this.dead) return;
    this.sandbox.input.write(`${JSON.stringify(message)}\n`);
    for (const part of frame instanceof Uint8Array ? [frame] : (frame ?? [])) {
      if (part.byteLength > 0) this.sandbox.input.write(part);
    }
  }

  /** Routes every execution event carrying `id` from `context`'s kernel to `listener` until unsubscribed. */
  subscribe(id: string, context: string, listener: ExecutionListener): () => void {
    this.listeners.set(id, { context, listener });
    this.watch();
    return () => this.listeners.delete(id);
  }

  /** Routes the events of command `id` to `listener` until unsubscribed. */
  subscribeCommand(id: string, listener: CommandListener): () => void {
    this.commandListeners.set(id, listener);
    this.watch();
    return () => this.commandListeners.delete(id);
  }

  /** Calls `listener` with each context whose kernel a liveness check found stopped while work was outstanding. */
  onContextStopped(listener: (context: string) => void): () => void {
    this.stoppedListeners.add(listener);
    return () => this.stoppedListeners.delete(listener);
  }

  /** Calls `listener` with every context whose kernel ended on its own. Returns the function that stops it. */
  onContextExit(listener: (event: ContextExitEvent) => void): () => void {
    this.contextExitListeners.add(listener);
    return () => this.contextExitListeners.delete(listener);
  }

  /**
   * Sends a request and waits for its reply. A failed file operation rejects
   * with FileOperationError (its `reason` the kernel's code), any other failed
   * request with KernelRequestError, and a reply this host cannot read (or a
   * request the kernel does not know) with ProtocolError. `frame`: the raw
   * bytes a request's line announces (a state-write's `bytes`), sent after it
   * (given in pieces, they are written one after the other).
   */
  async request<Request extends KernelRequest>(
    request: Request,
    timeoutMs: number,
    frame?: Uint8Array | readonly Uint8Array[],
  ): Promise<ReplyTo<Request>> {
    if (this.dead) throw new SandboxCrashedError('The sandbox has ended.');
    const id = this.newId();
    const reply = await new Promise<ReplyEvent>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(new TimeoutError(`The kernel did not answer a ${request.type} request within ${timeoutMs} ms.`));
      }, timeoutMs);
      this.pending.set(id, {
        context: answeringContext(request),
        resolve: (value) => {
          clearTimeout(timer);
          resolve(value);
        },
        reject: (error) => {
          clearTimeout(timer);
          reject(error);
        },
      });
      this.watch();
      this.write({ ...request, id }, frame);
    });
    if (!reply.ok) throw requestFailure(request, reply.error);
    const body = parseReplyBody(request.type, reply.body, request);
    if ('invalid' in body) {
      throw new ProtocolError(`The kernel sent ${body.invalid}; restart the session if this persists.`);
    }
    return body as ReplyTo<Request>;
  }

  /**
   * A reply of the supervisor's own (no context: a kernel's lines always carry
   * theirs) announcing `bytes` is followed by that many raw bytes, its `data`
   * (a snapshot's chunk). They are taken whatever became of the request, so
   * the channel stays in step; a frame out of bounds is a violation.
   */
  private frameOrSettle(reply: ReplyEvent): void {
    if (!reply.ok || reply.context !== undefined || !('bytes' in reply.body)) {
      this.settle(reply);
      return;
    }
    const { bytes } = reply.body;
    if (typeof bytes !== 'number' || !Number.isSafeInteger(bytes) || bytes < 0 || bytes > FRAME_MAX_BYTES) {
      this.violation(`a reply announced ${String(bytes).slice(0, 40)} raw bytes`);
      return;
    }
    this.splitter.expectBytes(bytes, (parts) => this.settle({ ...reply, body: { ...reply.body, parts } }));
  }

  private settle(reply: ReplyEvent): void {
    const pending = this.pending.get(reply.id);
    if (!pending) {
      // Not a request: a command's start the supervisor refused, or an answer whose request timed out.
      this.commandListeners.get(reply.id)?.(reply);
      return;
    }
    // A kernel answers only what was sent to its context; the supervisor (no context) answers anything.
    if (reply.context !== undefined && reply.context !== pending.context) return;
    this.pending.delete(reply.id);
    pending.resolve(reply);
  }

  /** Which execution an unread line belonged to is unknown; every one running hears that output is missing. */
  private dropped(bytes: number): void {
    for (const { listener } of this.listeners.values()) listener({ type: 'message-dropped' }, bytes);
  }

  private violation(reason: string): void {
    // A kernel that breaks the protocol is not trusted with anything more.
    this.violationReason ??= reason;
    this.note(`protocol violation: ${reason}`);
    void this.sandbox.kill();
  }

  /**
   * Kills the sandbox; resolves with its end, or, when the backend does not
   * confirm it in time, with the end this connection records for it then.
   */
  async kill(): Promise<SandboxExit> {
    this.dead = true;
    const confirmed = this.sandbox.kill().catch(() => ({ code: null, signal: null }) as SandboxExit);
    let timer: NodeJS.Timeout | undefined;
    const unconfirmed = new Promise<SandboxExit>((resolve) => {
      timer = setTimeout(() => {
        this.lostReason ??= `it was killed and its end was not confirmed within ${KILL_CONFIRM_MS / 1000} s`;
        this.settleExit({ code: null, signal: null, reason: 'killed' });
        resolve(this.exitInfo ?? { code: null, signal: null, reason: 'killed' });
      }, KILL_CONFIRM_MS);
    });
    return Promise.race([confirmed, unconfirmed]).finally(() => clearTimeout(timer));
  }

  /** Whether anything sent to the sandbox still waits for its answer. */
  private get outstanding(): boolean {
    return this.pending.size > 0 || this.listeners.size > 0 || this.commandListeners.size > 0;
  }

  /** Watches the channel while work is outstanding (the check stops itself when none is). */
  private watch(): void {
    if (this.livenessTimer || this.dead) return;
    // Quiet counts from when the work began: an idle sandbox has nothing to say.
    this.lastHeard = performance.now();
    this.lastCheck = this.lastHeard;
    this.livenessTimer = setInterval(() => this.checkLiveness(), this.checkEveryMs);
  }

  private get checkEveryMs(): number {
    return Math.max(50, Math.min(this.liveness.quietMs, this.liveness.answerMs) / 4);
  }

  private stopWatching(): void {
    clearInterval(this.livenessTimer);
    this.livenessTimer = undefined;
    this.askedAt = undefined;
  }

  private checkLiveness(): void {
    if (this.dead || !this.outstanding) {
      this.stopWatching();
      return;
    }
    const now = performance.now();
    const { quietMs, answerMs } = this.liveness;
    const stalled = now - this.lastCheck > 4 * this.checkEveryMs;
    this.lastCheck = now;
    if (stalled) {
      // This process did not run for a while (its own event loop was blocked): what the sandbox sent meanwhile
      // is still unread, so its silence proves nothing yet. Ask (again) from now.
      if (this.askedAt !== undefined) this.askedAt = now;
      return;
    }
    if (this.askedAt !== undefined) {
      if (now - this.askedAt >= answerMs) {
        this.lose(
          `it sent nothing for ${Math.round((now - this.lastHeard) / 1000)} s while work was outstanding and did not answer a liveness check within ${answerMs / 1000} s (its processes were stopped or stuck), so it was killed`,
        );
      }
      return;
    }
    if (now - this.lastHeard < quietMs) return;
    this.askedAt = now;
    this.request({ type: 'liveness' }, answerMs).then(
      ({ stopped }) => {
        for (const context of stopped) {
          if ([...this.listeners.values()].some((subscription) => subscription.context === context)) {
            for (const listener of this.stoppedListeners) listener(context);
          }
        }
      },
      // Any answer, even a refusal from a supervisor that does not know the check, says it is there.
      () => undefined,
    );
  }

  /**
   * The sandbox is gone as far as this host can tell, though its backend has
   * not said so: it is killed, and its end recorded now whatever the kill does.
   */
  private lose(reason: string): void {
    if (this.exitInfo || this.lostReason) return;
    this.lostReason = reason;
    this.note(`sandbox lost: ${reason}`);
    void this.kill().then((exit) => this.settleExit(exit));
  }
}
