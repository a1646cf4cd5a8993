/**
 * The contexts of one session: which exist, which context a run goes to, and
 * starting, restarting and removing their kernels in the sandbox. A context's
 * record outlives its kernel: one whose kernel ended on its own is restarted
 * before its next run, and one whose sandbox was replaced is made again in the
 * new sandbox (python is there from the start).
 */
import { randomBytes } from 'node:crypto';
import { AbortError, InvalidInputError, TooManyContextsError, UnknownContextError } from '../errors.js';
import type { KernelConnection } from './kernel-connection.js';
import {
  CONTEXT_ID,
  DEFAULT_CONTEXT,
  isLanguage,
  type Language,
  languageUnavailable,
  parseLanguage,
} from './languages.js';
import { checkEnvironment, checkWorkingDirectory } from './sandbox-inputs.js';
import { type ContextInfo, type CreateContextOptions, SessionContext } from './session-context.js';
import type { SavedContext } from './session-state.js';
import { stateLostIn } from './state-loss.js';

/** What the contexts need of their session. */
export interface ContextHost {
  /** The live sandbox, started if needed; rejects when the session is closed. */
  connection(): Promise<KernelConnection>;
  /** The sandbox now, if any, without starting one. */
  current(): KernelConnection | undefined;
  maxContexts: number;
  startTimeoutMs: number;
  /** The environment's name when it is an image sandcell did not build: a missing language is the image's to add. */
  imageEnvironment?: string;
}

export class SessionContexts {
  private readonly contexts = new Map<string, SessionContext>();

  constructor(private readonly host: ContextHost) {}

  get(id: string): SessionContext | undefined {
    return this.contexts.get(id);
  }

  all(): SessionContext[] {
    return [...this.contexts.values()];
  }

  list(): ContextInfo[] {
    return this.all().map((context) => context.info());
  }

  /**
   * The context a run goes to: the one named, a language's default (made now
   * if missing, started by the run), or python. Throws for an unknown id, a
   * language that contradicts the context, or a full session.
   */
  forRun(options: { context?: unknown; language?: unknown }): SessionContext {
    const language = options.language === undefined ? undefined : parseLanguage(options.language);
    if (options.context !== undefined && (typeof options.context !== 'string' || !CONTEXT_ID.test(options.context))) {
      throw new InvalidInputError('`context` must be a context id: 1 to 64 letters, digits, ".", "-" or "_".');
    }
    const id = (options.context as string | undefined) ?? language ?? DEFAULT_CONTEXT;
    const existing = this.contexts.get(id);
    const contextLanguage = existing?.language ?? (isLanguage(id) ? id : undefined);
    if (contextLanguage === undefined) throw new UnknownContextError(id);
    if (language !== undefined && language !== contextLanguage) {
      throw new InvalidInputError(
        `Context ${JSON.stringify(id)} runs ${contextLanguage}, not ${language}; give one of \`context\` and \`language\`, or both agreeing.`,
      );
    }
    return existing ?? this.add(new SessionContext(id, contextLanguage));
  }

  /** Creates a context with a fresh kernel and a new id. */
  async create(options: CreateContextOptions): Promise<ContextInfo> {
    if (typeof options !== 'object' || options === null) {
      throw new InvalidInputError('createContext takes an object: { language, cwd?, env? }.');
    }
    const language = parseLanguage(options.language);
    const cwd = checkWorkingDirectory(options.cwd);
    const env = checkEnvironment(options.env);
    if (options.signal?.aborted) throw new AbortError('The context creation was aborted before it started.');
    const context = this.add(new SessionContext(this.newId(language), language, cwd, env));
    const starting = this.ensureLive(context);
    try {
      await abortable(starting, options.signal);
    } catch (error) {
      this.forget(context, error as Error);
      // A kernel that comes up after an abort is not wanted.
      void starting.then(
        (connection) => connection.request({ type: 'context-remove', context: context.id }, this.host.startTimeoutMs),
        () => undefined,
      );
      throw error;
    }
    return context.info();
  }

  /**
   * The context a snapshot names, with its kernel up: the one of that id (its
   * language must agree), else made with that id, as the snapshot had it.
   */
  async restore(saved: {
    id: string;
    language: Language;
    cwd?: string;
    env?: Record<string, string>;
  }): Promise<SessionContext> {
    const existing = this.contexts.get(saved.id);
    if (existing && existing.language !== saved.language) {
      throw new InvalidInputError(
        `The snapshot's context ${JSON.stringify(saved.id)} ran ${saved.language}, not ${existing.language}.`,
      );
    }
    const context = existing ?? this.add(new SessionContext(saved.id, saved.language, saved.cwd, saved.env));
    await this.ensureLive(context);
    return context;
  }

