/**
 * A Session is one sandbox: stateful contexts (kernels) in several languages,
 * shell commands, files, reset, restart, close. Runs queue per context (one at
 * a time, in order, in each; different contexts run at once); commands run
 * beside everything. Infrastructure failures throw typed errors; errors in
 * user code, and a command's exit status, are data.
 */
import { randomUUID } from 'node:crypto';
import { resolveBackend } from '../backends/select.js';
import type { SandboxBackend, SandboxExit, SandboxVolume } from '../backends/spec.js';
import {
  AbortError,
  InvalidInputError,
  SandboxCrashedError,
  SandboxStartError,
  SandcellError,
  SessionClosedError,
  UnknownContextError,
} from '../errors.js';
import { KERNEL_PROTOCOL_VERSION } from '../kernel/index.js';
import { CommandRegistry, SessionCommands } from './commands.js';
import type { Execution, RunOptions } from './execution.js';
import { runExecution } from './execution-run.js';
import { SessionFiles } from './files.js';
import { KernelConnection } from './kernel-connection.js';
import type { ContextExitEvent, KernelRequest, ReplyTo } from './kernel-protocol.js';
import { DEFAULT_CONTEXT } from './languages.js';
import {
  DEFAULT_REQUEST_TIMEOUT_MS,
  type ResolvedSessionOptions,
  resolveSessionOptions,
  type SessionOptions,
} from './options.js';
import { messageLimits } from './output-limits.js';
import { checkTimeout } from './sandbox-inputs.js';
import type { ContextInfo, CreateContextOptions, SessionContext } from './session-context.js';
import { SessionContexts } from './session-contexts.js';
import { SessionDeaths } from './session-deaths.js';
import { describeContextExit, describeExit, stateLostIn } from './state-loss.js';

const SESSION_ID = /^[A-Za-z0-9_-]{1,64}$/;

/** A sandbox sandcell ended on purpose, and what that means for what ran in it. */
type Retirement = { kind: 'restart' } | { kind: 'close' } | { kind: 'stuck'; context: string };

export class Session {
  readonly files: SessionFiles;
  readonly commands: SessionCommands;
  private readonly contexts: SessionContexts;
  private readonly commandRuns: CommandRegistry;
  private readonly deaths: SessionDeaths;
  private connection?: KernelConnection;
  private starting?: Promise<KernelConnection>;
  private readonly retired = new WeakMap<KernelConnection, Retirement>();
  private closing?: Promise<void>;
  private lastActivity = Date.now();

  private constructor(
    readonly id: string,
    readonly backend: SandboxBackend,
    private readonly volume: SandboxVolume,
    private readonly options: ResolvedSessionOptions,
  ) {
    this.files = new SessionFiles((message) => this.request(message), options.fileTransferBytes);
    this.deaths = new SessionDeaths(volume, options.limits.memoryBytes);
    const connection = () => this.ensureConnection();
    this.contexts = new SessionContexts({
      connection,
      maxContexts: options.maxContexts,
      startTimeoutMs: options.startTimeoutMs,
    });
    this.commandRuns = new CommandRegistry({
      connection,
      checkOpen: () => {
        if (this.closing) throw new SessionClosedError(this.id);
      },
      touch: () => {
        this.lastActivity = Date.now();
      },
      maxCommands: options.maxCommands,
      maxCodeBytes: options.maxCodeBytes,
      outputBytes: options.outputBytes,
      timeoutMs: options.timeoutMs,
      answerTimeoutMs: options.contextRestartTimeoutMs,
      requestTimeoutMs: DEFAULT_REQUEST_TIMEOUT_MS,
    });
    this.commands = new SessionCommands(this.commandRuns);
  }

  /** Starts a sandbox and waits until its python context is ready. */
  static async create(options: SessionOptions = {}): Promise<Session> {
    const resolved = resolveSessionOptions(options);
    const id = options.id ?? randomUUID().replace(/-/g, '').slice(0, 16);
    if (!SESSION_ID.test(id)) throw new InvalidInputError('A session id is 1 to 64 letters, digits, "-" or "_".');
    const backend = resolveBackend(options.backend);
    await backend.ensureAvailable({ signal: options.signal });
    const volume = await backend.createVolume({ sessionId: id, limits: resolved.limits, signal: options.signal });
    const session = new Session(id, backend, volume, resolved);
    try {
      await session.ensureConnection();
    } catch (error) {
      await session.close();
      throw error;
    }
    return session;
  }

  get closed(): boolean {
    return this.closing !== undefined;
  }

  /** When the session last ran code, a command or moved a file (ms since the epoch). */
  get lastActivityAt(): number {
    return this.lastActivity;
  }

