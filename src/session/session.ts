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
import {
  AbortError,
  InvalidInputError,
  ProtocolError,
  SessionClosedError,
  TimeoutError,
  UnknownContextError,
} from '../errors.js';
import { defaultNetworkGate } from '../network/default-gate.js';
import type { NetworkChannel } from '../network/gate-channel.js';
import { localSnapshotStore } from '../snapshots/local-snapshots.js';
import { SnapshotTooLargeError } from '../snapshots/snapshot-errors.js';
import type { SnapshotStore } from '../snapshots/snapshot-store.js';
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
import {
  ARCHIVE_PART,
  ARCHIVE_SLACK_BYTES,
  endState,
  loadContext,
  type RestoredContext,
  type RestoreReport,
  readArchive,
  readDetails,
  type SavedContext,
  type SnapshotDetails,
  type SnapshotInfo,
  saveContexts,
  snapshotInfo,
  writeArchive,
} from './session-state.js';

const SESSION_ID = /^[A-Za-z0-9_-]{1,64}$/;

/** Whose snapshot, and of which session, when that is not the session's own (a server's pooled sessions). */
export interface SnapshotOptions {
  /** The owner the snapshot is written for or read as. @default the session's `owner` option */
  owner?: string;
  /** The session id the snapshot names (a resume without an id takes it). @default this session's id */
  sessionId?: string;
  /** The store to write to or read from. @default the session's `snapshots` option */
  snapshots?: SnapshotStore;
  /**
   * The most the snapshot may take in the store (its archive: the files and each context's
   * state); past it the snapshot fails with SnapshotTooLargeError and nothing is kept (a pause
   * leaves the session running). @default what the session's files and /tmp can hold
   */
  maxBytes?: number;
}
/** The owner of a library's snapshots (a server's sessions belong to their key's owner). */
const LOCAL_OWNER = 'local';

export class Session {
  readonly files: SessionFiles;
  readonly commands: SessionCommands;
  private readonly contexts: SessionContexts;
  private readonly commandRuns: CommandRegistry;
  private readonly sandbox: SessionSandbox;
  private closing?: Promise<void>;
  private readonly createdAt = Date.now();
  private lastActivity = this.createdAt;
  /** What the last resume, restore or fork brought back, per context (undefined for a fresh session). */
  restored?: RestoreReport;
  /** The options it was created with: a fork is made with the same. */
  private createdWith: SessionOptions = {};

