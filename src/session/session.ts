/**
 * A Session is one sandbox with a stateful Python kernel: run code, move
 * files, reset, restart, close. Runs are queued (one at a time, in order);
 * infrastructure failures throw typed errors, errors in user code are data.
 */
import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { resolveBackend } from '../backends/select.js';
import type { SandboxBackend, SandboxExit, SandboxVolume } from '../backends/spec.js';
import { AbortError, InvalidInputError, SandboxStartError, SandcellError, SessionClosedError } from '../errors.js';
import { KERNEL_PROTOCOL_VERSION } from '../kernel/index.js';
import type { Execution, RunOptions } from './execution.js';
import { SessionFiles } from './files.js';
import { describeExit, KernelConnection } from './kernel-connection.js';
import type { KernelRequest, ReplyTo } from './kernel-protocol.js';
import {
  DEFAULT_REQUEST_TIMEOUT_MS,
  type ResolvedSessionOptions,
  resolveSessionOptions,
  type SessionOptions,
} from './options.js';
import { OutputCollector } from './output-collector.js';
import { messageLimits } from './output-limits.js';

const SESSION_ID = /^[A-Za-z0-9_-]{1,64}$/;
const STATE_LOST = "the session's state (variables, imports) was lost. Files in /mnt/data were kept.";
/** An out-of-memory death names the files when they hold at least this share of the memory budget. */
const DATA_SHARE_WORTH_NOTING = 0.25;

/** An execution in flight: what `reset()`, `restart()` and aborts act on. */
interface Running {
  interrupt(): void;
}

export class Session {
  readonly files: SessionFiles;
  private connection?: KernelConnection;
  private starting?: Promise<KernelConnection>;
  private readonly retired = new WeakSet<KernelConnection>();
  private queue: Promise<unknown> = Promise.resolve();
  private running?: Running;
  private closing?: Promise<void>;
  private stateLossNote?: string;
  private executionCount = 0;
  private lastActivity = Date.now();

  private constructor(
    readonly id: string,
    readonly backend: SandboxBackend,
    private readonly volume: SandboxVolume,
    private readonly options: ResolvedSessionOptions,
  ) {
    this.files = new SessionFiles((message) => this.request(message), options.fileTransferBytes);
  }

  /** Starts a sandbox and waits until its kernel is ready. */
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

  /** When the session last ran code or moved a file (ms since the epoch). */
  get lastActivityAt(): number {
    return this.lastActivity;
  }

  get busy(): boolean {
    return this.running !== undefined;
  }

  /** Runs code. Runs queue behind each other; a run waits for the one before it. */
  run(code: string, options: RunOptions = {}): Promise<Execution> {
    if (typeof code !== 'string') return Promise.reject(new InvalidInputError('Code must be a string.'));
    const size = Buffer.byteLength(code, 'utf8');
    if (size > this.options.maxCodeBytes) {
      return Promise.reject(
        new InvalidInputError(
          `The code is ${size} bytes; the limit is ${this.options.maxCodeBytes} (option \`maxCodeBytes\`). Put large data in a file with session.files.write().`,
        ),
      );
    }
    if (options.timeoutMs !== undefined && !(Number.isFinite(options.timeoutMs) && options.timeoutMs > 0)) {
      return Promise.reject(new InvalidInputError('`timeoutMs` must be a positive number.'));
    }
    if (this.closing) return Promise.reject(new SessionClosedError(this.id));
    return this.enqueue(async () => {
      try {
        return await this.execute(code, options);
      } finally {
        // The code may have written or removed files: a volume sharing a server-wide budget adjusts now.
        await this.volume.usageChanged?.().catch(() => undefined);
      }
    });
  }

  /** Clears all variables and imports (the files stay). Interrupts a running execution first. */
  async reset(): Promise<void> {
    if (this.closing) throw new SessionClosedError(this.id);
    this.running?.interrupt();
    await this.enqueue(async () => {
      await this.request({ type: 'reset' });
      this.executionCount = 0;
    });
  }

  /** Replaces the kernel with a fresh one (state is lost, files stay). A running execution ends with an error. */
  async restart(): Promise<void> {
    if (this.closing) throw new SessionClosedError(this.id);
    const current = this.connection;
    if (current) {
      this.retired.add(current);
      await current.kill();
    }
    await this.ensureConnection();
    this.executionCount = 0;
  }

