/**
 * SessionRegistry: the server's sessions, each owned by one API key. It hands
 * sessions out from the pool, finds them by id or by a client-chosen name
 * (Azure identifiers, MCP session names), applies the per-key limits, counts
 * executions and commands in flight for a graceful shutdown, and forgets
 * sessions the pool closed for idling (the pool owns idle reaping and its
 * timeout). Shell commands go through `commands` (registry-commands.ts).
 */
import { performance } from 'node:perf_hooks';
import type { Logger } from 'pino';
import { InvalidInputError, SandcellError } from '../../errors.js';
import type { NetworkOption } from '../../network/network-option.js';
import type { Execution, RunOptions } from '../../session/execution.js';
import type { SessionPool } from '../../session/pool.js';
import type { Session } from '../../session/session.js';
import type { RestoreReport } from '../../session/session-state.js';
import type { Owner } from './auth.js';
import type { Cluster } from './cluster.js';
import { SessionElsewhereError, SessionNotFoundError, ShuttingDownError } from './errors.js';
import { ImageStore } from './image-store.js';
import type { ManagedSession, SessionSource } from './managed-session.js';
import type { Metrics } from './metrics.js';
import { type NetworkPermission, permittedNetwork } from './network-permission.js';
import type { OutputPublisher, PublishedFile } from './output-publisher.js';
import type { PausedRecord, PausedSessions } from './paused-sessions.js';
import type { RateLimiter } from './rate-limiter.js';
import { RegistryCommands } from './registry-commands.js';
import { Admission } from './session-admission.js';
import { SessionFiles } from './session-files.js';
import { SessionRecords } from './session-records.js';
import { SessionSnapshots } from './session-snapshots.js';

export interface RegistryOptions {
  pool: SessionPool;
  metrics: Metrics;
  logger: Logger;
  rateLimiter: RateLimiter;
  maxSessions: number;
  sessionsPerOwner: number;
  defaultTimeoutMs: number;
  maxExecutionMs: number;
  maxCodeBytes: number;
  /** Executions that may wait in one session behind the running one. */
  maxQueuedExecutions: number;
  /** What network a key may ask for (the operator's bound). @default 'none' */
  networkPermission?: NetworkPermission;
  /** Where sessions pause to, and the records that find them again. */
  paused: PausedSessions;
  /** What an idle session becomes: paused (resumed at its next request) or closed. */
  onIdle: 'pause' | 'close';
  /** How long a shutdown gives the pauses of the live sessions, after the running work. */
  pauseGraceMs: number;
  /** How long paused sessions and snapshots are kept; older ones are deleted (hourly, and soon after start). */
  snapshotRetentionMs: number;
  /** What one owner's snapshots (paused sessions' included) may take in the store. */
  snapshotBytesPerOwner: number;
  /** Publishes what executions write, for sessions that ask (or all, with `publishOutputs`). */
  publisher?: OutputPublisher;
  /** Whether a session publishes when it does not say. */
  publishOutputs?: boolean;
  /** The nodes sharing the store, when this server is one of several (--advertise-url). */
  cluster?: Cluster;
}

/** An execution as the server answers it: with the files it wrote, published, when its session publishes. */
export type ServerExecution = Execution & { files?: PublishedFile[] };

export interface ExecuteOptions extends Omit<RunOptions, 'timeoutMs'> {
  timeoutMs?: number;
  /** The execution already passed `admit()`. */
  admitted?: boolean;
}

const SWEEP_INTERVAL_MS = 5_000;
/** An id a front door chooses: lower case, as object keys are (paused-sessions.ts). */
const SESSION_ID = /^[a-z0-9_-]{1,64}$/;

