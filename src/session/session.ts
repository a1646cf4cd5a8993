/**
 * A Session is one sandbox: stateful contexts (kernels) in several languages,
 * shell commands, files, reset, restart, close. Runs queue per context (one at
 * a time, in order, in each; different contexts run at once); commands run
 * beside everything. Infrastructure failures throw typed errors; errors in
 * user code, and a command's exit status, are data. What it runs on is
 * opened by session-resources.ts; its parts are the contexts
 * (session-contexts.ts), the sandbox over time (session-sandbox.ts), commands
 * (commands.ts), files (files.ts), questions to a kernel about code
 * (session-assist.ts), the ports something listens on inside it
 * (session-ports.ts), and its state taken out and put back: snapshots,
 * pause, load, restore and fork (session-snapshots.ts).
 */
import { dataCapacityBytes } from '../backends/limits.js';
import type { SandboxBackend, SandboxVolume } from '../backends/spec.js';
import type { Environment } from '../environments/types.js';
import { AbortError, InvalidInputError, SessionClosedError, UnknownContextError } from '../errors.js';
import type { NetworkChannel } from '../network/gate-channel.js';
import type { IngressChannel } from '../network/ingress.js';
import { localSnapshotStore } from '../snapshots/local-snapshots.js';
import { localVolumeStore } from '../volumes/local-volumes.js';
import type { MountedVolume, SessionMounts } from '../volumes/session-mounts.js';
import type { AssistOptions, InspectOptions } from './assist-input.js';
import type { Completion, Inspection } from './assist-replies.js';
import { CommandRegistry, SessionCommands } from './commands.js';
import type { Execution, RunOptions } from './execution.js';
import { runExecution } from './execution-run.js';
import { SessionFiles } from './files.js';
import type { KernelConnection } from './kernel-connection.js';
import type { KernelRequest, ReplyTo } from './kernel-protocol.js';
import type { CompletenessStatus } from './kernel-replies.js';
import { DEFAULT_CONTEXT } from './languages.js';
import { DEFAULT_REQUEST_TIMEOUT_MS, type ResolvedSessionOptions, type SessionOptions } from './options.js';
import { checkText, checkTimeout } from './sandbox-inputs.js';
import { SessionAssist } from './session-assist.js';
import type { ContextInfo, CreateContextOptions, SessionContext } from './session-context.js';
import { SessionContexts } from './session-contexts.js';
import { SessionDeaths } from './session-deaths.js';
import { SessionPorts } from './session-ports.js';
import { remountable } from './session-remounts.js';
import { openSessionResources, sandboxIngress, sandboxNetwork } from './session-resources.js';
import { SessionSandbox } from './session-sandbox.js';
import { LOCAL_OWNER, readSnapshot, SessionSnapshots, type SnapshotOptions } from './session-snapshots.js';
import type { RestoreReport, SnapshotInfo } from './session-state.js';
import { SessionTerminals, TerminalRegistry } from './terminals.js';

export class Session {
  readonly files: SessionFiles;
  readonly commands: SessionCommands;
  /** The ports something listens on inside the sandbox, and connections to them (session-ports.ts). */
  readonly ports: SessionPorts;
  /** Programs on pseudo-terminals in the sandbox: shells, REPLs, TUIs (terminals.ts). */
  readonly terminals: SessionTerminals;
  private readonly contexts: SessionContexts;
  private readonly commandRuns: CommandRegistry;
  private readonly terminalRuns: TerminalRegistry;
  private readonly sandbox: SessionSandbox;
  private readonly assist: SessionAssist;
  private readonly snapshots: SessionSnapshots;
  private closing?: Promise<void>;
  private readonly createdAt = Date.now();
  private lastActivity = this.createdAt;
  /** What the last resume, restore or fork brought back, per context (undefined for a fresh session). */
  restored?: RestoreReport;

