/**
 * One Jupyter kernel: a sandcell session (through the registry, so the key's
 * limits, rate and metrics apply) whose kernel is the default context of the
 * kernelspec's language. It takes requests from every socket attached to it,
 * runs shell requests strictly in order, answers each socket that asked, and
 * publishes iopub (status, execute_input, outputs) to every socket.
 *
 * Restart is the session's `restartContext` (files stay) under a new
 * `header.session`; interrupt aborts the running execution (its state is kept;
 * the session restarts the context only if the code ignores it). The execution
 * count is this door's own and starts again at 1 with the kernel. A cell's time
 * limit is the server's `--max-execution-time`.
 */
import { randomUUID } from 'node:crypto';
import type { ExecutionResult, InputRequest } from '../../session/execution.js';
import type { ManagedSession } from '../core/managed-session.js';
import type { SessionRegistry } from '../core/registry.js';
import { jupyterLimitText } from './jupyter-errors.js';
import { KernelHistory } from './kernel-history.js';
import { answerShellRequest, type ShellKernel } from './kernel-requests.js';
import type { KernelSpecDefinition } from './kernel-specs.js';
import { type JupyterMessage, type MessageHeader, reply, type Sender } from './wire-message.js';

export type ExecutionState = 'starting' | 'idle' | 'busy' | 'restarting' | 'dead';

/** A client's end of the channels socket: where replies to its requests and every iopub message go. */
export interface KernelSocket {
  send(message: JupyterMessage): void;
  close(code: number, reason: string): void;
}

export class JupyterKernel implements ShellKernel {
  readonly id = randomUUID();
  readonly sockets = new Set<KernelSocket>();
  readonly history = new KernelHistory();
  executionState: ExecutionState = 'idle';
  lastActivity = new Date();
  sender: Sender;
  /** Kernel incarnations so far: history entries are numbered by it, as IPython numbers its sessions. */
  incarnation = 1;
  executionCount = 0;
  private shellQueue: Promise<void> = Promise.resolve();
  private received = 0;
  /** After an error with `stop_on_error`, execute requests received up to this one are aborted. */
  private abortThrough = 0;
  private running?: AbortController;
  /** The `input()` waiting for the client that ran the code (allow_stdin). */
  private pendingInput?: { socket: KernelSocket; resolve(value: string): void; reject(error: Error): void };

  constructor(
    readonly spec: KernelSpecDefinition,
    readonly entry: ManagedSession,
    /** The session's context this kernel runs in: the language's default one (its id is the language). */
    readonly contextId: string,
    private readonly registry: SessionRegistry,
    /** sandcell's version, which kernel_info_reply gives as the implementation's. */
    readonly serverVersion: string,
  ) {
    this.sender = { session: randomUUID(), username: 'sandcell' };
  }

  get dead(): boolean {
    return this.executionState === 'dead' || this.entry.session.closed;
  }

  /** A frame from one of the kernel's sockets. */
  receive(socket: KernelSocket, message: JupyterMessage): void {
    this.lastActivity = new Date();
    const type = message.header.msg_type;
    if (message.channel === 'stdin') {
      if (type === 'input_reply' && this.pendingInput?.socket === socket) {
        const value = message.content.value;
        this.pendingInput.resolve(typeof value === 'string' ? value : '');
        this.pendingInput = undefined;
      }
      return;
    }
    if (message.channel === 'control') {
      void this.control(socket, message);
      return;
    }
    // Replies to requests the kernel never makes (input_reply) and comm traffic need no answer.
    if (message.channel !== 'shell' || !type.endsWith('_request')) return;
    const sequence = ++this.received;
    this.shellQueue = this.shellQueue.then(() => this.shell(socket, message, sequence)).catch(() => undefined);
  }

  /**
   * A new socket first hears the kernel's state, with no parent. Jupyter Server's gateway client
   * (1.23) drops a browser's first request when it comes before its own socket to the gateway is
   * made, and the classic Notebook would then show the kernel busy until a reply that never comes.
   */
  attach(socket: KernelSocket): void {
    this.sockets.add(socket);
    const state = this.executionState === 'restarting' ? 'busy' : this.executionState;
    socket.send(reply(this.sender, 'iopub', 'status', { execution_state: state }));
  }

  /** A socket closed: an `input()` waiting for it fails, as reading a closed stdin does. */
  detach(socket: KernelSocket): void {
    this.sockets.delete(socket);
    if (this.pendingInput?.socket === socket) {
      this.pendingInput.reject(new Error('The client that was asked for input disconnected.'));
      this.pendingInput = undefined;
    }
  }

  publish(message: JupyterMessage): void {
    for (const socket of this.sockets) socket.send(message);
  }

  status(state: ExecutionState, parent: Partial<MessageHeader> = {}): void {
    this.executionState = state;
    this.publish(reply(this.sender, 'iopub', 'status', { execution_state: state }, parent));
  }

  /** Interrupts the running execution (KeyboardInterrupt); the kernel's state stays. */
  interrupt(): void {
    this.running?.abort();
  }

  /** A fresh kernel of the same language: a new `header.session`, the count from 1; files stay. */
  async restart(): Promise<void> {
    // Not published: clients read a `restarting` status as a kernel that died and is being auto-restarted.
    this.executionState = 'restarting';
    this.interrupt();
    await this.entry.session.restartContext(this.contextId);
    this.sender = { session: randomUUID(), username: 'sandcell' };
    this.incarnation++;
    this.executionCount = 0;
    this.abortThrough = this.received;
    this.status('starting');
    this.status('idle');
  }

  /** Ends the kernel: its sockets close; the caller removes the session. */
  shutDown(): void {
    if (this.executionState !== 'dead') this.status('dead');
    this.executionState = 'dead';
    for (const socket of this.sockets) socket.close(1001, 'kernel shut down');
    this.sockets.clear();
  }