/** How long a request waits for the record of a named session another node is starting. */
const NAMED_START_WAIT_MS = 15_000;
export class SessionRegistry {
  private readonly byId = new Map<string, ManagedSession>();
  private readonly byName = new Map<string, Promise<ManagedSession>>();
  /** Scopes (MCP connections) with sessions that may be paused in the store: removeScope deletes those. */
  private readonly pausedScopes = new Set<string>();
  private readonly bySession = new WeakMap<Session, ManagedSession>();
  /** Resumes under way, by owner and id: two requests for a paused session share one. */
  private readonly resuming = new Map<string, Promise<ManagedSession>>();
  private draining = false;
  /** Executions in `execute()` now. */
  private inFlight = 0;
  /** Executions and commands someone waits for, now: what a graceful shutdown waits for. */
  private working = 0;
  private drained?: () => void;
  private shuttingDown = false;
  private readonly sweeper: NodeJS.Timeout;
  /** The one path for shell commands in managed sessions, for every front door. */
  readonly commands: RegistryCommands;
  /** Snapshots taken, restored, listed and deleted within the key's quota, and their retention. */
  readonly snapshots: SessionSnapshots;
  /** Published outputs, imports, uploads and upload links. */
  readonly files: SessionFiles;
  /** New sessions, executions and other work, let in within the limits. */
  private readonly admission: Admission;
  /** What the store says of each session: its marker, its pause, its removal. */
  private readonly records: SessionRecords;

  constructor(private readonly options: RegistryOptions) {
    this.commands = new RegistryCommands({
      metrics: options.metrics,
      limits: options,
      admitWork: (entry) => this.admitUpload(entry),
      track: (work) => this.track(work, 'command'),
    });
    this.snapshots = new SessionSnapshots({
      ...options,
      admitWork: (entry) => this.admitUpload(entry),
      track: (work, what) => this.track(work, what),
    });
    this.files = new SessionFiles(options);
    this.records = new SessionRecords(options);
    this.admission = new Admission({
      ...options,
      held: () => this.byId.size,
      heldBy: (owner) => this.countOwned(owner),
      shuttingDown: () => this.shuttingDown,
    });
    this.sweeper = setInterval(() => this.sweep(), SWEEP_INTERVAL_MS);
    this.sweeper.unref();
    options.pool.onIdleClose(async (session) => {
      const entry = this.bySession.get(session);
      if (!entry || this.byId.get(entry.id) !== entry) return;
      // A failed idle pause ends the session all the same (the pool closes it), with a record that says why.
      if (options.onIdle === 'pause') await this.pause(entry, 'idle').catch(() => undefined);
      else this.forget(entry, 'idle');
    });
  }

  /** Sessions alive, and executions running. */
  get stats(): { live: number; running: number; bySource: Record<SessionSource, number> } {
    this.sweep();
    const bySource: Record<SessionSource, number> = { v1: 0, azure: 0, mcp: 0, conversation: 0, e2b: 0, jupyter: 0 };
    for (const entry of this.byId.values()) bySource[entry.source]++;
    return { live: this.byId.size, running: this.inFlight, bySource };
  }

  get isShuttingDown(): boolean {
    return this.shuttingDown;
  }

  /** Draining: going away (a SIGTERM came), while it may still serve as before for --drain-delay. */
  get isDraining(): boolean {
    return this.draining || this.shuttingDown;
  }

  /** Says the node is going away (/readyz answers 503; peers stop sending it new sessions), and changes nothing else. */
  beginDrain(): void {
    this.draining = true;
    void this.options.cluster?.announce();
  }

  /** An id a front door hands out (a UUID, a sandbox's), made this node's in a cluster: a peer then forwards its requests here. */
  ownId(id: string): string {
    return this.options.cluster?.own(id) ?? id;
  }

  /** Whether this node holds the session with this id live now (any owner's; one being paused is not). */
  holds(id: string): boolean {
    const entry = this.byId.get(id);
    return entry !== undefined && !entry.session.closed && !entry.pausing;
  }

  /**
   * Where the owner's session called `name` in `scope` is, for a request that names it so (an Azure
   * identifier): held live here, or the id the store's name index gives (none for a new name).
   */
  async whereNamed(owner: Owner, scope: string, name: string): Promise<{ held: true } | { held: false; id?: string }> {
    const entry = await this.byName.get(nameKey(owner.id, scope, name))?.catch(() => undefined);
    if (entry && this.byId.get(entry.id) === entry && this.holds(entry.id)) return { held: true };
    const record = await this.options.paused.findByName(owner.id, scope, name);
    return record ? { held: false, id: record.id } : { held: false };
  }

