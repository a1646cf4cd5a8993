/**
 * The host's side of the kernel protocol on one sandbox: sends requests,
 * routes replies and execution events by id, and treats the kernel as
 * untrusted (bounded message size, validated fields).
 */

import type { Sandbox, SandboxExit } from '../backends/spec.js';
import { FileOperationError, ProtocolError, SandboxCrashedError, TimeoutError } from '../errors.js';
import { LineSplitter } from '../internal/line-splitter.js';
import type { MessageLimits } from './output-limits.js';

export interface KernelMessage {
  type: string;
  id?: unknown;
  [key: string]: unknown;
}

export interface ReadyMessage {
  protocolVersion: number;
  pid: number;
  python: string;
}

type Pending = { resolve: (message: KernelMessage) => void; reject: (error: Error) => void };

/**
 * Hears the messages of one execution, with the length of the line each came
 * in. A line too large to read arrives as `{ type: 'message-dropped' }`.
 */
export type ExecutionListener = (message: KernelMessage, messageBytes: number) => void;

export class KernelConnection {
  readonly ready: Promise<ReadyMessage>;
  /** Settles when the sandbox has ended, for whatever reason. */
  readonly exited: Promise<SandboxExit>;
  private readonly pending = new Map<string, Pending>();
  private readonly listeners = new Map<string, ExecutionListener>();
  private nextId = 1;
  private diagnostics = '';
  private dead = false;
  private exitInfo?: SandboxExit;
  /** Set when the kernel broke the protocol and was killed for it. */
  violationReason?: string;

  constructor(
    readonly sandbox: Sandbox,
    options: { messageLimits: MessageLimits; startTimeoutMs: number },
  ) {
    let markReady: (message: ReadyMessage) => void = () => undefined;
    let failReady: (error: Error) => void = () => undefined;
    this.ready = new Promise<ReadyMessage>((resolve, reject) => {
      markReady = resolve;
      failReady = reject;
    });
    this.ready.catch(() => undefined);

    const { executionMessageBytes, replyMessageBytes } = options.messageLimits;
    const onLine = (line: string, bytes: number) => {
      let message: KernelMessage;
      try {
        message = JSON.parse(line) as KernelMessage;
      } catch {
        return this.violation('the kernel sent a line that is not JSON');
      }
      if (typeof message !== 'object' || message === null || typeof message.type !== 'string') {
        return this.violation('the kernel sent a message without a type');
      }
      if (message.type === 'ready') {
        markReady({
          protocolVersion: Number(message.protocolVersion),
          pid: Number(message.pid),
          python: String(message.python),
        });
        return;
      }
      this.dispatch(message, bytes);
    };
    // Lines are short unless the host asked for something large (a file read).
    // An oversized line is dropped unread rather than treated as a violation:
    // the kernel cuts what it sends, so only code writing to its channel can
    // send one, and what it costs is a cut output, not the session's state.
    const splitter = new LineSplitter(
      () => (this.pending.size > 0 ? replyMessageBytes : executionMessageBytes),
      onLine,
      (bytes) => this.dropped(bytes),
    );
    sandbox.output.on('data', (chunk: Buffer) => splitter.push(chunk));
    sandbox.diagnostics.on('data', (chunk: Buffer) => {
      // Keep the tail only: enough to explain a failed start.
      this.diagnostics = (this.diagnostics + chunk.toString('utf8')).slice(-4000);
    });
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

  diagnosticsNote(): string {
    const text = this.diagnostics.trim();
    return text ? ` Sandbox said: ${text}` : '';
  }

  newId(): string {
    return String(this.nextId++);
  }

  send(message: Record<string, unknown>): void {
    if (this.dead) return;
    this.sandbox.input.write(`${JSON.stringify(message)}\n`);
  }

  /** Routes every message carrying `id` to `listener` until unsubscribed. */
  subscribe(id: string, listener: ExecutionListener): () => void {
    this.listeners.set(id, listener);
    return () => this.listeners.delete(id);
  }

  /** Sends a request and waits for its reply; a failed reply rejects with FileOperationError. */
  async request(message: Record<string, unknown>, timeoutMs: number): Promise<KernelMessage> {
    if (this.dead) throw new SandboxCrashedError('The sandbox has ended.');
    const id = this.newId();
    const reply = await new Promise<KernelMessage>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(new TimeoutError(`The kernel did not answer a ${String(message.type)} request within ${timeoutMs} ms.`));
      }, timeoutMs);
      this.pending.set(id, {
        resolve: (value) => {
          clearTimeout(timer);
          resolve(value);
        },
        reject: (error) => {
          clearTimeout(timer);
          reject(error);
        },
      });
      this.send({ ...message, id });
    });
    if (reply.ok !== true) {
      const error = (reply.error ?? {}) as { code?: unknown; message?: unknown };
      throw new FileOperationError(String(error.code ?? 'unknown'), String(error.message ?? 'the request failed'));
    }
    return reply;
  }

  private dispatch(message: KernelMessage, bytes: number): void {
    const id = typeof message.id === 'string' || typeof message.id === 'number' ? String(message.id) : undefined;
    if (id === undefined) return; // log lines and stray messages carry nothing we act on
    if (message.type === 'reply') {
      const pending = this.pending.get(id);
      if (pending) {
        this.pending.delete(id);
        pending.resolve(message);
      }
      return;
    }
    this.listeners.get(id)?.(message, bytes);
  }

  /** Which execution an unread line belonged to is unknown; the one running (if any) hears that output is missing. */
  private dropped(bytes: number): void {
    for (const listener of this.listeners.values()) listener({ type: 'message-dropped' }, bytes);
  }

  private violation(reason: string): void {
    // A kernel that breaks the protocol is not trusted with anything more.
    this.violationReason ??= reason;
    this.diagnostics += `\nprotocol violation: ${reason}`;
    void this.sandbox.kill();
  }

  async kill(): Promise<SandboxExit> {
    this.dead = true;
    return this.sandbox.kill();
  }
}

export function describeExit(exit: SandboxExit): string {
  switch (exit.reason) {
    case 'out-of-memory':
      return 'killed for using more memory than its limit';
    case 'cpu-limit':
      return 'killed for using more CPU time than its limit';
    case 'killed':
      return 'killed';
    default:
      return exit.signal ? `killed by ${exit.signal}` : `exit code ${exit.code}`;
  }
}