  private constructor(
    readonly id: string,
    readonly backend: SandboxBackend,
    private readonly volume: SandboxVolume,
    private readonly options: ResolvedSessionOptions,
    /** The environment it runs in (`default` unless `environmentName` chose one). */
    readonly environment: Environment,
    /** The options it was created with: a fork is made with the same. */
    private readonly createdWith: SessionOptions,
    private readonly networkChannel: NetworkChannel | undefined,
    private readonly ingress: IngressChannel | undefined,
    private readonly volumeMounts: SessionMounts,
  ) {
    this.files = new SessionFiles((message, frame) => this.request(message, frame), {
      transferBytes: options.fileTransferBytes,
      dataCapacityBytes: dataCapacityBytes(options.limits),
      names: options.limitNames,
    });
    const connection = () => this.sandbox.ensure();
    const checkOpen = () => {
      if (this.closing) throw new SessionClosedError(this.id);
    };
    const touch = () => {
      this.lastActivity = Date.now();
    };
    this.contexts = new SessionContexts({
      connection,
      current: () => this.sandbox.current,
      maxContexts: options.maxContexts,
      startTimeoutMs: options.startTimeoutMs,
      ...(environment.rootOptions?.mountedKernel ? { imageEnvironment: environment.name } : {}),
    });
    this.commandRuns = new CommandRegistry({
      connection,
      checkOpen,
      touch,
      maxCommands: options.maxCommands,
      maxCodeBytes: options.maxCodeBytes,
      outputBytes: options.outputBytes,
      timeoutMs: options.timeoutMs,
      answerTimeoutMs: options.contextRestartTimeoutMs,
      requestTimeoutMs: DEFAULT_REQUEST_TIMEOUT_MS,
    });
    this.commands = new SessionCommands(this.commandRuns);
    this.terminalRuns = new TerminalRegistry({
      connection,
      checkOpen,
      touch,
      maxTerminals: options.maxTerminals,
      answerTimeoutMs: options.contextRestartTimeoutMs,
    });
    this.terminals = new SessionTerminals(this.terminalRuns);
    this.sandbox = new SessionSandbox({
      id,
      backend,
      volume,
      options,
      contexts: this.contexts,
      commands: this.commandRuns,
      terminals: this.terminalRuns,
      deaths: new SessionDeaths(volume, options.limits.memoryBytes, options.limitNames),
      ...sandboxNetwork(networkChannel, options.network),
      ...sandboxIngress(ingress),
      openPortConnections: () => ingress?.openConnections() ?? 0,
      mounts: volumeMounts.mounts,
      closed: () => this.closing !== undefined,
    });
    this.ports = new SessionPorts({
      connection,
      ...(ingress ? { ingress } : {}),
      checkOpen,
      touch,
      requestTimeoutMs: DEFAULT_REQUEST_TIMEOUT_MS,
    });
    this.assist = new SessionAssist({
      options,
      contexts: this.contexts,
      checkOpen,
      touch,
      request: (request) => this.request(request),
      live: (context) => this.liveKernel(context),
    });
    this.snapshots = new SessionSnapshots({
      id,
      environment: environment.name,
      options,
      contexts: this.contexts,
      commands: this.commandRuns,
      terminals: this.terminalRuns,
      sandbox: this.sandbox,
      mounts: volumeMounts.volumes,
      createdWith,
      closed: () => this.closing !== undefined,
      fresh: () => this.lastActivity === this.createdAt,
      enqueue: (context, task) => this.enqueue(context, task),
      touch,
      close: () => this.close(),
      restored: (report) => {
        this.restored = report;
      },
    });
  }

  /** Starts a sandbox and waits until its python context is ready. */
  static async create(options: SessionOptions = {}): Promise<Session> {
    const resources = await openSessionResources(options);
    const { signal: _signal, id: _id, ...createdWith } = options;
    const session = new Session(
      resources.id,
      resources.backend,
      resources.volume,
      resources.options,
      resources.environment,
      createdWith,
      resources.networkChannel,
      resources.ingress,
      resources.mounts,
    );
    return closedOnFailure(session, () => session.sandbox.ensure());
  }