  /** Resolves once the session with this id is not being paused (paused, or its pause failed). */
  async settled(id: string): Promise<void> {
    await this.byId.get(id)?.pausing?.catch(() => undefined);
  }

  /**
   * Once the sessions of `scope` (an MCP connection's) being paused are paused: true. False at once
   * when one of them is live and not being paused (still working, in a drain: its pause comes later).
   */
  async settledScope(scope: string): Promise<boolean> {
    const entries = [...this.byId.values()].filter((entry) => entry.scope === scope && !entry.session.closed);
    if (entries.some((entry) => entry.pausing === undefined)) return false;
    await Promise.all(entries.map((entry) => entry.pausing?.catch(() => undefined)));
    return true;
  }

  /** The records of MCP connections, kept beside the paused sessions (paused-sessions.ts). */
  get connections(): Pick<PausedSessions, 'keepConnection' | 'findConnection' | 'forgetConnection'> {
    return this.options.paused;
  }

  /** Whether a new session fits under --max-sessions now. */
  hasRoom(): boolean {
    return this.byId.size + this.admission.starting < this.options.maxSessions;
  }

  /** This server's name among the nodes sharing its store (SANDCELL_NODE_NAME, else the host name). */
  get node(): string {
    return this.options.paused.node;
  }

  /** The most sessions this server holds (--max-sessions). */
  get maxSessions(): number {
    return this.options.maxSessions;
  }

  /** A new session for `owner`, within the owner's and the server's limits. */
  async create(
    owner: Owner,
    source: SessionSource,
    naming: {
      id?: string;
      name?: string;
      scope?: string;
      environment?: string;
      network?: NetworkOption;
      publishOutputs?: boolean;
      /** What its front door keeps with it, in its marker from the start (ManagedSession.keep). */
      keep?: Record<string, unknown>;
    } = {},
  ) {
    if (naming.id !== undefined && (!SESSION_ID.test(naming.id) || this.byId.has(naming.id))) {
      throw new InvalidInputError(`Not a free session id: ${JSON.stringify(naming.id)}.`);
    }
    if (naming.publishOutputs && !this.options.publisher) {
      throw new InvalidInputError('This server does not publish outputs.');
    }
    // Within the operator's bound, or a 403 before any session is counted or started.
    const network = permittedNetwork(naming.network, this.options.networkPermission ?? 'none');
    const session = await this.acquire(owner, {
      ...(naming.environment !== undefined ? { environment: naming.environment } : {}),
      ...(network !== undefined ? { network } : {}),
    });
    const entry = this.register(session, owner, source, {
      ...naming,
      id: naming.id ?? this.options.cluster?.newSessionId() ?? session.id,
      publishOutputs: naming.publishOutputs ?? this.options.publishOutputs === true,
    });
    await this.files.watch(entry);
    return entry;
  }

  /** A session from the pool, within the owner's and the server's limits. */
  private async acquire(owner: Owner, options: { environment?: string; network?: NetworkOption }): Promise<Session> {
    this.sweep();
    return this.admission.acquire(owner, options);
  }

  private register(
    session: Session,
    owner: Owner,
    source: SessionSource,
    naming: { id: string; name?: string; scope?: string; keep?: Record<string, unknown>; publishOutputs?: boolean },
  ): ManagedSession {
    const entry: ManagedSession = {
      id: naming.id,
      owner,
      source,
      ...(naming.name !== undefined ? { name: naming.name, scope: naming.scope ?? source } : {}),
      ...(naming.keep !== undefined ? { keep: naming.keep } : {}),
      ...(naming.publishOutputs ? { publishOutputs: true } : {}),
      session,
      createdAt: Date.now(),
      images: new ImageStore(),
      executions: 0,
      backgroundCommands: new Map(),
      inFlight: 0,
    };
    this.byId.set(entry.id, entry);
    this.bySession.set(session, entry);
    // Said if this process ends without pausing it (a crash, kill -9): its next request is told.
    this.records.markLive(entry);
    this.options.metrics.sessionsCreated.inc({ api: source });
    this.options.logger.info({ session: entry.id, owner: owner.label, source, name: naming.name }, 'session created');
    return entry;
  }

