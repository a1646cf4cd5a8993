/**
 * A Session is one sandbox: stateful contexts (kernels) in several languages,
 * shell commands, files, reset, restart, close. Runs queue per context (one at
 * a time, in order, in each; different contexts run at once); commands run
 * beside everything. Infrastructure failures throw typed errors; errors in
 * user code, and a command's exit status, are data.
 */
import { randomUUID } from 'node:crypto';
import { dataCapacityBytes } from '../backends/limits.js';
import { resolveBackend } from '../backends/select.js';
import type { SandboxBackend, SandboxVolume } from '../backends/spec.js';
import { chooseEnvironment } from '../environments/select.js';
import type { Environment } from '../environments/types.js';
import { AbortError, InvalidInputError, ProtocolError, SessionClosedError, UnknownContextError } from '../errors.js';
import { defaultNetworkGate } from '../network/default-gate.js';
import type { NetworkChannel } from '../network/gate-channel.js';
import { type AssistOptions, checkAssistInput, type InspectOptions } from './assist-input.js';
import { type Completion, type Inspection, withinCode } from './assist-replies.js';
import { CommandRegistry, SessionCommands } from './commands.js';
import type { Execution, RunOptions } from './execution.js';
import { runExecution } from './execution-run.js';
import { SessionFiles } from './files.js';
import type { KernelConnection } from './kernel-connection.js';
import type { KernelRequest, ReplyTo } from './kernel-protocol.js';
import type { CompletenessStatus } from './kernel-replies.js';
import { DEFAULT_CONTEXT } from './languages.js';
import {
  DEFAULT_REQUEST_TIMEOUT_MS,
  type ResolvedSessionOptions,
  resolveSessionOptions,
  type SessionOptions,
} from './options.js';
import { checkTimeout } from './sandbox-inputs.js';
import type { ContextInfo, CreateContextOptions, SessionContext } from './session-context.js';
import { SessionContexts } from './session-contexts.js';
import { SessionDeaths } from './session-deaths.js';
import { SessionSandbox } from './session-sandbox.js';

const SESSION_ID = /^[A-Za-z0-9_-]{1,64}$/;

export class Session {
  readonly files: SessionFiles;
  readonly commands: SessionCommands;
  private readonly contexts: SessionContexts;
  private readonly commandRuns: CommandRegistry;
  private readonly sandbox: SessionSandbox;
  private closing?: Promise<void>;
  private lastActivity = Date.now();

