/**
 * A session's state taken out and put back, on the host: a snapshot written
 * to the store (and a pause, which ends the session after it), a snapshot
 * loaded into a fresh session or restored over a used one, and a fork that
 * streams one sandbox's state into another's. Each waits for every context's
 * queue first, so no code runs while state moves; what moves, and how, is
 * session-state.ts.
 */
import { InvalidInputError, SessionClosedError, TimeoutError } from '../errors.js';
import { localSnapshotStore } from '../snapshots/local-snapshots.js';
import { SnapshotTooLargeError } from '../snapshots/snapshot-errors.js';
import type { SnapshotManifest, SnapshotStore, SnapshotWriter } from '../snapshots/snapshot-store.js';
import type { MountedVolume } from '../volumes/session-mounts.js';
import type { CommandRegistry } from './commands.js';
import type { KernelConnection } from './kernel-connection.js';
import { DEFAULT_CONTEXT } from './languages.js';
import { DEFAULT_REQUEST_TIMEOUT_MS, type ResolvedSessionOptions } from './options.js';
import { forkCheckpoint, loadCheckpoint, type PartBound, writeCheckpoint } from './session-checkpoints.js';
import type { SessionContext } from './session-context.js';
import type { SessionContexts } from './session-contexts.js';
import type { SessionSandbox } from './session-sandbox.js';
import {
  ARCHIVE_PART,
  ARCHIVE_SLACK_BYTES,
  type CheckpointDetails,
  endState,
  loadContext,
  pipeContext,
  type RestoredContext,
  type RestoreReport,
  readArchive,
  readDetails,
  type SavedContext,
  type SkippedName,
  type SnapshotDetails,
  type SnapshotInfo,
  type SnapshotKind,
  saveContexts,
  snapshotInfo,
  writeArchive,
} from './session-state.js';
import type { TerminalRegistry } from './terminals.js';

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
  /** A name the snapshot is found by beside its id (E2B's named snapshots: the newest of a name wins). */
  name?: string;
}

/** The owner of a library's snapshots (a server's sessions belong to their key's owner). */
export const LOCAL_OWNER = 'local';

/** A snapshot's manifest and details, read as `owner`; refused if it is not one this version wrote. */
export async function readSnapshot(
  store: SnapshotStore,
  owner: string,
  snapshotId: string,
): Promise<{ manifest: SnapshotManifest; details: SnapshotDetails }> {
  const manifest = await store.manifest(owner, snapshotId);
  return { manifest, details: readDetails(manifest) };
}

/** What the snapshots need of their session. */
export interface SnapshotHost {
  id: string;
  /** The name of the environment the session runs: a resume runs the same. */
  environment: string;
  options: ResolvedSessionOptions;
  contexts: SessionContexts;
  commands: CommandRegistry;
  terminals: TerminalRegistry;
  sandbox: SessionSandbox;
  /** The volumes its sandboxes mount (recorded, not their contents). */
  mounts: MountedVolume[];
  /** The owner and store the session was created with, where it named them. */
  createdWith: { owner?: string; snapshots?: SnapshotStore };
  closed(): boolean;
  /** Whether nothing has been run in the session, nor a file moved, yet: only such a one takes a snapshot's state. */
  fresh(): boolean;
  /** Runs `task` in `context`'s queue, behind what was queued there before. */
  enqueue<T>(context: SessionContext, task: () => Promise<T>): Promise<T>;
  /** The session did something (its idle clock starts again). */
  touch(): void;
  close(): Promise<void>;
  /** What a load, restore or fork brought back (`session.restored`). */
  restored(report: RestoreReport): void;
}

export class SessionSnapshots {
  constructor(private readonly host: SnapshotHost) {}

  /** The owner its snapshots are written for and read as by default. */
  private get owner(): string {
    return this.host.createdWith.owner ?? LOCAL_OWNER;
  }

  /** See Session.snapshot. */
  snapshot(options: SnapshotOptions): Promise<SnapshotInfo> {
    // In each context's queue from this call on: a run asked for after it is not in it.
    return this.quiesced(async (connection) =>
      this.write(options.snapshots ?? (await this.store()), connection, options, true),
    );
  }