  /** The volumes mounted in its sandboxes: which, where, and how. */
  get mounts(): MountedVolume[] {
    return this.volumeMounts.volumes.map((mounted) => ({ ...mounted }));
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
   * Whether anything runs: code, or any command, background ones included, or a terminal someone is
   * attached to. A session with work running is not idle (a pool never closes it for idling); when the
   * work ends, its idle clock starts again. A terminal nobody is attached to does not hold it.
   */
  get active(): boolean {
    return (
      this.busy ||
      this.commandRuns.all().length > 0 ||
      this.terminalRuns.all().some((terminal) => terminal.attachedClients > 0)
    );
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
      checkText('The code', code, this.options.maxCodeBytes, { allowNul: true });
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
    this.terminalRuns.endAll('the session was reset (session.reset()), which ends its terminals');
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
    this.terminalRuns.endAll("the session was restarted (session.restart()): a new sandbox replaced this terminal's");
    await this.sandbox.end({ kind: 'restart' });
    await this.sandbox.ensure();
  }

  /** Stops every process of the session and removes its files. Idempotent. */
  close(): Promise<void> {
    this.closing ??= (async () => {
      const closed = new SessionClosedError(this.id);
      for (const context of this.contexts.all()) context.running?.abandon(closed);
      for (const run of this.commandRuns.all()) run.sandboxEnded(closed);
      this.terminalRuns.endAll('the session was closed');
      await this.sandbox.end({ kind: 'close' });
      await this.networkChannel?.close();
      await this.ingress?.close();
      await this.volumeMounts.close();
      await this.volume.dispose();
    })();
    this.volumeMounts.leaving(this.closing);
    return this.closing;
  }

  /**
   * Whether `code` is a complete statement (for prompts that read multi-line
   * input) in python, or in the context `options.context` (or `language`'s
   * default context): the kernel's own rules (IPython's for python), `unknown`
   * where it cannot tell. Python, JavaScript and bash answer even while code
   * runs; R once the running code ends.
   */
  checkComplete(code: string, options: AssistOptions = {}): Promise<{ status: CompletenessStatus; indent: number }> {
    return this.assist.checkComplete(code, options);
  }

  /**
   * What may be typed at `cursorPos` (in code points, as Jupyter counts them) in `code`: the
   * kernel's completions of names, attributes, keys, paths, … in the live state of the context
   * (`context`, or `language`'s default context, else python). Asked while code runs there, it
   * is answered once that execution ends (a kernel answers in order, as Jupyter's do).
   */
  complete(code: string, cursorPos: number, options: AssistOptions = {}): Promise<Completion> {
    return this.assist.complete(code, cursorPos, options);
  }

  /**
   * Help on the name at `cursorPos` in `code` (IPython's `obj?` for python; `detailLevel: 1`
   * adds the source where the kernel has it), as a MIME bundle; `found: false` when there is none.
   * Waits for a running execution, as complete() does.
   */
  inspect(code: string, cursorPos: number, options: InspectOptions = {}): Promise<Inspection> {
    return this.assist.inspect(code, cursorPos, options);
  }

  // --- snapshots ---------------------------------------------------------------

  /**
   * Writes the session's state down and keeps running: every context's
   * variables (as its language can keep them: SavedContext.skipped names the
   * rest and why), its working directory and execution count, and the files of
   * /mnt/data and the user site. Running code is waited for (`snapshotWaitMs`),
   * then refused with a TimeoutError; running commands are not kept.
   */
  snapshot(options: SnapshotOptions = {}): Promise<SnapshotInfo> {
    return this.snapshots.snapshot(options);
  }

  /**
   * A snapshot, then the session ends: nothing of it runs or holds memory until
   * resumeSession(info.id) brings it back (by default under the same session id).
   */
  pause(options: SnapshotOptions = {}): Promise<SnapshotInfo> {
    return this.snapshots.pause(options);
  }

  /**
   * Rolls this session back to a snapshot of it (or of another session of the
   * same owner): commands and contexts end, files made since go, and each
   * context comes back as the snapshot had it. The snapshot is checked whole
   * before anything is touched.
   */
  restore(snapshotId: string, options: Pick<SnapshotOptions, 'owner' | 'snapshots'> = {}): Promise<RestoreReport> {
    return this.snapshots.restore(snapshotId, options);
  }

  /**
   * A new session holding what this one holds now (files, contexts, their
   * state), from then on independent of it. No snapshot is stored: the state
   * streams from one sandbox into the other.
   */
  async fork(options: { id?: string } = {}): Promise<Session> {
    if (this.closing) throw new SessionClosedError(this.id);
    const child = await Session.create({
      ...this.createdWith,
      ...(options.id === undefined ? {} : { id: options.id }),
    });
    return closedOnFailure(child, () => this.forkInto(child));
  }

  /**
   * What fork() does with the session it makes: this session's state streamed
   * into `target`, a fresh session (a server's warm one). Running code is
   * waited for as by snapshot().
   */
  forkInto(target: Session): Promise<RestoreReport> {
    return this.snapshots.streamInto(target.snapshots);
  }

  /**
   * Brings a snapshot into this session, which must be fresh (nothing run,
   * no file moved): what resumeSession does with the session it makes, and what
   * a server does with a pool's warm session. A snapshot that fails its check
   * midway leaves this session to be closed (nothing of it was loaded into a kernel).
   */
  load(snapshotId: string, options: Pick<SnapshotOptions, 'owner' | 'snapshots'> = {}): Promise<RestoreReport> {
    return this.snapshots.load(snapshotId, options);
  }

  /** Resumes a snapshot in a new session; see resumeSession. */
  static async resume(snapshotId: string, options: SessionOptions = {}): Promise<Session> {
    const store = options.snapshots ?? (await localSnapshotStore());
    const { manifest, details } = await readSnapshot(store, options.owner ?? LOCAL_OWNER, snapshotId);
    const remounted =
      options.mounts === undefined && details.mounts?.length
        ? await remountable(details.mounts, options.volumes ?? localVolumeStore(), options.owner ?? LOCAL_OWNER)
        : { mounts: options.mounts ?? [], gone: [] };
    const session = await Session.create({
      ...(details.environment === 'default' ? {} : { environmentName: details.environment }),
      id: manifest.sessionId,
      ...options,
      mounts: remounted.mounts,
      snapshots: store,
    });
    return closedOnFailure(session, async () => {
      const report = await session.load(manifest.id);
      if (remounted.gone.length > 0) {
        report.notKept.push(...remounted.gone);
        session.restored = report;
      }
    });
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

  /** `context`'s kernel, started if needed, for a run or a question about code. */
  private async liveKernel(context: SessionContext): Promise<KernelConnection> {
    try {
      return await this.contexts.ensureLive(context);
    } catch (error) {
      // A default context that never started (its language missing, say) does not stay listed.
      if (context.connection === undefined) this.contexts.forget(context, error as Error);
      return this.closedInstead(error);
    }
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

  private async request<Request extends KernelRequest>(
    request: Request,
    frame?: Uint8Array,
  ): Promise<ReplyTo<Request>> {
    const connection = await this.sandbox.ensure();
    this.lastActivity = Date.now();
    return connection.request(request, DEFAULT_REQUEST_TIMEOUT_MS, frame);
  }

  private async execute(context: SessionContext, code: string, options: RunOptions): Promise<Execution> {
    if (options.signal?.aborted) throw new AbortError('The run was aborted before it started.');
    const connection = await this.liveKernel(context);
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

/**
 * A new session holding a snapshot's state (session.pause() or snapshot()):
 * its files, contexts and what each kept; `session.restored` says, per
 * context, what came back and what did not. A snapshot of another owner, or
 * one that does not verify, is refused before anything is loaded.
 */
export function resumeSession(snapshotId: string, options: SessionOptions = {}): Promise<Session> {
  return Session.resume(snapshotId, options);
}

/** Creates a session: a fresh sandbox with a ready python context. */
export function createSession(options: SessionOptions = {}): Promise<Session> {
  return Session.create(options);
}

/** `session` once `step` is done; closed again when it fails. */
async function closedOnFailure(session: Session, step: () => Promise<unknown>): Promise<Session> {
  try {
    await step();
  } catch (error) {
    await session.close();
    throw error;
  }
  return session;
}