  /** Stops every process of the session and removes its files. Idempotent. */
  close(): Promise<void> {
    this.closing ??= (async () => {
      const connection = this.connection;
      await this.starting?.catch(() => undefined);
      for (const candidate of [connection, this.connection]) {
        if (!candidate) continue;
        this.retired.add(candidate);
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

  private enqueue<T>(task: () => Promise<T>): Promise<T> {
    const result = this.queue.then(() => {
      if (this.closing) throw new SessionClosedError(this.id);
      return task();
    });
    this.queue = result.catch(() => undefined);
    return result;
  }

  private ensureConnection(): Promise<KernelConnection> {
    if (this.closing) return Promise.reject(new SessionClosedError(this.id));
    if (this.connection?.alive && !this.starting) return Promise.resolve(this.connection);
    if (!this.starting) {
      this.starting = this.startKernel().finally(() => {
        this.starting = undefined;
      });
    }
    return this.starting;
  }

  private async startKernel(): Promise<KernelConnection> {
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
      const dataNote = connection.exit?.reason === 'out-of-memory' ? await this.dataShareNote(0) : '';
      throw new SandboxStartError(
        `The sandbox did not start: ${(error as Error).message}${dataNote ? ` ${capitalize(dataNote)}` : ''} Run \`sandcell doctor\` to check this machine.`,
        { cause: error },
      );
    }
    void connection.exited.then((exit) => {
      // A death during a run is reported by that run; this is for deaths while idle.
      if (this.retired.has(connection) || this.closing || this.running) return;
      this.stateLossNote = `The kernel stopped between runs (${describeExit(exit)}), so it was restarted and ${STATE_LOST}`;
    });
    this.connection = connection;
    return connection;
  }

  private async request<Request extends KernelRequest>(request: Request): Promise<ReplyTo<Request>> {
    const connection = await this.ensureConnection();
    this.lastActivity = Date.now();
    return connection.request(request, DEFAULT_REQUEST_TIMEOUT_MS);
  }

  private async deathCause(connection: KernelConnection, exit: SandboxExit): Promise<string> {
    if (connection.violationReason) {
      return `The kernel broke the wire protocol (${connection.violationReason}; user code may have written to the kernel's private channel), so it was killed.`;
    }
    if (exit.reason === 'out-of-memory') {
      const dataNote = await this.dataShareNote(DATA_SHARE_WORTH_NOTING);
      return `The kernel died: it was ${describeExit(exit)} (${formatBytes(this.options.limits.memoryBytes)}); ${dataNote || 'use less memory or raise `limits.memoryBytes`.'}`;
    }
    return `The kernel died (${describeExit(exit)}).`;
  }

  /**
   * Files in /mnt/data are RAM in the session's memory budget and outlive the
   * kernel: when they hold at least `share` of it, say so (empty otherwise).
   */
  private async dataShareNote(share: number): Promise<string> {
    const used = await this.volume.usedBytes?.().catch(() => undefined);
    const budget = this.options.limits.memoryBytes;
    if (used === undefined || used < share * budget || used === 0) return '';
    return `files in /mnt/data use ${formatBytes(used)} of the session's ${formatBytes(budget)} memory budget; remove files or raise \`limits.memoryBytes\`.`;
  }

  private async execute(code: string, options: RunOptions): Promise<Execution> {
    if (options.signal?.aborted) throw new AbortError('The run was aborted before it started.');
    const stateLostBefore = this.stateLossNote;
    this.stateLossNote = undefined;
    const connection = await this.ensureConnection();
    this.lastActivity = Date.now();
    const started = performance.now();
    const timeoutMs = options.timeoutMs ?? this.options.timeoutMs;
    const collector = new OutputCollector(this.options.outputBytes, this.options.resultBytes, options);
    const id = connection.newId();

    return new Promise<Execution>((resolve, reject) => {
      let timedOut = false;
      let interrupted = false;
      let finished = false;
      let graceTimer: NodeJS.Timeout | undefined;

      /** Ends the run's timers and subscriptions; false when it had already ended. */
      const settle = (): boolean => {
        if (finished) return false;
        finished = true;
        clearTimeout(timeoutTimer);
        clearTimeout(graceTimer);
        unsubscribe();
        options.signal?.removeEventListener('abort', onAbort);
        this.running = undefined;
        return true;
      };

      const finish = (execution: Omit<Execution, 'stdout' | 'stderr' | 'results' | 'durationMs'>): void => {
        if (!settle()) return;
        this.lastActivity = Date.now();
        const lostReason = execution.stateLostReason ?? stateLostBefore;
        resolve({
          ...execution,
          stdout: collector.stdout,
          stderr: collector.stderr,
          results: collector.results,
          durationMs: Math.round((performance.now() - started) * 1000) / 1000,
          ...(lostReason ? { stateLost: true, stateLostReason: lostReason } : {}),
          ...(collector.truncated || execution.outputTruncated ? { outputTruncated: true } : {}),
        });
      };

      const interrupt = (): void => {
        if (interrupted || finished) return;
        interrupted = true;
        connection.send({ type: 'interrupt', id });
        graceTimer = setTimeout(() => {
          // The code ignored the interrupt: end the whole sandbox and start afresh.
          this.retired.add(connection);
          void connection.kill();
        }, this.options.interruptGraceMs);
      };

      const timeoutTimer = setTimeout(() => {
        timedOut = true;
        interrupt();
      }, timeoutMs);
      const onAbort = (): void => interrupt();
      options.signal?.addEventListener('abort', onAbort, { once: true });
      this.running = { interrupt };

      const unsubscribe = connection.subscribe(id, (event, messageBytes) => {
        switch (event.type) {
          case 'stream':
            collector.stream(event.name, event.text);
            break;
          case 'result':
            collector.result('execute_result', event.data, event.metadata, messageBytes);
            break;
          case 'display':
            collector.result('display_data', event.data, event.metadata, messageBytes);
            break;
          case 'message-dropped':
            collector.dropped();
            break;
          case 'error':
            collector.fail(event);
            break;
          case 'execution-end': {
            this.executionCount = event.executionCount ?? this.executionCount + 1;
            if (timedOut) {
              collector.error = {
                name: 'TimeoutError',
                value: `Execution exceeded the time limit of ${timeoutMs / 1000} s and was interrupted; the session's state was kept.`,
                traceback: collector.error?.traceback ?? [],
              };
            }
            finish({
              status: timedOut ? 'timeout' : collector.error ? 'error' : 'ok',
              ...(collector.error ? { error: collector.error } : {}),
              executionCount: this.executionCount,
              outputTruncated: event.outputTruncated,
            });
            break;
          }
        }
      });

      void connection.exited.then(async (exit) => {
        if (finished) return;
        if (this.closing) {
          if (settle()) reject(new SessionClosedError(this.id));
          return;
        }
        this.retired.add(connection);
        const cause = timedOut || interrupted ? '' : await this.deathCause(connection, exit);
        if (finished) return;
        this.executionCount += 1;
        const reason = timedOut
          ? `Execution exceeded the time limit of ${timeoutMs / 1000} s and did not stop when interrupted, so the kernel was killed and restarted: ${STATE_LOST}`
          : interrupted
            ? `The execution was interrupted but did not stop, so the kernel was killed and restarted: ${STATE_LOST}`
            : `${cause} The kernel was restarted: ${STATE_LOST}`;
        finish({
          status: timedOut ? 'timeout' : 'error',
          error: { name: timedOut ? 'TimeoutError' : 'KernelDied', value: reason, traceback: [] },
          executionCount: this.executionCount,
          stateLostReason: reason,
        });
        // Have a fresh kernel ready for the next run.
        void this.ensureConnection().catch(() => undefined);
      });

      connection.send({ type: 'execute', id, code });
    });
  }
}

function capitalize(text: string): string {
  return text.charAt(0).toUpperCase() + text.slice(1);
}

function formatBytes(bytes: number): string {
  const units = ['bytes', 'KiB', 'MiB', 'GiB', 'TiB'];
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  return `${Number.isInteger(value) ? value : value.toFixed(1)} ${units[unit]}`;
}

/** Creates a session: a fresh sandbox with a ready kernel. */
export function createSession(options: SessionOptions = {}): Promise<Session> {
  return Session.create(options);
}