  /**
   * The owner's session with this id, resumed first if it is paused (here or by
   * a server before a restart) or being paused now. Another owner's session is
   * "not found"; a session whose pause failed is "lost" (410).
   */
  async open(owner: Owner, id: string): Promise<ManagedSession> {
    const entry = this.byId.get(id);
    if (entry && entry.owner.id !== owner.id) throw new SessionNotFoundError(id);
    if (entry?.pausing) await entry.pausing.catch(() => undefined);
    else if (entry && !entry.session.closed) return entry;
    else if (entry) {
      // Closed, not paused, behind the registry's back: gone, and its record with it.
      this.forget(entry, 'closed');
      await this.records.written(entry);
      throw new SessionNotFoundError(id);
    }
    const live = this.byId.get(id);
    if (live && live.owner.id === owner.id && !live.session.closed && !live.pausing) return live;
    const key = `${owner.id}\u0000${id}`;
    let resuming = this.resuming.get(key);
    if (!resuming) {
      resuming = this.resume(owner, id).finally(() => this.resuming.delete(key));
      this.resuming.set(key, resuming);
    }
    return resuming;
  }

  /** Proves the store of paused sessions works (server start, with `--store`); its location. */
  async checkStore(): Promise<string> {
    return (await this.options.paused.check()).location;
  }

  /** Proves published outputs' links work on the store (server start, with `--publish-outputs`). */
  async checkLinks(): Promise<void> {
    try {
      await this.options.publisher?.check();
    } catch (error) {
      const { objects } = await this.options.paused.store();
      throw new InvalidInputError(`Cannot publish outputs to ${objects.location}: ${(error as Error).message}`);
    }
  }

  /** The owner's paused sessions (live ones are `list`). */
  async listPaused(owner: Owner): Promise<PausedRecord[]> {
    // A live session's record is its marker (session-records.ts), not a paused session.
    return (await this.options.paused.list(owner.id)).filter((record) => !this.find(owner, record.id));
  }

  /** The paused session with this id, if the owner has one. */
  async findPaused(owner: Owner, id: string): Promise<PausedRecord | undefined> {
    if (this.find(owner, id)) return undefined;
    return this.options.paused.find(owner.id, id);
  }

  /**
   * The owner's paused session with this id as the store has it now, to be resumed: undefined when
   * there is none (or it is live here); SessionLostError when its record says its state is gone,
   * SessionElsewhereError when it is live on another server.
   */
  async resumable(owner: Owner, id: string): Promise<PausedRecord | undefined> {
    const record = await this.findPaused(owner, id);
    if (!record || record.snapshotId !== undefined) return record;
    throw await this.records.lost(record);
  }

  /** Deletes a paused session and its snapshot; false when there is none. */
  async removePaused(owner: Owner, id: string): Promise<boolean> {
    const record = await this.options.paused.find(owner.id, id);
    if (!record) return false;
    await this.options.paused.remove(owner.id, record);
    this.options.logger.info({ session: id, owner: owner.label }, 'paused session deleted');
    return true;
  }

  /**
   * Pauses a live session: its state goes to a snapshot and its sandbox ends;
   * its next request resumes it. A pause refused while the session still runs
   * (code that does not end in time) leaves it live; one that fails with the
   * sandbox gone leaves a record that says the session was lost.
   */
  pause(entry: ManagedSession, reason: 'idle' | 'shutdown' | 'requested'): Promise<PausedRecord> {
    entry.pausing ??= this.pauseNow(entry, reason).catch((error) => {
      entry.pausing = undefined;
      throw error;
    });
    return entry.pausing;
  }