  /** Whether code runs in some context, or a command that someone waits for runs (background ones do not count). */
  get busy(): boolean {
    return this.contexts.all().some((context) => context.running) || this.commandRuns.foregroundRunning;
  }

  /**
   * Runs code in a context (`context`, or `language`'s default context, else
   * python). Runs in one context queue behind each other; runs in different
   * contexts go on at once.
   */
  run(code: string, options: RunOptions = {}): Promise<Execution> {
    let context: SessionContext;
    try {
      if (typeof code !== 'string') throw new InvalidInputError('Code must be a string.');
      const size = Buffer.byteLength(code, 'utf8');
      if (size > this.options.maxCodeBytes) {
        throw new InvalidInputError(
          `The code is ${size} bytes; the limit is ${this.options.maxCodeBytes} (option \`maxCodeBytes\`). Put large data in a file with session.files.write().`,
        );
      }
      checkTimeout(options.timeoutMs);
      if (this.closing) throw new SessionClosedError(this.id);
      context = this.contexts.forRun(options);
    } catch (error) {
      return Promise.reject(error);
    }
    return this.enqueue(context, async () => {
      try {
        return await this.execute(context, code, options);
      } finally {
        // The code may have written or removed files: a volume sharing a server-wide budget adjusts now.
        await this.volume.usageChanged?.().catch(() => undefined);
      }
    });
  }

  /** Starts a new context (a fresh kernel of `language`) and gives its id. */
  async createContext(options: CreateContextOptions): Promise<ContextInfo> {
    if (this.closing) throw new SessionClosedError(this.id);
    this.lastActivity = Date.now();
    return this.contexts.create(options);
  }

  listContexts(): ContextInfo[] {
    return this.contexts.list();
  }

  /** Replaces a context's kernel with a fresh one: its state is lost, files stay. A running execution in it ends. */
  async restartContext(id: string): Promise<ContextInfo> {
    const context = this.existingContext(id);
    const connection = await this.ensureConnection();
    if (context.connection === connection && connection.alive) {
      context.running?.lose({
        name: 'KernelRestarted',
        reason: `The context was restarted (restartContext) while this ran: ${stateLostIn(id)}`,
      });
      await this.contexts.restartKernel(context, connection, this.options.startTimeoutMs);
    } else {
      await this.contexts.ensureLive(context);
    }
    context.stateLossNote = undefined;
    return context.info();
  }

  /** Ends a context and its kernel. Runs queued in it fail with UnknownContextError. */
  async removeContext(id: string): Promise<void> {
    const context = this.existingContext(id);
    this.contexts.forget(context);
    context.running?.lose({
      name: 'ContextRemoved',
      reason: `The context was removed (removeContext) while this ran: ${stateLostIn(id)}`,
    });
    const connection = this.connection;
    await context.starting?.catch(() => undefined);
    if (connection?.alive && context.connection === connection) {
      await connection.request({ type: 'context-remove', context: id }, this.options.startTimeoutMs);
    }
  }

  /**
   * Back to a fresh session, files kept: every command is killed, every
   * context but python removed, and python's variables and imports cleared
   * (a running execution in it is interrupted first).
   */
  async reset(): Promise<void> {
    if (this.closing) throw new SessionClosedError(this.id);
    await this.commandRuns.killAll();
    for (const context of this.contexts.all()) {
      if (context.id !== DEFAULT_CONTEXT) await this.removeContext(context.id).catch(() => undefined);
    }
    const python = this.contexts.get(DEFAULT_CONTEXT);
    if (!python) return;
    python.running?.interrupt();
    await this.enqueue(python, async () => {
      const connection = await this.contexts.ensureLive(python);
      await connection.request({ type: 'reset', context: DEFAULT_CONTEXT }, DEFAULT_REQUEST_TIMEOUT_MS);
      python.executionCount = 0;
    });
  }

  /**
   * Replaces the whole sandbox: every context is gone but a fresh python,
   * every command is killed; files stay. Running executions end with an error.
   */
  async restart(): Promise<void> {
    if (this.closing) throw new SessionClosedError(this.id);
    const current = this.connection;
    for (const context of this.contexts.all()) {
      if (context.id !== DEFAULT_CONTEXT) {
        this.contexts.forget(
          context,
          new UnknownContextError(
            context.id,
            `The context ${JSON.stringify(context.id)} was removed by session.restart(); create it again.`,
          ),
        );
      }
    }
    if (current) {
      this.retired.set(current, { kind: 'restart' });
      await current.kill();
    }
    await this.ensureConnection();
  }