  /** Asks the client that ran the code; an interrupt or restart ends the wait with the run. */
  private askInput(socket: KernelSocket, parent: MessageHeader, request: InputRequest): Promise<string> {
    return new Promise((resolve, reject) => {
      this.pendingInput?.reject(new Error('Another input request replaced this one.'));
      this.pendingInput = { socket, resolve, reject };
      socket.send(
        reply(this.sender, 'stdin', 'input_request', { prompt: request.prompt, password: request.password }, parent),
      );
    });
  }

  private async control(socket: KernelSocket, message: JupyterMessage): Promise<void> {
    const type = message.header.msg_type;
    const answer = (msgType: string, content: Record<string, unknown>) =>
      socket.send(reply(this.sender, 'control', msgType, content, message.header));
    if (type === 'interrupt_request') {
      this.interrupt();
      answer('interrupt_reply', { status: 'ok' });
    } else if (type === 'shutdown_request') {
      const restart = message.content.restart === true;
      if (restart) await this.restart().catch(() => undefined);
      answer('shutdown_reply', { status: 'ok', restart });
    } else if (type === 'kernel_info_request') {
      const content = await answerShellRequest(this, message);
      if (content) answer('kernel_info_reply', content);
    } else if (type.endsWith('_request')) {
      answer(type.replace(/_request$/, '_reply'), unknownRequest(type));
    }
  }

  private async shell(socket: KernelSocket, message: JupyterMessage, sequence: number): Promise<void> {
    const type = message.header.msg_type;
    const parent = message.header;
    const replyType = type.replace(/_request$/, '_reply');
    const answer = (content: Record<string, unknown>, metadata: Record<string, unknown> = {}) =>
      socket.send(reply(this.sender, 'shell', replyType, content, parent, metadata));
    if (this.dead) return;
    this.status('busy', parent);
    try {
      if (type === 'execute_request') {
        if (sequence <= this.abortThrough) answer({ status: 'aborted' }, { status: 'aborted' });
        else await this.execute(socket, message, answer);
      } else {
        answer((await answerShellRequest(this, message)) ?? unknownRequest(type));
      }
    } catch (error) {
      answer(errorContent('KernelError', (error as Error).message));
    } finally {
      if (!this.dead) this.status('idle', parent);
    }
  }

  private async execute(
    socket: KernelSocket,
    message: JupyterMessage,
    answer: (content: Record<string, unknown>, metadata?: Record<string, unknown>) => void,
  ): Promise<void> {
    const parent = message.header;
    const { content } = message;
    const code = typeof content.code === 'string' ? content.code : '';
    const silent = content.silent === true;
    const storeHistory = !silent && content.store_history !== false;
    if (storeHistory) this.executionCount++;
    const count = this.executionCount;
    const emit = (msgType: string, body: Record<string, unknown>, metadata: Record<string, unknown> = {}) => {
      if (!silent) this.publish(reply(this.sender, 'iopub', msgType, body, parent, metadata));
    };
    emit('execute_input', { code, execution_count: count });
    if (storeHistory) this.history.add({ session: this.incarnation, line: count, input: code });
    const stopOnError = content.stop_on_error !== false;
    const controller = new AbortController();
    this.running = controller;
    try {
      const execution = await this.registry.execute(this.entry, code, {
        context: this.contextId,
        signal: controller.signal,
        timeoutMs: Number.POSITIVE_INFINITY,
        onStdout: (text) => emit('stream', { name: 'stdout', text }),
        onStderr: (text) => emit('stream', { name: 'stderr', text }),
        onResult: (result) => emit(...presentResult(result, count)),
        // Without allow_stdin (Open WebUI, AG2) input() raises at once, as in any sandcell run.
        ...(content.allow_stdin === true
          ? { onInput: (request: InputRequest) => this.askInput(socket, parent, request) }
          : {}),
      });
      if (execution.error) {
        const { name, value, traceback } = execution.error;
        const failure = errorContent(name, value, traceback.length > 0 ? traceback : [`${name}: ${value}`]);
        emit('error', failure);
        answer({ ...failure, execution_count: count }, { status: 'error' });
        if (stopOnError) this.abortThrough = Math.max(this.abortThrough, this.received);
        return;
      }
      answer({ status: 'ok', execution_count: count, user_expressions: {}, payload: [] }, { status: 'ok' });
    } catch (error) {
      // Refused by a limit, or the session went away: the client still gets its error and reply.
      const failure = errorContent(errorName(error), jupyterLimitText(error) ?? (error as Error).message);
      emit('error', failure);
      answer({ ...failure, execution_count: count }, { status: 'error' });
      if (stopOnError) this.abortThrough = Math.max(this.abortThrough, this.received);
    } finally {
      if (this.running === controller) this.running = undefined;
      this.lastActivity = new Date();
    }
  }
}

function presentResult(
  result: ExecutionResult,
  count: number,
): [string, Record<string, unknown>, Record<string, unknown>?] {
  if (result.type === 'execute_result') {
    return ['execute_result', { data: result.data, metadata: result.metadata, execution_count: count }];
  }
  return ['display_data', { data: result.data, metadata: result.metadata, transient: {} }];
}

export function errorContent(name: string, value: string, traceback: string[] = [`${name}: ${value}`]) {
  return { status: 'error', ename: name, evalue: value, traceback };
}

function unknownRequest(type: string) {
  return errorContent('UnknownRequest', `sandcell's kernels do not answer ${type}.`);
}

function errorName(error: unknown): string {
  const name = error instanceof Error ? error.constructor.name : 'Error';
  return name.replace(/Error$/, '') || 'Error';
}