  private async pauseNow(entry: ManagedSession, reason: 'idle' | 'shutdown' | 'requested'): Promise<PausedRecord> {
    const base = this.records.base(entry, reason);
    const started = performance.now();
    try {
      const info = await this.snapshots.withinQuota(entry.owner, async (maxBytes) =>
        entry.session.pause({
          owner: entry.owner.id,
          sessionId: entry.id,
          snapshots: await this.options.paused.snapshots(),
          maxBytes,
        }),
      );
      const record: PausedRecord = { ...base, pausedAt: new Date().toISOString(), snapshotId: info.id };
      await this.records.recordPause(entry, record);
      if (entry.scope !== undefined) this.pausedScopes.add(entry.scope);
      this.forget(entry, 'paused');
      this.options.logger.info(
        {
          session: entry.id,
          owner: entry.owner.label,
          reason,
          snapshot: info.id,
          bytes: info.bytes,
          skipped: info.contexts.flatMap((context) => context.skipped.map((skip) => `${context.id}:${skip.name}`)),
          ms: Math.round(performance.now() - started),
        },
        'session paused',
      );
      return record;
    } catch (error) {
      // Asked for, the pause fails and the session runs on; idle or at shutdown, it ends all the same.
      if (!entry.session.closed && reason === 'requested') throw error;
      const lost = `its pause (${reason}) failed: ${(error as Error).message}`;
      await this.records.recordPause(entry, { ...base, pausedAt: new Date().toISOString(), lost });
      if (entry.scope !== undefined) this.pausedScopes.add(entry.scope);
      this.forget(entry, 'pause-failed');
      if (!entry.session.closed) void entry.session.close().catch(() => undefined);
      this.options.logger.warn({ session: entry.id, owner: entry.owner.label, reason, error: lost }, 'session lost');
      throw error;
    }
  }

  /** A new session of the same owner holding what `entry` holds now. */
  async fork(entry: ManagedSession): Promise<ManagedSession> {
    this.admitUpload(entry);
    const session = await this.acquire(entry.owner, { environment: entry.session.environment.name });
    let report: RestoreReport;
    try {
      report = await this.track(() => entry.session.forkInto(session), 'fork');
    } catch (error) {
      await session.close();
      throw error;
    }
    const forked = this.register(session, entry.owner, entry.source === 'v1' ? 'v1' : entry.source, {
      id: session.id,
      // A fork publishes as its source does.
      ...(entry.publishOutputs ? { publishOutputs: true } : {}),
    });
    forked.restored = report;
    await this.files.watch(forked);
    return forked;
  }

  private async resume(owner: Owner, id: string): Promise<ManagedSession> {
    const record = await this.options.paused.find(owner.id, id);
    if (!record) throw new SessionNotFoundError(id);
    if (record.snapshotId === undefined) throw await this.records.lost(record);
    // A store shared with other servers: of those asked for this session at once, one resumes it.
    if (!(await this.options.paused.claim(owner.id, record))) throw new SessionElsewhereError(id);
    const started = performance.now();
    let session: Session | undefined;
    let report: RestoreReport;
    try {
      session = await this.acquire(owner, { environment: record.environment });
      report = await session.load(record.snapshotId, {
        owner: owner.id,
        snapshots: await this.options.paused.snapshots(),
      });
    } catch (error) {
      await session?.close();
      await this.options.paused.release(owner.id, record.snapshotId).catch(() => undefined);
      throw error;
    }
    // The record goes first: the entry's own marker (register) must not be removed after it is written.
    await this.options.paused.remove(owner.id, record).catch((error: Error) => {
      this.options.logger.warn(
        { session: id, error: error.message },
        'could not remove the snapshot of a resumed session',
      );
    });
    const entry = this.register(session, owner, record.source, record);
    entry.restored = report;
    await this.files.watch(entry);
    // Its marker is in the store before it is answered: a server sharing the store then knows where it lives.
    await this.records.written(entry);
    if (entry.name !== undefined)
      this.byName.set(nameKey(owner.id, entry.scope ?? entry.source, entry.name), Promise.resolve(entry));
    this.options.logger.info(
      {
        session: id,
        owner: owner.label,
        snapshot: record.snapshotId,
        restored: report.contexts.map((context) => ({ context: context.id, names: context.restored.length })),
        skipped: report.contexts.flatMap((context) =>
          context.skipped.map((skip) => `${context.id}:${skip.name} (${skip.reason})`),
        ),
        ms: Math.round(performance.now() - started),
      },
      'session resumed',
    );
    return entry;
  }

