/**
 * One Jupyter kernel: a sandcell session (through the registry, so the key's
 * limits, rate and metrics apply) whose kernel is the default context of the
 * kernelspec's language. It takes requests from every socket attached to it,
 * runs shell requests strictly in order, answers each socket that asked, and
 * publishes iopub (status, execute_input, outputs) to every socket.
 *
 * Its id is its session's id. When the server pauses the session (idle, or a
 * shutdown), the kernel is dormant: still listed, idle, its sockets open; the
 * next request that needs the kernel itself (execute, completion, inspection,
 * restart, a new socket) resumes the session through the registry and rebinds
 * the kernel to it, and the first execution after says on stderr what did not
 * come back. A session gone for good (deleted, lost) ends the kernel.
 *
 * Restart is the session's `restartContext` (files stay) under a new
 * `header.session`; interrupt aborts the running execution (its state is kept;
 * the session restarts the context only if the code ignores it). The execution
 * count is this door's own: it starts again at 1 with the kernel, and is kept
 * across a pause (kernel-keep.ts). A cell's time
 * limit is the server's `--max-execution-time`.
 */
import { randomUUID } from 'node:crypto';
import type { ExecutionResult, InputRequest } from '../../session/execution.js';
import { SessionLostError, SnapshotInvalidError, SnapshotNotFoundError } from '../../snapshots/snapshot-errors.js';
import type { Owner } from '../core/auth.js';
import { SessionNotFoundError } from '../core/errors.js';
import type { ManagedSession } from '../core/managed-session.js';
import type { SessionRegistry } from '../core/registry.js';
import { jupyterLimitText, KernelGoneError } from './jupyter-errors.js';
import { KernelHistory } from './kernel-history.js';
import { type KernelKeep, resumeNotice } from './kernel-keep.js';
import { answerShellRequest, type ShellKernel } from './kernel-requests.js';
import type { KernelSpecDefinition } from './kernel-specs.js';
import { type JupyterMessage, type MessageHeader, reply, type Sender } from './wire-message.js';

export type ExecutionState = 'starting' | 'idle' | 'busy' | 'restarting' | 'dead';

/** A client's end of the channels socket: where replies to its requests and every iopub message go. */
export interface KernelSocket {
  send(message: JupyterMessage): void;
  close(code: number, reason: string): void;
}

export interface KernelInit {
  /** The kernel's id, and its session's. */
  id: string;
  owner: Owner;
  spec: KernelSpecDefinition;
  /** The session's context this kernel runs in: the language's default one. */
  contextId: string;
  /** Its session, when this server holds one (a kernel read back from a paused record has none yet). */
  entry?: ManagedSession;
  registry: SessionRegistry;
  /** sandcell's version, which kernel_info_reply gives as the implementation's. */
  serverVersion: string;
  /** What it kept when its session was paused (read back after a restart). */
  kept?: KernelKeep;
  /** Told when what the kernel keeps with its session changed (kernel-store.ts writes the session's keep). */
  onChange?: () => void;
}

export class JupyterKernel implements ShellKernel {
  readonly id: string;
  readonly owner: Owner;
  readonly spec: KernelSpecDefinition;
  readonly contextId: string;
  readonly serverVersion: string;
  readonly sockets = new Set<KernelSocket>();
  readonly history = new KernelHistory();
  /** Its session as last bound; paused or being paused while the kernel is dormant. */
  entry?: ManagedSession;
  executionState: ExecutionState = 'idle';
  lastActivity = new Date();
  sender: Sender;
  /** Kernel incarnations so far: history entries are numbered by it, as IPython numbers its sessions. */
  incarnation = 1;
  executionCount = 0;
  private readonly registry: SessionRegistry;
  private readonly onChange: () => void;
  private shellQueue: Promise<void> = Promise.resolve();
  private received = 0;
  /** After an error with `stop_on_error`, execute requests received up to this one are aborted. */
  private abortThrough = 0;
  private running?: AbortController;
  /** The `input()` waiting for the client that ran the code (allow_stdin). */
  private pendingInput?: { socket: KernelSocket; resolve(value: string): void; reject(error: Error): void };
  /** What the next execution says on stderr: what its session's resume did not bring back. */
  private pendingNotice?: string;
  /** The resumed session whose report was read (each is told once). */
  private noticed?: ManagedSession;
  /** Its session is gone for good (found when resuming it): the kernel ends once the request that found it is answered. */
  private gone = false;