  /** See Session.pause. */
  pause(options: SnapshotOptions): Promise<SnapshotInfo> {
    return this.quiesced(async (connection) => {
      const ended =
        "the session was paused, and a terminal's processes are not kept by a pause: open a new terminal once it is resumed";
      // A checkpoint would keep a terminal's processes with no one to read them: they end first.
      if (this.host.sandbox.keepsCheckpoints(connection)) this.host.terminals.endAll(ended);
      const written = await this.write(options.snapshots ?? (await this.store()), connection, options, false);
      this.host.terminals.endAll(ended);
      // Closing before the queues let go: nothing asked for after the pause runs in this session. The
      // sandbox's teardown goes on after this resolves (`await session.close()` waits for it); a resume
      // under the same id need not wait, each volume being its own.
      void this.host.close();
      return written;
    });
  }

  /** See Session.restore. */
  async restore(snapshotId: string, options: Pick<SnapshotOptions, 'owner' | 'snapshots'>): Promise<RestoreReport> {
    if (this.host.closed()) throw new SessionClosedError(this.host.id);
    const store = options.snapshots ?? (await this.store());
    const { manifest, details } = await readSnapshot(store, options.owner ?? this.owner, snapshotId);
    await store.verifyParts(manifest);
    return this.quiesced(async () => {
      await this.host.commands.killAll();
      this.host.terminals.endAll(`the session was restored from snapshot ${snapshotId}, which ends its terminals`);
      for (const context of this.host.contexts.all()) {
        if (context.id !== DEFAULT_CONTEXT) await this.host.contexts.remove(context).catch(() => undefined);
      }
      await this.host.sandbox.end({ kind: 'restart' });
      const connection = await this.host.sandbox.ensure();
      if (details.checkpoint) return this.loadWhole(connection, store, manifest, details, details.checkpoint, true);
      return this.loadState(connection, store.part(manifest, ARCHIVE_PART), details, true, manifest.id);
    });
  }

  /** See Session.load. */
  async load(snapshotId: string, options: Pick<SnapshotOptions, 'owner' | 'snapshots'>): Promise<RestoreReport> {
    if (this.host.closed()) throw new SessionClosedError(this.host.id);
    if (!this.host.fresh()) {
      throw new InvalidInputError(
        'load() takes a fresh session; to roll a used one back to a snapshot, use restore().',
      );
    }
    const store = options.snapshots ?? (await this.store());
    const { manifest, details } = await readSnapshot(store, options.owner ?? this.owner, snapshotId);
    return this.quiesced((connection) =>
      details.checkpoint
        ? this.loadWhole(connection, store, manifest, details, details.checkpoint, false)
        : this.loadState(connection, store.part(manifest, ARCHIVE_PART), details, false, manifest.id),
    );
  }

  /**
   * This session's state streamed into `target`'s, a fresh session's (see Session.forkInto): the
   * files (and the states of contexts other than Python's) as an archive, then, where both
   * sandboxes can, each Python context's state through a pipe (pipeContext), so that its dump,
   * transfer and load overlap.
   */
  streamInto(target: SessionSnapshots): Promise<RestoreReport> {
    if (!target.host.fresh()) return Promise.reject(new InvalidInputError('forkInto() takes a fresh session.'));
    const timeoutMs = this.stateTimeoutMs();
    return this.quiesced((connection) =>
      target.quiesced(async (targetConnection) => {
        if (this.forksWhole(connection, target, targetConnection)) {
          return target.forkedWhole(await this.forkWhole(connection, target, targetConnection), []);
        }
        try {
          const live = this.liveContexts(connection);
          const piped =
            connection.statePipes && targetConnection.statePipes
              ? live.filter((context) => context.language === 'python')
              : [];
          const saved = await saveContexts(
            connection,
            live.filter((context) => !piped.includes(context)),
            timeoutMs,
          );
          const source = readArchive(connection, this.archiveLimit(), timeoutMs);
          return await target.loadState(targetConnection, source, this.details(saved), false, undefined, async () => {
            const loaded: RestoredContext[] = [];
            for (const context of piped) {
              let made: SessionContext | undefined;
              const restore = async () => {
                made = await target.host.contexts.restore(context);
              };
              const options = { maxBytes: this.archiveLimit(), timeoutMs, restore };
              const { executionCount, ...report } = await pipeContext(connection, targetConnection, context, options);
              if (made) made.executionCount = executionCount;
              loaded.push(report);
            }
            return loaded;
          });
        } finally {
          await endState(connection, timeoutMs).catch(() => undefined);
        }
      }),
    );
  }

  /** Whether a fork into `target` can take the whole sandbox: both sessions' backends checkpoint, and are one. */
  private forksWhole(connection: KernelConnection, target: SessionSnapshots, targetConnection: KernelConnection) {
    return (
      this.host.sandbox.keepsCheckpoints(connection) &&
      this.followsNothing() &&
      target.host.sandbox.keepsCheckpoints(targetConnection) &&
      this.host.sandbox.backendName === target.host.sandbox.backendName
    );
  }