  /** The owner's live session with this id, if there is one (not resumed, not waited for). */
  find(owner: Owner, id: string): ManagedSession | undefined {
    const entry = this.byId.get(id);
    if (!entry || entry.owner.id !== owner.id || entry.session.closed || entry.pausing) return undefined;
    return entry;
  }

  /** The owner's session with this id; another owner's session is "not found" too. */
  get(owner: Owner, id: string): ManagedSession {
    const entry = this.byId.get(id);
    if (!entry || entry.owner.id !== owner.id) throw new SessionNotFoundError(id);
    if (entry.session.closed) {
      // One being paused is forgotten by its pause; the next request (open) resumes it.
      if (!entry.pausing) this.forget(entry, 'closed');
      throw new SessionNotFoundError(id);
    }
    return entry;
  }

  /** The owner's session called `name` in `scope`, created on first use (as Azure does for identifiers). */
  /** `environment` is the one a new session starts in; an existing session is answered as it is (the caller checks). */
  async named(
    owner: Owner,
    source: SessionSource,
    scope: string,
    name: string,
    environment?: string,
  ): Promise<ManagedSession> {
    const key = nameKey(owner.id, scope, name);
    const existing = this.byName.get(key);
    if (existing) {
      const entry = await existing.catch(() => undefined);
      // Being paused: once it is, the name finds its paused record and resumes it.
      if (entry?.pausing) await entry.pausing.catch(() => undefined);
      if (entry && !entry.session.closed && this.byId.get(entry.id) === entry) return entry;
      if (this.byName.get(key) === existing) this.byName.delete(key);
      if (entry) this.forget(entry, 'closed');
      return this.named(owner, source, scope, name, environment);
    }
    // Paused (idle, or by a server before a restart): resumed, under its name.
    const creating = this.options.paused
      .findByName(owner.id, scope, name)
      .then((paused) => this.forgetIfLost(owner, paused))
      .then((paused) =>
        paused
          ? this.open(owner, paused.id)
          : this.createNamed(owner, source, { name, scope, ...(environment === undefined ? {} : { environment }) }),
      );
    this.byName.set(key, creating);
    creating.catch(() => {
      if (this.byName.get(key) === creating) this.byName.delete(key);
    });
    return creating;
  }