  private constructor(
    readonly id: string,
    readonly backend: SandboxBackend,
    private readonly volume: SandboxVolume,
    private readonly options: ResolvedSessionOptions,
    /** The environment it runs in (`default` unless `environmentName` chose one). */
    readonly environment: Environment,
    private readonly networkChannel?: NetworkChannel,
  ) {
    this.files = new SessionFiles((message, frame) => this.request(message, frame), {
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
    const { signal: _signal, id: _id, ...createdWith } = options;
    session.createdWith = createdWith;
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

  // --- snapshots ---------------------------------------------------------------

  /**
   * Writes the session's state down and keeps running: every context's
   * variables (as its language can keep them: SavedContext.skipped names the
   * rest and why), its working directory and execution count, and the files of
   * /mnt/data and the user site. Running code is waited for (`snapshotWaitMs`),
   * then refused with a TimeoutError; running commands are not kept.
   */
  snapshot(options: SnapshotOptions = {}): Promise<SnapshotInfo> {
    // In each context's queue from this call on: a run asked for after it is not in it.
    return this.quiesced(async (connection) =>
      this.writeSnapshot(options.snapshots ?? (await this.snapshotStore()), connection, options),
    );
  }

  /**
   * A snapshot, then the session ends: nothing of it runs or holds memory until
   * resumeSession(info.id) brings it back (by default under the same session id).
   */
  pause(options: SnapshotOptions = {}): Promise<SnapshotInfo> {
    return this.quiesced(async (connection) => {
      const written = await this.writeSnapshot(options.snapshots ?? (await this.snapshotStore()), connection, options);
      // Closing before the queues let go: nothing asked for after the pause runs in this session. The
      // sandbox's teardown goes on after this resolves (`await session.close()` waits for it); a resume
      // under the same id need not wait, each volume being its own.
      void this.close();
      return written;
    });
  }

  /**
   * Rolls this session back to a snapshot of it (or of another session of the
   * same owner): commands and contexts end, files made since go, and each
   * context comes back as the snapshot had it. The snapshot is checked whole
   * before anything is touched.
   */
  async restore(
    snapshotId: string,
    options: Pick<SnapshotOptions, 'owner' | 'snapshots'> = {},
  ): Promise<RestoreReport> {
    if (this.closing) throw new SessionClosedError(this.id);
    const store = options.snapshots ?? (await this.snapshotStore());
    const manifest = await store.manifest(options.owner ?? this.owner, snapshotId);
    const details = readDetails(manifest);
    await store.verifyParts(manifest);
    return this.quiesced(async () => {
      await this.commandRuns.killAll();
      for (const context of this.contexts.all()) {
        if (context.id !== DEFAULT_CONTEXT) await this.contexts.remove(context).catch(() => undefined);
      }
      await this.sandbox.end({ kind: 'restart' });
      const connection = await this.sandbox.ensure();
      return this.loadState(connection, store.part(manifest, ARCHIVE_PART), details, true, manifest.id);
    });
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
    try {
      await this.forkInto(child);
    } catch (error) {
      await child.close();
      throw error;
    }
    return child;
  }

  /**
   * What fork() does with the session it makes: this session's state streamed
   * into `target`, a fresh session (a server's warm one). Running code is
   * waited for as by snapshot().
   */
  forkInto(target: Session): Promise<RestoreReport> {
    if (target.lastActivity !== target.createdAt) {
      return Promise.reject(new InvalidInputError('forkInto() takes a fresh session.'));
    }
    return this.quiesced(async (connection) => {
      try {
        const saved = await saveContexts(connection, this.liveContexts(connection), this.stateTimeoutMs());
        const source = readArchive(connection, this.archiveLimit(), this.stateTimeoutMs());
        return await target.quiesced((targetConnection) =>
          target.loadState(targetConnection, source, this.details(saved), false, undefined),
        );
      } finally {
        await endState(connection, this.stateTimeoutMs()).catch(() => undefined);
      }
    });
  }

  /**
   * Brings a snapshot into this session, which must be fresh (nothing run,
   * no file moved): what resumeSession does with the session it makes, and what
   * a server does with a pool's warm session. A snapshot that fails its check
   * midway leaves this session to be closed (nothing of it was loaded into a kernel).
   */
  async load(snapshotId: string, options: Pick<SnapshotOptions, 'owner' | 'snapshots'> = {}): Promise<RestoreReport> {
    if (this.closing) throw new SessionClosedError(this.id);
    if (this.lastActivity !== this.createdAt) {
      throw new InvalidInputError(
        'load() takes a fresh session; to roll a used one back to a snapshot, use restore().',
      );
    }
    const store = options.snapshots ?? (await this.snapshotStore());
    const manifest = await store.manifest(options.owner ?? this.owner, snapshotId);
    const details = readDetails(manifest);
    return this.quiesced((connection) =>
      this.loadState(connection, store.part(manifest, ARCHIVE_PART), details, false, manifest.id),
    );
  }

  /** Resumes a snapshot in a new session; see resumeSession. */
  static async resume(snapshotId: string, options: SessionOptions = {}): Promise<Session> {
    const store = options.snapshots ?? (await localSnapshotStore());
    const manifest = await store.manifest(options.owner ?? LOCAL_OWNER, snapshotId);
    const details = readDetails(manifest);
    const session = await Session.create({
      ...(details.environment === 'default' ? {} : { environmentName: details.environment }),
      id: manifest.sessionId,
      ...options,
      snapshots: store,
    });
    try {
      await session.load(manifest.id);
    } catch (error) {
      await session.close();
      throw error;
    }
    return session;
  }

  /** Host-side resource usage of the current sandbox, where the backend measures it. */
  async usage() {
    return (await this.sandbox.current?.sandbox.usage?.()) ?? {};
  }

  // --- internals -------------------------------------------------------------

  private snapshotStore(): Promise<SnapshotStore> {
    if (this.closing) return Promise.reject(new SessionClosedError(this.id));
    return this.createdWith.snapshots ? Promise.resolve(this.createdWith.snapshots) : localSnapshotStore();
  }

  private get owner(): string {
    return this.createdWith.owner ?? LOCAL_OWNER;
  }

  /**
   * Runs `task` once every context's queue has reached it (running code ended,
   * nothing new starts until it is done); a TimeoutError if that takes longer
   * than `snapshotWaitMs`.
   */
  private async quiesced<T>(task: (connection: KernelConnection) => Promise<T>): Promise<T> {
    if (this.closing) throw new SessionClosedError(this.id);
    let release: () => void = () => undefined;
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    const reached = this.contexts.all().map(
      (context) =>
        new Promise<void>((resolve, reject) => {
          this.enqueue(context, async () => {
            resolve();
            await held;
          }).catch(reject);
        }),
    );
    let timer: NodeJS.Timeout | undefined;
    const waitMs = this.options.snapshotWaitMs;
    try {
      await Promise.race([
        Promise.all(reached),
        new Promise<never>((_, reject) => {
          timer = setTimeout(
            () =>
              reject(
                new TimeoutError(
                  `The session was still running code after ${waitMs} ms; a snapshot waits for running code to end. Interrupt it, or try again when it ends (option \`snapshotWaitMs\`).`,
                ),
              ),
            waitMs,
          );
        }),
      ]);
      clearTimeout(timer);
      this.lastActivity = Date.now();
      return await task(await this.sandbox.ensure());
    } finally {
      clearTimeout(timer);
      release();
    }
  }

  private liveContexts(connection: KernelConnection): SessionContext[] {
    return this.contexts.all().filter((context) => context.liveIn(connection));
  }

  private async writeSnapshot(
    store: SnapshotStore,
    connection: KernelConnection,
    options: SnapshotOptions,
  ): Promise<SnapshotInfo> {
    const { maxBytes } = options;
    if (maxBytes !== undefined && !(maxBytes > 0)) throw new SnapshotTooLargeError(Math.max(0, maxBytes || 0));
    const bound =
      maxBytes !== undefined && maxBytes < this.archiveLimit()
        ? { bytes: maxBytes, overflow: () => new SnapshotTooLargeError(maxBytes) }
        : { bytes: this.archiveLimit(), overflow: undefined };
    const writer = store.begin(options.owner ?? this.owner, options.sessionId ?? this.id);
    const timeoutMs = this.stateTimeoutMs();
    try {
      const saved = await saveContexts(connection, this.liveContexts(connection), timeoutMs);
      await writer.part(ARCHIVE_PART, readArchive(connection, bound.bytes, timeoutMs, bound.overflow));
      const details = this.details(saved);
      const manifest = await writer.commit({ ...details });
      return snapshotInfo(manifest, details);
    } catch (error) {
      await writer.discard().catch(() => undefined);
      throw error;
    } finally {
      await endState(connection, timeoutMs).catch(() => undefined);
    }
  }

  private details(contexts: SavedContext[]): SnapshotDetails {
    return {
      environment: this.environment.name,
      contexts,
      notKept: this.commandRuns.all().map((run) => ({
        name: `command ${run.id}: ${run.command.slice(0, 200)}`,
        reason: 'a running process is not kept',
      })),
    };
  }

  /** Streams an archive into `connection`'s sandbox and has each context load its state. */
  private async loadState(
    connection: KernelConnection,
    source: AsyncIterable<Uint8Array>,
    details: SnapshotDetails,
    clean: boolean,
    snapshotId: string | undefined,
  ): Promise<RestoreReport> {
    const timeoutMs = this.stateTimeoutMs();
    try {
      const directory = await writeArchive(connection, source, clean, timeoutMs);
      const contexts: RestoredContext[] = [];
      for (const saved of details.contexts) {
        const context = await this.contexts.restore(saved);
        const { executionCount, ...loaded } = await loadContext(connection, directory, saved, timeoutMs);
        context.executionCount = executionCount;
        contexts.push(loaded);
      }
      const report: RestoreReport = {
        ...(snapshotId ? { snapshotId } : {}),
        contexts,
        notKept: details.notKept,
      };
      this.restored = report;
      return report;
    } finally {
      await endState(connection, timeoutMs).catch(() => undefined);
    }
  }

  /** A kernel writing or reading a large state takes its time: the start timeout bounds each step. */
  private stateTimeoutMs(): number {
    return Math.max(this.options.startTimeoutMs, DEFAULT_REQUEST_TIMEOUT_MS);
  }

  /** An archive holds the sandbox's files and its state files, all within /mnt/data and /tmp. */
  private archiveLimit(): number {
    return this.options.limits.dataBytes + this.options.limits.tmpBytes + ARCHIVE_SLACK_BYTES;
  }

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