  /**
   * Whether no command or terminal of the session runs now. A checkpoint replaces the sandbox, and the
   * session would stop following them: a snapshot or a fork that goes on beside them takes each
   * kernel's state instead (a pause ends them either way).
   */
  private followsNothing(): boolean {
    return this.host.commands.all().length === 0 && this.host.terminals.all().length === 0;
  }

  /** The fork of the whole sandbox (session-checkpoints.ts), what came back in the target. */
  private forkWhole(
    connection: KernelConnection,
    target: SessionSnapshots,
    targetConnection: KernelConnection,
  ): Promise<RestoredContext[]> {
    const saved = this.liveContexts(connection).map((context) => ({ ...context.info(), saved: [], skipped: [] }));
    return forkCheckpoint({
      source: { sandbox: this.host.sandbox, connection, contexts: this.host.contexts },
      target: { sandbox: target.host.sandbox, connection: targetConnection, contexts: target.host.contexts },
      saved,
      archiveBytes: this.archiveLimit(),
      timeoutMs: this.stateTimeoutMs(),
    });
  }

  /** A fork's report in this (the target) session. */
  private forkedWhole(contexts: RestoredContext[], notKept: SkippedName[]): RestoreReport {
    const report: RestoreReport = { kind: 'checkpoint', contexts, notKept };
    this.host.restored(report);
    return report;
  }

  private store(): Promise<SnapshotStore> {
    if (this.host.closed()) return Promise.reject(new SessionClosedError(this.host.id));
    const { snapshots } = this.host.createdWith;
    return snapshots ? Promise.resolve(snapshots) : localSnapshotStore();
  }