  /**
   * A new named session. In a cluster its name is claimed first (a conditional write), so two nodes
   * asked for a new name at once do not both make one: the one that loses answers where it lives.
   * The session's record is written before it is answered, so every node finds it by its name.
   */
  private async createNamed(
    owner: Owner,
    source: SessionSource,
    naming: { name: string; scope: string; environment?: string },
  ): Promise<ManagedSession> {
    const cluster = this.options.cluster;
    if (!cluster) return this.create(owner, source, naming);
    const id = cluster.newSessionId();
    const holder = await this.options.paused.claimName(owner.id, naming.scope, naming.name, id);
    if (holder !== undefined) {
      // Another node claimed the name a moment ago and is starting its session: once its record is
      // written, this request is told where it lives (409 session-elsewhere; sent again, it is forwarded).
      const deadline = Date.now() + NAMED_START_WAIT_MS;
      while (!(await this.options.paused.find(owner.id, holder)) && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      return this.open(owner, holder);
    }
    const entry = await this.create(owner, source, { ...naming, id });
    await this.records.written(entry);
    return entry;
  }

  /** The named session if it exists (no creation); a paused one is resumed. */
  async findNamed(owner: Owner, scope: string, name: string): Promise<ManagedSession | undefined> {
    const entry = await this.byName.get(nameKey(owner.id, scope, name))?.catch(() => undefined);
    if (entry && !entry.session.closed && this.byId.get(entry.id) === entry && !entry.pausing) return entry;
    if (entry?.pausing) await entry.pausing.catch(() => undefined);
    const paused = await this.forgetIfLost(owner, await this.options.paused.findByName(owner.id, scope, name));
    return paused ? this.open(owner, paused.id) : undefined;
  }

  /**
   * A named session whose state was lost is said once (SessionLostError), and its record goes:
   * the name is free again, so the next use of it starts a new session rather than failing on.
   */
  private async forgetIfLost(owner: Owner, paused: PausedRecord | undefined): Promise<PausedRecord | undefined> {
    if (paused === undefined || paused.snapshotId !== undefined || this.find(owner, paused.id)) return paused;
    // Live on another server, it is not this one's to forget (SessionElsewhereError); lost, it is said once.
    const lost = await this.records.lost(paused);
    await this.options.paused.remove(owner.id, paused);
    throw lost;
  }

  list(owner: Owner): ManagedSession[] {
    this.sweep();
    return [...this.byId.values()].filter((entry) => entry.owner.id === owner.id);
  }

  /** Closes a session and forgets it. */
  async remove(entry: ManagedSession, reason = 'deleted'): Promise<void> {
    this.forget(entry, reason);
    await entry.session.close();
  }

  /**
   * Closes every session of a scope (an MCP connection that ended), and deletes its paused ones:
   * looked for among the owner's records only when one may be there (markScopePaused).
   */
  async removeScope(owner: Owner, scope: string): Promise<void> {
    const entries = [...this.byId.values()].filter((entry) => entry.owner.id === owner.id && entry.scope === scope);
    await Promise.all(entries.map((entry) => this.remove(entry, 'connection-closed')));
    if (!this.pausedScopes.delete(scope)) return;
    for (const record of await this.options.paused.list(owner.id)) {
      if (record.scope === scope && !this.find(owner, record.id)) await this.options.paused.remove(owner.id, record);
    }
  }

  /** Says that sessions of `scope` may be paused in the store (paused here, or by a node before this one). */
  markScopePaused(scope: string): void {
    this.pausedScopes.add(scope);
  }

  /**
   * Checks an execution against the limits (shutdown, session queue, code size,
   * rate) and counts it; `execute` does this itself unless told it was done already
   * (a stream checks first, so a refusal answers the request, not a stream event).
   */
  admit(entry: ManagedSession, code: string): void {
    this.admission.admit(entry, code);
  }

  /** Checks an upload (or a command, once its size passed): shutdown, and the key's rate. */
  admitUpload(entry: ManagedSession): void {
    this.admission.admitWork(entry);
  }

  /** Runs code in a session under the owner's limits. */
  async execute(entry: ManagedSession, code: string, options: ExecuteOptions = {}): Promise<ServerExecution> {
    if (!options.admitted) this.admit(entry, code);
    // Checked again: an admitted stream may start after others took the queue's last place.
    else this.admission.refuseWhenQueueFull(entry);
    const { admitted: _admitted, ...runOptions } = options;
    const timeoutMs = Math.min(options.timeoutMs ?? this.options.defaultTimeoutMs, this.options.maxExecutionMs);
    this.inFlight++;
    entry.inFlight++;
    try {
      return await this.track(async () => {
        // Nothing is awaited before the run: executions are queued in the order they were asked for.
        const execution: ServerExecution = await this.runCounted(entry, code, { ...runOptions, timeoutMs });
        if (entry.outputs && this.options.publisher) execution.files = await this.files.publish(entry, entry.outputs);
        return execution;
      }, 'execution');
    } finally {
      this.inFlight--;
      entry.inFlight--;
    }
  }

  /** Runs the code and counts it in the metrics. */
  private async runCounted(entry: ManagedSession, code: string, options: RunOptions): Promise<Execution> {
    const started = performance.now();
    const execution = await entry.session.run(code, options);
    entry.executions++;
    this.options.metrics.executions.inc({ status: execution.status });
    this.options.metrics.executionDuration.observe((performance.now() - started) / 1000);
    if (execution.error?.name === 'KernelDied') this.options.metrics.sandboxFailures.inc({ kind: 'kernel-died' });
    else if (execution.status === 'timeout' && execution.stateLost) {
      this.options.metrics.sandboxFailures.inc({ kind: 'killed-after-timeout' });
    }
    return execution;
  }

  /**
   * Runs work someone waits for (an execution, a command) counted for a graceful shutdown, which
   * waits for it; a session closed under it by the shutdown is said to be the shutdown's doing.
   */
  private async track<T>(
    work: () => Promise<T>,
    what: 'execution' | 'command' | 'snapshot' | 'restore' | 'fork',
  ): Promise<T> {
    this.working++;
    try {
      return await work();
    } catch (error) {
      if (this.shuttingDown && error instanceof SandcellError && error.code === 'session-closed') {
        throw new ShuttingDownError(`The server shut down before the ${what} finished.`);
      }
      throw error;
    } finally {
      this.working--;
      if (this.working === 0) this.drained?.();
    }
  }

  /**
   * Stops new work; waits up to `graceMs` for running executions and the commands someone waits
   * for; then closes every session, which kills whatever still runs (background commands too).
   */
  async shutdown(graceMs: number): Promise<void> {
    this.shuttingDown = true;
    clearInterval(this.sweeper);
    this.snapshots.stop();
    // In a cluster, idle sessions are paused at once: their next requests go to a peer, which resumes
    // them, instead of waiting here for this node's running work.
    const early =
      this.options.cluster && this.options.paused.durable
        ? [...this.byId.values()].filter((entry) => entry.inFlight === 0 && !entry.session.busy)
        : [];
    for (const entry of early) this.pause(entry, 'shutdown').catch(() => undefined);
    if (this.working > 0) {
      const { foreground, background } = this.commands.running;
      this.options.logger.info(
        { executions: this.inFlight, commands: foreground, backgroundCommands: background, graceMs },
        'waiting for running executions and commands',
      );
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, graceMs);
        timer.unref();
        this.drained = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    }
    // Every live session is paused, so the next server resumes it; what does not pause in time is lost, and said.
    // Without a state directory nothing would outlive this process: they close as they are.
    const live = this.options.paused.durable ? [...new Set([...early, ...this.byId.values()])] : [];
    const pauses = Promise.allSettled(live.map((entry) => this.pause(entry, 'shutdown')));
    if (live.length > 0) {
      this.options.logger.info(
        { sessions: live.length, graceMs: this.options.pauseGraceMs },
        'pausing every live session',
      );
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([pauses, new Promise((resolve) => (timer = setTimeout(resolve, this.options.pauseGraceMs)))]);
      clearTimeout(timer);
    }
    const count = this.byId.size;
    for (const entry of this.byId.values()) {
      entry.closedAt = Date.now();
      entry.closedReason = 'shutdown';
    }
    this.options.metrics.sessionsClosed.inc({ reason: 'shutdown' }, count);
    await this.options.pool.close();
    // Pauses cut short by the close end now, each writing that its session was lost.
    const outcomes = await pauses;
    this.byId.clear();
    this.byName.clear();
    const paused = outcomes.filter((outcome) => outcome.status === 'fulfilled').length;
    await this.options.paused.close();
    this.options.logger.info({ paused, lost: live.length - paused }, 'every sandbox closed');
  }

  private countOwned(owner: Owner): number {
    let count = 0;
    for (const entry of this.byId.values()) if (entry.owner.id === owner.id) count++;
    return count;
  }

  private forget(entry: ManagedSession, reason: string): void {
    if (this.byId.get(entry.id) !== entry) return;
    this.byId.delete(entry.id);
    entry.closedAt = Date.now();
    entry.closedReason = reason;
    if (entry.name !== undefined) {
      const key = nameKey(entry.owner.id, entry.scope ?? entry.source, entry.name);
      void this.byName.get(key)?.then((named) => {
        if (named === entry && this.byName.get(key)) this.byName.delete(key);
      });
    }
    this.options.metrics.sessionsClosed.inc({ reason });
    this.options.logger.info({ session: entry.id, owner: entry.owner.label, reason }, 'session closed');
    this.records.markClosed(entry, reason);
  }

  /** Forgets sessions closed other than through the registry (the pool's idle close is reported as it happens). */
  private sweep(): void {
    for (const entry of this.byId.values()) {
      if (entry.session.closed && !entry.pausing) this.forget(entry, 'closed');
    }
  }
}

function nameKey(ownerId: string, scope: string, name: string): string {
  return `${ownerId}\u0000${scope}\u0000${name}`;
}