  /** Stops every process of the session and removes its files. Idempotent. */
  close(): Promise<void> {
    this.closing ??= (async () => {
      const closed = new SessionClosedError(this.id);
      for (const context of this.contexts.all()) context.running?.abandon(closed);
      for (const run of this.commandRuns.all()) run.sandboxEnded(closed);
      const connection = this.connection;
      await this.starting?.catch(() => undefined);
      for (const candidate of new Set([connection, this.connection])) {
        if (!candidate) continue;
        this.retired.set(candidate, { kind: 'close' });
        await candidate.kill();
      }
      await this.volume.dispose();
    })();
    return this.closing;
  }

  /**
   * Whether `code` is a complete statement (for prompts that read multi-line
   * input): IPython's own rules, answered even while code runs.
   */
  async checkComplete(code: string): Promise<{ status: 'complete' | 'incomplete' | 'invalid'; indent: number }> {
    return this.request({ type: 'is-complete', code: String(code) });
  }

  /** Host-side resource usage of the current sandbox, where the backend measures it. */
  async usage() {
    return (await this.connection?.sandbox.usage?.()) ?? {};
  }

  // --- internals -------------------------------------------------------------

  private existingContext(id: string): SessionContext {
    if (this.closing) throw new SessionClosedError(this.id);
    const context = typeof id === 'string' ? this.contexts.get(id) : undefined;
    if (!context) throw new UnknownContextError(String(id));
    this.lastActivity = Date.now();
    return context;
  }

  private enqueue<T>(context: SessionContext, task: () => Promise<T>): Promise<T> {
    const result = context.queue.then(() => {
      if (this.closing) throw new SessionClosedError(this.id);
      if (context.removal) throw context.removal;
      return task();
    });
    context.queue = result.catch(() => undefined);
    return result;
  }

  private ensureConnection(): Promise<KernelConnection> {
    if (this.closing) return Promise.reject(new SessionClosedError(this.id));
    if (this.connection?.alive && !this.starting) return Promise.resolve(this.connection);
    if (!this.starting) {
      this.starting = this.startSandbox().finally(() => {
        this.starting = undefined;
      });
    }
    return this.starting;
  }

  private async startSandbox(): Promise<KernelConnection> {
    const sandbox = await this.backend.start({
      volume: this.volume,
      limits: this.options.limits,
      kernelOptions: {
        outputBytes: this.options.outputBytes,
        resultBytes: this.options.resultBytes,
        fileTransferBytes: this.options.fileTransferBytes,
        preloadModules: this.options.preloadModules,
      },
      environment: this.options.environment,
    });
    const connection = new KernelConnection(sandbox, {
      messageLimits: messageLimits(this.options),
      startTimeoutMs: this.options.startTimeoutMs,
    });
    try {
      const ready = await connection.ready;
      if (ready.protocolVersion !== KERNEL_PROTOCOL_VERSION) {
        throw new SandboxStartError(
          `The kernel speaks protocol ${ready.protocolVersion}, this host ${KERNEL_PROTOCOL_VERSION}; reinstall sandcell (\`npm run setup\`).`,
        );
      }
    } catch (error) {
      await connection.kill();
      if (error instanceof SandcellError && error.code === 'sandbox-start-failed') throw error;
      const dataNote = connection.exit?.reason === 'out-of-memory' ? await this.deaths.dataShareNote(0) : '';
      throw new SandboxStartError(
        `The sandbox did not start: ${(error as Error).message}${dataNote ? ` ${dataNote.charAt(0).toUpperCase()}${dataNote.slice(1)}` : ''} Run \`sandcell doctor\` to check this machine.`,
        { cause: error },
      );
    }
    connection.onContextExit((event) => void this.contextExited(connection, event));
    void connection.exited.then((exit) => this.sandboxEnded(connection, exit));
    this.contexts.sandboxStarted(connection);
    this.connection = connection;
    return connection;
  }

  private async request<Request extends KernelRequest>(request: Request): Promise<ReplyTo<Request>> {
    const connection = await this.ensureConnection();
    this.lastActivity = Date.now();
    return connection.request(request, DEFAULT_REQUEST_TIMEOUT_MS);
  }