  constructor(init: KernelInit) {
    this.id = init.id;
    this.owner = init.owner;
    this.spec = init.spec;
    this.contextId = init.contextId;
    this.serverVersion = init.serverVersion;
    this.registry = init.registry;
    this.onChange = init.onChange ?? (() => undefined);
    this.sender = { session: init.kept?.senderSession ?? randomUUID(), username: 'sandcell' };
    if (init.kept) {
      this.executionCount = init.kept.executionCount;
      this.incarnation = init.kept.incarnation;
      this.lastActivity = new Date(init.kept.lastActivity);
      this.history.restore(init.kept.history ?? []);
    }
    if (init.entry) this.take(init.entry);
  }

  /** Its session is paused or being paused: its next use resumes it. */
  get dormant(): boolean {
    const entry = this.entry;
    if (this.executionState === 'dead' || this.gone) return false;
    return entry === undefined || entry.pausing !== undefined || entry.closedReason === 'paused';
  }

  get dead(): boolean {
    if (this.executionState === 'dead' || this.gone) return true;
    return this.entry !== undefined && !isLive(this.entry) && !this.dormant;
  }

  /**
   * The kernel's session, resumed first when it is dormant (here, after a pause by this server or
   * the one before a restart). A session gone for good ends the kernel: 404, as a culled kernel is.
   */
  async live(): Promise<ManagedSession> {
    const entry = this.entry;
    if (entry && isLive(entry)) return entry;
    if (this.dead) throw new KernelGoneError(this.id);
    let resumed: ManagedSession;
    try {
      resumed = await this.registry.open(this.owner, this.id);
    } catch (error) {
      if (!sessionGone(error)) throw error;
      this.gone = true;
      throw new KernelGoneError(this.id, error as Error);
    }
    if (this.executionState === 'dead') {
      // Shut down while it resumed: the session goes with it.
      await this.registry.remove(resumed, 'deleted').catch(() => undefined);
      throw new KernelGoneError(this.id);
    }
    this.bind(resumed);
    return resumed;
  }

  /** Takes a live session (new, or resumed) as the kernel's; a resume's report is told at the next execution. */
  bind(entry: ManagedSession): void {
    this.take(entry);
    this.onChange();
  }

  private take(entry: ManagedSession): void {
    this.entry = entry;
    if (entry.restored && this.noticed !== entry) {
      this.noticed = entry;
      this.pendingNotice = resumeNotice(entry.restored, this.contextId);
    }
  }

  /** What the kernel keeps with its session, but its notebook sessions (the store adds them). */
  keep(): Omit<KernelKeep, 'sessions'> {
    return {
      jupyter: 1,
      spec: this.spec.name,
      context: this.contextId,
      executionCount: this.executionCount,
      incarnation: this.incarnation,
      senderSession: this.sender.session,
      lastActivity: this.lastActivity.getTime(),
      history: this.history.kept(),
    };
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
    // A dormant kernel is resumed first: its files stay through a restart.
    const entry = await this.live().catch((error: unknown) => {
      if (this.gone) this.shutDown();
      throw error;
    });
    // Not published: clients read a `restarting` status as a kernel that died and is being auto-restarted.
    this.executionState = 'restarting';
    this.interrupt();
    try {
      await entry.session.restartContext(this.contextId);
    } catch (error) {
      if (this.executionState === 'restarting') this.executionState = 'idle';
      throw error;
    }
    this.sender = { session: randomUUID(), username: 'sandcell' };
    this.incarnation++;
    this.executionCount = 0;
    this.abortThrough = this.received;
    // What did not come back from a pause is gone with the rest of the kernel's state.
    this.pendingNotice = undefined;
    this.onChange();
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
        // Requests that ask the kernel itself resume a dormant one (answerShellRequest calls live()).
        answer((await answerShellRequest(this, message)) ?? unknownRequest(type));
      }
    } catch (error) {
      answer(errorContent('KernelError', jupyterLimitText(error) ?? (error as Error).message));
    } finally {
      if (this.gone) this.shutDown();
      else if (!this.dead) this.status('idle', parent);
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
      const entry = await this.live();
      if (this.pendingNotice !== undefined && !silent) {
        emit('stream', { name: 'stderr', text: this.pendingNotice });
        this.pendingNotice = undefined;
      }
      const execution = await this.registry.execute(entry, code, {
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
      if (!this.dead) this.onChange();
    }
  }
}

function isLive(entry: ManagedSession): boolean {
  return !entry.session.closed && entry.pausing === undefined && entry.closedAt === undefined;
}

/** A resume that failed for good: the session was deleted, or its state lost; another try would fail the same. */
function sessionGone(error: unknown): boolean {
  return (
    error instanceof SessionNotFoundError ||
    error instanceof SessionLostError ||
    error instanceof SnapshotNotFoundError ||
    error instanceof SnapshotInvalidError
  );
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