  /**
   * A context whose kernel came back with its whole sandbox (a checkpoint restored into `connection`):
   * taken up as the snapshot had it, its count of runs included, with nothing lost to report.
   */
  adopt(saved: SavedContext, connection: KernelConnection): SessionContext {
    const existing = this.contexts.get(saved.id);
    const context =
      existing && existing.language === saved.language
        ? existing
        : this.add(new SessionContext(saved.id, saved.language, saved.cwd), true);
    context.started(connection);
    context.executionCount = saved.executionCount;
    context.stateLossNote = undefined;
    return context;
  }

  /** The sandbox where `context`'s kernel runs, starting (or restarting) the kernel first if needed. */
  async ensureLive(context: SessionContext): Promise<KernelConnection> {
    for (;;) {
      if (context.removal) throw context.removal;
      const connection = await this.host.connection();
      if (context.liveIn(connection)) return connection;
      context.starting ??= this.startKernel(context, connection).finally(() => {
        context.starting = undefined;
      });
      await context.starting;
      if (context.liveIn(connection)) return connection;
      // The sandbox ended while the kernel started: go again in the next one.
    }
  }

  /** Replaces a context's kernel with a fresh one; a run in it ends with its state lost. */
  async restart(context: SessionContext): Promise<ContextInfo> {
    const connection = await this.host.connection();
    if (context.connection === connection && connection.alive) {
      context.running?.lose({
        name: 'KernelRestarted',
        reason: `The context was restarted (restartContext) while this ran: ${stateLostIn(context.id)}`,
      });
      await this.restartKernel(context, connection, this.host.startTimeoutMs);
    } else {
      await this.ensureLive(context);
    }
    context.stateLossNote = undefined;
    return context.info();
  }

  /** Ends a context and its kernel; a run in it ends with its state lost, runs queued in it fail. */
  async remove(context: SessionContext): Promise<void> {
    this.forget(context);
    context.running?.lose({
      name: 'ContextRemoved',
      reason: `The context was removed (removeContext) while this ran: ${stateLostIn(context.id)}`,
    });
    const connection = this.host.current();
    await context.starting?.catch(() => undefined);
    if (connection?.alive && context.connection === connection) {
      await connection.request({ type: 'context-remove', context: context.id }, this.host.startTimeoutMs);
    }
  }

  /** Replaces `context`'s kernel with a fresh one (a running execution is the caller's to end). */
  async restartKernel(context: SessionContext, connection: KernelConnection, timeoutMs: number): Promise<void> {
    await connection.request({ type: 'context-restart', context: context.id }, timeoutMs);
    context.started(connection);
  }

  /** Gone from the session: its queued runs fail with `reason`. */
  forget(context: SessionContext, reason: Error = new UnknownContextError(context.id)): void {
    context.removal ??= reason;
    if (this.contexts.get(context.id) === context) this.contexts.delete(context.id);
  }

  /** A new sandbox started: its python context is there from the start. */
  sandboxStarted(connection: KernelConnection): void {
    const python = this.contexts.get(DEFAULT_CONTEXT) ?? this.add(new SessionContext(DEFAULT_CONTEXT, 'python'), true);
    python.started(connection);
  }

  private async startKernel(context: SessionContext, connection: KernelConnection): Promise<void> {
    const timeoutMs = this.host.startTimeoutMs;
    if (context.connection === connection && connection.alive) {
      try {
        await this.restartKernel(context, connection, timeoutMs);
        return;
      } catch (error) {
        // A supervisor that forgot the ended kernel's context has it made anew below.
        if (!(error instanceof UnknownContextError)) throw error;
      }
    }
    const available = connection.languages;
    if (!(context.language in available))
      throw languageUnavailable(context.language, Object.keys(available), this.host.imageEnvironment);
    await connection.request(
      {
        type: 'context-create',
        context: context.id,
        language: context.language,
        ...(context.cwd === undefined ? {} : { cwd: context.cwd }),
        ...(context.env === undefined ? {} : { env: context.env }),
      },
      timeoutMs,
    );
    context.started(connection);
  }

  private add(context: SessionContext, evenIfFull = false): SessionContext {
    if (!evenIfFull && this.contexts.size >= this.host.maxContexts)
      throw new TooManyContextsError(this.host.maxContexts);
    this.contexts.set(context.id, context);
    return context;
  }

  private newId(language: Language): string {
    for (;;) {
      const id = `${language}-${randomBytes(3).toString('hex')}`;
      if (!this.contexts.has(id)) return id;
    }
  }
}

/** `promise`, or an AbortError as soon as `signal` aborts. */
function abortable<T>(promise: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) return promise;
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(new AbortError('The context creation was aborted.'));
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}