  private async execute(context: SessionContext, code: string, options: RunOptions): Promise<Execution> {
    if (options.signal?.aborted) throw new AbortError('The run was aborted before it started.');
    let connection: KernelConnection;
    try {
      connection = await this.contexts.ensureLive(context);
    } catch (error) {
      // A default context that never started (its language missing, say) does not stay listed.
      if (context.connection === undefined) this.contexts.forget(context, error as Error);
      throw error;
    }
    this.lastActivity = Date.now();
    const execution = await runExecution(connection, context, code, options, {
      timeoutMs: options.timeoutMs ?? this.options.timeoutMs,
      interruptGraceMs: this.options.interruptGraceMs,
      outputBytes: this.options.outputBytes,
      resultBytes: this.options.resultBytes,
      stateLostBefore: context.takeStateLossNote(),
      replaceKernel: () => this.replaceStuckKernel(context, connection),
    });
    this.lastActivity = Date.now();
    return execution;
  }

  /**
   * Code ignored its interrupt: restart its context's kernel; when the sandbox
   * does not do that in time, replace the whole sandbox.
   */
  private async replaceStuckKernel(
    context: SessionContext,
    connection: KernelConnection,
  ): Promise<{ scope: 'context' } | { scope: 'sandbox'; why: string }> {
    try {
      await this.contexts.restartKernel(context, connection, this.options.contextRestartTimeoutMs);
      return { scope: 'context' };
    } catch (error) {
      if (connection.alive) {
        this.retired.set(connection, { kind: 'stuck', context: context.id });
        await connection.kill();
      }
      // Have a fresh sandbox ready for the next run.
      void this.ensureConnection().catch(() => undefined);
      return { scope: 'sandbox', why: (error as Error).message };
    }
  }

  /** A context's kernel ended on its own: a run in it ends with its state lost, an idle one says so next time. */
  private async contextExited(connection: KernelConnection, event: ContextExitEvent): Promise<void> {
    const context = this.contexts.get(event.context);
    if (this.closing || this.retired.has(connection) || !context?.liveIn(connection)) return;
    context.exited = true;
    const running = context.running;
    const idleNote = (description: string) =>
      `The kernel stopped between runs (${description}), so it was restarted and ${stateLostIn(context.id)}`;
    if (!running) context.stateLossNote = idleNote(describeContextExit(event, false));
    const outOfMemory = await connection.outOfMemorySinceLastAsked();
    if (!running) {
      if (outOfMemory && context.exited) context.stateLossNote = idleNote(describeContextExit(event, true));
      return;
    }
    const cause = await this.deaths.kernelDeathCause(describeContextExit(event, outOfMemory), outOfMemory);
    running.lose({ name: 'KernelDied', reason: `${cause} The kernel was restarted: ${stateLostIn(context.id)}` });
    // Have a fresh kernel ready for the next run.
    if (!this.closing) void this.contexts.ensureLive(context).catch(() => undefined);
  }

  /** The sandbox ended: what ran in it ends, each context's next run says its state was lost. */
  private async sandboxEnded(connection: KernelConnection, exit: SandboxExit): Promise<void> {
    const retirement = this.retired.get(connection);
    if (this.closing || retirement?.kind === 'close') return;
    const affected = this.contexts.all().filter((context) => context.connection === connection);
    if (retirement?.kind === 'restart') {
      this.commandRuns.sandboxEnded(connection);
      for (const context of affected) {
        context.running?.lose({
          name: 'KernelRestarted',
          reason: `The session was restarted (session.restart()) while this ran: ${stateLostIn(context.id)}`,
        });
      }
      return;
    }
    const why =
      retirement?.kind === 'stuck'
        ? `code in context ${JSON.stringify(retirement.context)} did not stop when interrupted and its kernel could not be restarted alone, so the whole sandbox was killed`
        : `the sandbox ended (${describeExit(exit)})`;
    this.commandRuns.sandboxEnded(connection, new SandboxCrashedError(`The command was killed: ${why}.`));
    const running = affected.filter((context) => context.running);
    for (const context of affected) {
      if (context.running) continue;
      context.stateLossNote =
        retirement?.kind === 'stuck'
          ? `Between runs, ${why} and restarted, so ${stateLostIn(context.id)}`
          : `The kernel stopped between runs (${describeExit(exit)}), so it was restarted and ${stateLostIn(context.id)}`;
    }
    if (running.length === 0) return;
    const cause =
      retirement?.kind === 'stuck'
        ? `The whole sandbox was killed and restarted: ${why}.`
        : await this.deaths.sandboxDeathCause(connection, exit);
    for (const context of running) {
      context.running?.lose({
        name: 'KernelDied',
        reason: `${cause} The kernel was restarted: ${stateLostIn(context.id)}`,
      });
    }
    if (!this.closing) void this.ensureConnection().catch(() => undefined);
  }
}

/** Creates a session: a fresh sandbox with a ready python context. */
export function createSession(options: SessionOptions = {}): Promise<Session> {
  return Session.create(options);
}
