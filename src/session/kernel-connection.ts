/**
 * The host's side of the kernel protocol on one sandbox: sends requests,
 * routes replies and execution events by id, and treats the kernel as
 * untrusted (bounded message size, validated fields).
 */

import type { Sandbox, SandboxExit } from '../backends/spec.js';
import { FileOperationError, KernelRequestError, ProtocolError, SandboxCrashedError, TimeoutError } from '../errors.js';
import { LineSplitter } from '../internal/line-splitter.js';
import {
  type ExecutionEvent,
  fileErrorReason,
  isFileRequest,
  type KernelCommand,
  type KernelRequest,
  parseKernelLine,
  parseReplyBody,
  type ReadyEvent,
  type ReplyEvent,
  type ReplyTo,
} from './kernel-protocol.js';
import type { MessageLimits } from './output-limits.js';

type Pending = { resolve: (reply: ReplyEvent) => void; reject: (error: Error) => void };

/** Made by the host, not the kernel: a line of the execution was too large to read and was dropped. */
export interface MessageDropped {
  type: 'message-dropped';
}

/**
 * Hears the events of one execution, with the length of the line each came
 * in (what the host-side caps count).
 */
export type ExecutionListener = (event: ExecutionEvent | MessageDropped, messageBytes: number) => void;

export class KernelConnection {
  readonly ready: Promise<ReadyEvent>;
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
        case 'ready':
          return markReady(event);
        case 'reply':
          return this.settle(event);
        default:
          this.listeners.get(event.id)?.(event, bytes);
      }
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

  /** Sends a message that has no reply: an execution (answered by its events) or an interrupt. */
  send(command: KernelCommand): void {
    this.write(command);
  }

  private write(message: (KernelCommand | KernelRequest) & { id: string }): void {
    if (this.dead) return;
    this.sandbox.input.write(`${JSON.stringify(message)}\n`);
  }

  /** Routes every message carrying `id` to `listener` until unsubscribed. */
  subscribe(id: string, listener: ExecutionListener): () => void {
    this.listeners.set(id, listener);
    return () => this.listeners.delete(id);
  }

  /**
   * Sends a request and waits for its reply. A failed file operation rejects
   * with FileOperationError (its `reason` the kernel's code), any other failed
   * request with KernelRequestError, and a reply this host cannot read (or a
   * request the kernel does not know) with ProtocolError.
   */
  async request<Request extends KernelRequest>(request: Request, timeoutMs: number): Promise<ReplyTo<Request>> {
    if (this.dead) throw new SandboxCrashedError('The sandbox has ended.');
    const id = this.newId();
    const reply = await new Promise<ReplyEvent>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(new TimeoutError(`The kernel did not answer a ${request.type} request within ${timeoutMs} ms.`));
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
      this.write({ ...request, id });
    });
    if (!reply.ok) throw requestFailure(request, reply.error);
    const body = parseReplyBody(request.type, reply.body);
    if ('invalid' in body) {
      throw new ProtocolError(`The kernel sent ${body.invalid}; restart the session if this persists.`);
    }
    return body as ReplyTo<Request>;
  }

  private settle(reply: ReplyEvent): void {
    const pending = this.pending.get(reply.id);
    if (!pending) return; // the request timed out: its answer has no one to go to
    this.pending.delete(reply.id);
    pending.resolve(reply);
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

/** The error a failed reply to `request` becomes. */
function requestFailure(request: KernelRequest, error: { code: string; message: string }): Error {
  if (error.code === 'unknown-request') {
    return new ProtocolError(
      `The kernel does not know the request ${request.type} (${error.message}); reinstall sandcell (\`npm run setup\`).`,
    );
  }
  if (isFileRequest(request)) return new FileOperationError(fileErrorReason(error.code), error.message);
  return new KernelRequestError(request.type, error.code, error.message);
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
