/**
 * The host's side of the sandbox protocol on one sandbox: sends requests,
 * routes replies by id, execution events by id and context, command events by
 * command id, and context exits to whoever listens; and treats everything the
 * sandbox sends as untrusted (bounded line size, validated fields, a kernel
 * cannot reach another context's execution or a request sent elsewhere).
 */

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
} from './kernel-protocol.js';
import { answeringContext, requestFailure } from './kernel-replies.js';
import type { MessageLimits } from './output-limits.js';
import { describeExit } from './state-loss.js';

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
export type CommandListener = (event: CommandEvent | ReplyEvent) => void;

export class KernelConnection {
  readonly ready: Promise<ReadyEvent>;
  /** Settles when the sandbox has ended, for whatever reason. */
  readonly exited: Promise<SandboxExit>;
  private readonly pending = new Map<string, Pending>();
  private readonly listeners = new Map<string, { context: string; listener: ExecutionListener }>();
  private readonly commandListeners = new Map<string, CommandListener>();
  private readonly contextExitListeners = new Set<(event: ContextExitEvent) => void>();
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

  constructor(
    readonly sandbox: Sandbox,
    options: { messageLimits: MessageLimits; startTimeoutMs: number },
  ) {
    let markReady: (message: ReadyEvent) => void = () => undefined;
    let failReady: (error: Error) => void = () => undefined;
    this.ready = new Promise<ReadyEvent>((resolve, reject) => {
      markReady = resolve;
      failReady = reject;
    });
    this.ready.catch(() => undefined);

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
    sandbox.output.on('data', (chunk: Buffer) => this.splitter.push(chunk));
    sandbox.diagnostics.on('data', (chunk: Buffer) => this.keepDiagnostics(chunk.toString('utf8')));
    // Writing to a dead sandbox must not crash the host.
    sandbox.input.on('error', () => undefined);

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

    this.exited = sandbox.exited.then((exit) => {
      this.dead = true;
      this.exitInfo = exit;
      clearTimeout(timer);
      failReady(
        new ProtocolError(
          `The sandbox exited before the kernel was ready (${describeExit(exit)}).${this.diagnosticsNote()}`,
        ),
      );
      const error = new SandboxCrashedError(`The sandbox ended (${describeExit(exit)}).`);
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

  /** The languages whose runtime this sandbox has (language → version or null), once it is ready. */
  get languages(): Record<string, string | null> {
    return this.readyEvent?.languages ?? {};
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

  private write(message: (KernelInstruction | KernelRequest) & { id: string }, frame?: Uint8Array): void {
    if (this.dead) return;
    this.sandbox.input.write(`${JSON.stringify(message)}\n`);
    if (frame && frame.byteLength > 0) this.sandbox.input.write(frame);
  }

  /** Routes every execution event carrying `id` from `context`'s kernel to `listener` until unsubscribed. */
  subscribe(id: string, context: string, listener: ExecutionListener): () => void {
    this.listeners.set(id, { context, listener });
    return () => this.listeners.delete(id);
  }

  /** Routes the events of command `id` to `listener` until unsubscribed. */
  subscribeCommand(id: string, listener: CommandListener): () => void {
    this.commandListeners.set(id, listener);
    return () => this.commandListeners.delete(id);
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
   * bytes a request's line announces (a state-write's `bytes`), sent after it.
   */
  async request<Request extends KernelRequest>(
    request: Request,
    timeoutMs: number,
    frame?: Uint8Array,
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
    this.splitter.expectBytes(bytes, (data) => this.settle({ ...reply, body: { ...reply.body, data } }));
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

  async kill(): Promise<SandboxExit> {
    this.dead = true;
    return this.sandbox.kill();
  }
}