  /**
   * Runs `task` once every context's queue has reached it (running code ended,
   * nothing new starts until it is done); a TimeoutError if that takes longer
   * than `snapshotWaitMs`.
   */
  private async quiesced<T>(task: (connection: KernelConnection) => Promise<T>): Promise<T> {
    if (this.host.closed()) throw new SessionClosedError(this.host.id);
    let release: () => void = () => undefined;
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    const reached = this.host.contexts.all().map(
      (context) =>
        new Promise<void>((resolve, reject) => {
          this.host
            .enqueue(context, async () => {
              resolve();
              await held;
            })
            .catch(reject);
        }),
    );
    let timer: NodeJS.Timeout | undefined;
    const waitMs = this.host.options.snapshotWaitMs;
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
      this.host.touch();
      return await task(await this.host.sandbox.ensure());
    } finally {
      clearTimeout(timer);
      release();
    }
  }

  private liveContexts(connection: KernelConnection): SessionContext[] {
    return this.host.contexts.all().filter((context) => context.liveIn(connection));
  }

  /** Writes a snapshot; with `goOn`, a sandbox a checkpoint ended is restored from it (a snapshot, not a pause). */
  private async write(
    store: SnapshotStore,
    connection: KernelConnection,
    options: SnapshotOptions,
    goOn: boolean,
  ): Promise<SnapshotInfo> {
    const { maxBytes } = options;
    if (maxBytes !== undefined && !(maxBytes > 0)) throw new SnapshotTooLargeError(Math.max(0, maxBytes || 0));
    const bound =
      maxBytes !== undefined && maxBytes < this.archiveLimit()
        ? { bytes: maxBytes, overflow: () => new SnapshotTooLargeError(maxBytes) }
        : { bytes: this.archiveLimit(), overflow: undefined };
    const writer = store.begin(options.owner ?? this.owner, options.sessionId ?? this.host.id);
    const timeoutMs = this.stateTimeoutMs();
    if (this.host.sandbox.keepsCheckpoints(connection) && (!goOn || this.followsNothing())) {
      return this.writeWhole(writer, connection, options, bound, goOn);
    }
    try {
      const saved = await saveContexts(connection, this.liveContexts(connection), timeoutMs);
      await writer.part(ARCHIVE_PART, readArchive(connection, bound.bytes, timeoutMs, bound.overflow));
      const details = { ...this.details(saved), ...(options.name !== undefined ? { name: options.name } : {}) };
      const manifest = await writer.commit({ ...details });
      return snapshotInfo(manifest, details);
    } catch (error) {
      await writer.discard().catch(() => undefined);
      throw error;
    } finally {
      await endState(connection, timeoutMs).catch(() => undefined);
    }
  }

  /** A snapshot of the whole sandbox (session-checkpoints.ts): its files, then its backend's checkpoint. */
  private async writeWhole(
    writer: SnapshotWriter,
    connection: KernelConnection,
    options: SnapshotOptions,
    bound: PartBound,
    goOn: boolean,
  ): Promise<SnapshotInfo> {
    const { limits } = this.host.options;
    const contexts = this.liveContexts(connection).map((context) => ({
      ...context.info(),
      saved: [],
      skipped: [],
    }));
    try {
      const checkpoint = await writeCheckpoint({
        sandbox: this.host.sandbox,
        connection,
        writer,
        backend: this.host.sandbox.backendName,
        contexts,
        bound,
        imageBytes: limits.memoryBytes + limits.tmpBytes + ARCHIVE_SLACK_BYTES,
        timeoutMs: this.stateTimeoutMs(),
        goOn,
        adoptInto: this.host.contexts,
      });
      const details: SnapshotDetails = {
        ...this.details(contexts, 'checkpoint'),
        checkpoint,
        ...(options.name !== undefined ? { name: options.name } : {}),
      };
      const manifest = await writer.commit({ ...details });
      return snapshotInfo(manifest, details);
    } catch (error) {
      await writer.discard().catch(() => undefined);
      throw error;
    }
  }

  /** Takes in a snapshot of a whole sandbox: its files, then its checkpoint restored in place of this sandbox. */
  private async loadWhole(
    connection: KernelConnection,
    store: SnapshotStore,
    manifest: SnapshotManifest,
    details: SnapshotDetails,
    checkpoint: CheckpointDetails,
    clean: boolean,
  ): Promise<RestoreReport> {
    const contexts = await loadCheckpoint({
      sandbox: this.host.sandbox,
      connection,
      contexts: this.host.contexts,
      store,
      manifest,
      checkpoint,
      saved: details.contexts,
      backend: this.host.sandbox.backendName,
      clean,
      timeoutMs: this.stateTimeoutMs(),
    });
    const report: RestoreReport = { snapshotId: manifest.id, kind: 'checkpoint', contexts, notKept: details.notKept };
    this.host.restored(report);
    return report;
  }

  private details(contexts: SavedContext[], kind: SnapshotKind = 'kernel-state'): SnapshotDetails {
    return {
      environment: this.host.environment,
      contexts,
      ...(this.host.mounts.length > 0 ? { mounts: this.host.mounts } : {}),
      notKept: [
        ...this.host.commands.all().map((run) => ({
          name: `command ${run.id}: ${run.command.slice(0, 200)}`,
          reason:
            kind === 'checkpoint'
              ? 'its process is kept and runs on, but the session no longer follows it (its output and exit are not reported)'
              : 'a running process is not kept',
        })),
        ...this.host.terminals.all().map((terminal) => ({
          name: `terminal ${terminal.id}`,
          reason: "a terminal's processes are not kept",
        })),
      ],
    };
  }

  /** Streams an archive into `connection`'s sandbox and has each context load its state. */
  /** `piped`: the contexts a fork streams after the archive (streamInto), once the archive's are loaded. */
  private async loadState(
    connection: KernelConnection,
    source: AsyncIterable<Uint8Array>,
    details: SnapshotDetails,
    clean: boolean,
    snapshotId: string | undefined,
    piped?: () => Promise<RestoredContext[]>,
  ): Promise<RestoreReport> {
    const timeoutMs = this.stateTimeoutMs();
    try {
      const directory = await writeArchive(connection, source, clean, timeoutMs);
      const contexts: RestoredContext[] = [];
      for (const saved of details.contexts) {
        const context = await this.host.contexts.restore(saved);
        const { executionCount, ...loaded } = await loadContext(connection, directory, saved, timeoutMs);
        context.executionCount = executionCount;
        contexts.push(loaded);
      }
      contexts.push(...((await piped?.()) ?? []));
      const report: RestoreReport = {
        ...(snapshotId ? { snapshotId } : {}),
        kind: 'kernel-state',
        contexts,
        notKept: details.notKept,
      };
      this.host.restored(report);
      return report;
    } finally {
      await endState(connection, timeoutMs).catch(() => undefined);
    }
  }

  /** A kernel writing or reading a large state takes its time: the start timeout bounds each step. */
  private stateTimeoutMs(): number {
    return Math.max(this.host.options.startTimeoutMs, DEFAULT_REQUEST_TIMEOUT_MS);
  }

  /** An archive holds the sandbox's files and its state files, all within /mnt/data and /tmp. */
  private archiveLimit(): number {
    return this.host.options.limits.dataBytes + this.host.options.limits.tmpBytes + ARCHIVE_SLACK_BYTES;
  }
}