  private constructor(
    readonly id: string,
    readonly backend: SandboxBackend,
    private readonly volume: SandboxVolume,
    private readonly options: ResolvedSessionOptions,
    /** The environment it runs in (`default` unless `environmentName` chose one). */
    readonly environment: Environment,
    private readonly networkChannel?: NetworkChannel,
  ) {
    this.files = new SessionFiles((message) => this.request(message), {
      transferBytes: options.fileTransferBytes,
      dataCapacityBytes: dataCapacityBytes(options.limits),
      names: options.limitNames,
    });
    const connection = () => this.sandbox.ensure();
    this.contexts = new SessionContexts({
      connection,
      current: () => this.sandbox.current,
      maxContexts: options.maxContexts,
      startTimeoutMs: options.startTimeoutMs,
      ...(environment.rootOptions?.mountedKernel ? { imageEnvironment: environment.name } : {}),
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
    this.sandbox = new SessionSandbox({
      id,
      backend,
      volume,
      options,
      contexts: this.contexts,
      commands: this.commandRuns,
      deaths: new SessionDeaths(volume, options.limits.memoryBytes, options.limitNames),
      ...(networkChannel
        ? {
            network: {
              socketPath: networkChannel.socketPath,
              ...(networkChannel.socketGroup !== undefined ? { socketGroup: networkChannel.socketGroup } : {}),
              ...sandboxCertificates(options.network?.trustedCertificates, networkChannel.certificateAuthority),
            },
          }
        : {}),
      closed: () => this.closing !== undefined,
    });
  }

  /** Starts a sandbox and waits until its python context is ready. */
  static async create(options: SessionOptions = {}): Promise<Session> {
    const sessionOptions = resolveSessionOptions(options);
    const id = options.id ?? randomUUID().replace(/-/g, '').slice(0, 16);
    if (!SESSION_ID.test(id)) throw new InvalidInputError('A session id is 1 to 64 letters, digits, "-" or "_".');
    const { backend, environment } = await chooseEnvironment(
      resolveBackend(options.backend),
      options.environmentName ?? (process.env.SANDCELL_ENVIRONMENT || undefined),
      { signal: options.signal },
    );
    const resolved: ResolvedSessionOptions = {
      ...sessionOptions,
      warmImports: environment.warmImports,
      environment: { ...environment.env, ...sessionOptions.environment },
    };
    await backend.ensureAvailable({ signal: options.signal });
    const volume = await backend.createVolume({ sessionId: id, limits: resolved.limits, signal: options.signal });
    let channel: NetworkChannel | undefined;
    if (resolved.network) {
      const gate = options.networkGate ?? defaultNetworkGate();
      const { allow, secrets, trustedCertificates } = resolved.network;
      channel = await gate
        .openChannel({
          sessionId: id,
          allow,
          ...(secrets ? { secrets } : {}),
          ...(trustedCertificates !== undefined ? { trustedCertificates } : {}),
          ...(volume.owner ? { owner: { uid: volume.owner.uid, gid: volume.owner.gid } } : {}),
        })
        .catch(async (error) => {
          await volume.dispose();
          throw error;
        });
    }
    const session = new Session(id, backend, volume, resolved, environment, channel);
    try {
      await session.sandbox.ensure();
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
   * Whether anything runs: code, or any command, background ones included. A session with work
   * running is not idle (a pool never closes it for idling); when the work ends, its idle clock
   * starts again.
   */
  get active(): boolean {
    return this.busy || this.commandRuns.all().length > 0;
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
    return this.contexts.create(options).catch((error) => this.closedInstead(error));
  }

  listContexts(): ContextInfo[] {
    return this.contexts.list();
  }

  /** Replaces a context's kernel with a fresh one: its state is lost, files stay. A running execution in it ends. */
  async restartContext(id: string): Promise<ContextInfo> {
    return this.contexts.restart(this.existingContext(id));
  }

  /** Ends a context and its kernel. Runs queued in it fail with UnknownContextError. */
  async removeContext(id: string): Promise<void> {
    await this.contexts.remove(this.existingContext(id));
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
    await this.sandbox.end({ kind: 'restart' });
    await this.sandbox.ensure();
  }

  /** Stops every process of the session and removes its files. Idempotent. */
  close(): Promise<void> {
    this.closing ??= (async () => {
      const closed = new SessionClosedError(this.id);
      for (const context of this.contexts.all()) context.running?.abandon(closed);
      for (const run of this.commandRuns.all()) run.sandboxEnded(closed);
      await this.sandbox.end({ kind: 'close' });
      await this.networkChannel?.close();
      await this.volume.dispose();
    })();
    return this.closing;
  }

  /**
   * Whether `code` is a complete statement (for prompts that read multi-line
   * input) in python, or in the context `options.context` (or `language`'s
   * default context): the kernel's own rules (IPython's for python), `unknown`
   * where it cannot tell. Python, JavaScript and bash answer even while code
   * runs; R once the running code ends.
   */
  async checkComplete(
    code: string,
    options: AssistOptions = {},
  ): Promise<{ status: CompletenessStatus; indent: number }> {
    if (options.context === undefined && options.language === undefined) {
      return this.request({ type: 'is-complete', code: String(code) });
    }
    // Each kernel answers by its own language's rules (bash -n, R's parse, a JavaScript parser).
    const { context, connection } = await this.liveContext(options);
    return connection.request(
      { type: 'is-complete', code: String(code), context: context.id },
      DEFAULT_REQUEST_TIMEOUT_MS,
    );
  }

  /**
   * What may be typed at `cursorPos` (in code points, as Jupyter counts them) in `code`: the
   * kernel's completions of names, attributes, keys, paths, … in the live state of the context
   * (`context`, or `language`'s default context, else python). Asked while code runs there, it
   * is answered once that execution ends (a kernel answers in order, as Jupyter's do).
   */
  async complete(code: string, cursorPos: number, options: AssistOptions = {}): Promise<Completion> {
    checkAssistInput(code, cursorPos, options, this.options.maxCodeBytes);
    const { context, connection } = await this.liveContext(options);
    const reply = await connection.request(
      { type: 'complete', code, cursorPos, context: context.id },
      this.assistTimeoutMs(),
    );
    if (!withinCode(code, reply)) throw new ProtocolError('The kernel sent completions for a span outside the code.');
    return reply;
  }

  /**
   * Help on the name at `cursorPos` in `code` (IPython's `obj?` for python; `detailLevel: 1`
   * adds the source where the kernel has it), as a MIME bundle; `found: false` when there is none.
   * Waits for a running execution, as complete() does.
   */
  async inspect(code: string, cursorPos: number, options: InspectOptions = {}): Promise<Inspection> {
    checkAssistInput(code, cursorPos, options, this.options.maxCodeBytes);
    const { context, connection } = await this.liveContext(options);
    return connection.request(
      { type: 'inspect', code, cursorPos, detailLevel: options.detailLevel === 1 ? 1 : 0, context: context.id },
      this.assistTimeoutMs(),
    );
  }

  /** Host-side resource usage of the current sandbox, where the backend measures it. */
  async usage() {
    return (await this.sandbox.current?.sandbox.usage?.()) ?? {};
  }

  // --- internals -------------------------------------------------------------

  /** A failure because the session closed meanwhile (its sandbox killed under a request) is the closing's. */
  private closedInstead(error: unknown): never {
    throw this.closing ? new SessionClosedError(this.id) : error;
  }

  /** The context a request names (created on first use, as for run()) with its kernel up. */
  private async liveContext(
    options: AssistOptions,
  ): Promise<{ context: SessionContext; connection: KernelConnection }> {
    if (this.closing) throw new SessionClosedError(this.id);
    const context = this.contexts.forRun(options);
    this.lastActivity = Date.now();
    try {
      return { context, connection: await this.contexts.ensureLive(context) };
    } catch (error) {
      if (context.connection === undefined) this.contexts.forget(context, error as Error);
      return this.closedInstead(error);
    }
  }

  /** A completion waits behind the execution running in its context, which ends within its timeout and grace. */
  private assistTimeoutMs(): number {
    return this.options.timeoutMs + this.options.interruptGraceMs + DEFAULT_REQUEST_TIMEOUT_MS;
  }

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

  private async request<Request extends KernelRequest>(request: Request): Promise<ReplyTo<Request>> {
    const connection = await this.sandbox.ensure();
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
      return this.closedInstead(error);
    }
    this.lastActivity = Date.now();
    const execution = await runExecution(connection, context, code, options, {
      timeoutMs: options.timeoutMs ?? this.options.timeoutMs,
      interruptGraceMs: this.options.interruptGraceMs,
      outputBytes: this.options.outputBytes,
      resultBytes: this.options.resultBytes,
      stateLostBefore: context.takeStateLossNote(),
      replaceKernel: () => this.sandbox.replaceStuckKernel(context, connection),
    });
    this.lastActivity = Date.now();
    return execution;
  }
}

/** Creates a session: a fresh sandbox with a ready python context. */
export function createSession(options: SessionOptions = {}): Promise<Session> {
  return Session.create(options);
}

/**
 * What the sandbox trusts beside the system's CAs: the session's own certificates, and the
 * authority of its gate when it has secrets (the gate ends TLS for those hosts with it).
 */
function sandboxCertificates(
  trusted: string | undefined,
  gateAuthority: string | undefined,
): { trustedCertificates?: string } {
  const parts = [trusted, gateAuthority].filter((part): part is string => part !== undefined);
  if (parts.length === 0) return {};
  return { trustedCertificates: parts.map((part) => (part.endsWith('\n') ? part : `${part}\n`)).join('') };
}
