/**
 * SessionRegistry: the server's sessions, each owned by one API key, and what each goes through.
 * A session is let in within the limits (admission), held live (live), found by id or by a
 * client's name (names), runs executions and commands, is paused and resumed (pauses), snapshotted,
 * forked or restored (snapshots), publishes its files (files), and ends when deleted, idle or at
 * the server's shutdown (drain). Each part is its own file; this one composes them and holds the
 * path every session takes: create, open, execute, fork, remove.
 */
import { performance } from 'node:perf_hooks';
import type { Logger } from 'pino';
import { InvalidInputError } from '../../errors.js';
import type { NetworkOption } from '../../network/network-option.js';
import type { Execution, RunOptions } from '../../session/execution.js';
import type { VolumeMount } from '../../session/options.js';
import type { SessionPool } from '../../session/pool.js';
import type { Session } from '../../session/session.js';
import { asMount } from '../../session/session-remounts.js';
import type { RestoreReport } from '../../session/session-state.js';
import type { VolumeStore } from '../../volumes/volume-store.js';
import type { Owner } from './auth.js';
import type { Cluster } from './cluster.js';
import { SessionNotFoundError } from './errors.js';
import { LiveSessions } from './live-sessions.js';
import { type ManagedSession, newManagedSession, type SessionSource } from './managed-session.js';
import type { Metrics } from './metrics.js';
import { NamedSessions } from './named-sessions.js';
import { type NetworkPermission, permittedNetwork } from './network-permission.js';
import type { OutputPublisher, PublishedFile } from './output-publisher.js';
import type { PausedRecord, PausedSessions } from './paused-sessions.js';
import type { RateLimiter } from './rate-limiter.js';
import { RegistryCommands } from './registry-commands.js';
import { RegistryTerminals } from './registry-terminals.js';
import { RegistryVolumes } from './registry-volumes.js';
import { Admission } from './session-admission.js';
import { SessionDrain, type TrackedWork } from './session-drain.js';
import { SessionFiles } from './session-files.js';
import { SessionPauses } from './session-pauses.js';
import { SessionRecords } from './session-records.js';
import { SessionSnapshots } from './session-snapshots.js';
import type { VolumeHomes } from './volume-homes.js';

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
  /** The keys' volumes; absent, a request for one is refused (no state directory). */
  volumes?: VolumeStore;
  /** In a cluster: which node keeps each key's volumes. */
  volumeHomes?: VolumeHomes;
}

/** An execution as the server answers it: with the files it wrote, published, when its session publishes. */
export type ServerExecution = Execution & { files?: PublishedFile[] };

export interface ExecuteOptions extends Omit<RunOptions, 'timeoutMs'> {
  timeoutMs?: number;
  /** The execution already passed `admit()`. */
  admitted?: boolean;
}

/** What a new session is called and keeps, as its front door asks. */
export interface SessionNaming {
  id?: string;
  name?: string;
  scope?: string;
  environment?: string;
  network?: NetworkOption;
  publishOutputs?: boolean;
  /** What its front door keeps with it, in its marker from the start (ManagedSession.keep). */
  keep?: Record<string, unknown>;
  /** The owner's volumes to mount in it. */
  mounts?: VolumeMount[];
}

const SWEEP_INTERVAL_MS = 5_000;
/** An id a front door chooses: lower case, as object keys are (paused-sessions.ts). */
const SESSION_ID = /^[a-z0-9_-]{1,64}$/;

export class SessionRegistry {
  /** The sessions held live here. */
  private readonly live: LiveSessions;
  /** New sessions, executions and other work, let in within the limits. */
  private readonly admission: Admission;
  /** What the store says of each session: its marker, its pause, its removal. */
  private readonly records: SessionRecords;
  /** Sessions found by a client's name (Azure identifiers, MCP session names). */
  readonly names: NamedSessions;
  /** Pauses and resumes, and the paused sessions the store holds. */
  readonly pauses: SessionPauses;
  /** Snapshots taken, restored, listed and deleted within the key's quota, and their retention. */
  readonly snapshots: SessionSnapshots;
  /** Published outputs, imports, uploads and upload links. */
  readonly files: SessionFiles;
  /** The one path for shell commands in managed sessions, for every front door. */
  readonly commands: RegistryCommands;
  /** The one path for terminals in managed sessions, for every front door. */
  readonly terminals: RegistryTerminals;
  /** The keys' volumes, on the node that keeps them. */
  readonly volumes: RegistryVolumes;
  /** The work someone waits for, and the drain and shutdown that wait for it. */
  private readonly drain: SessionDrain;
  private readonly sweeper: NodeJS.Timeout;

  constructor(private readonly options: RegistryOptions) {
    this.records = new SessionRecords(options);
    this.live = new LiveSessions({ ...options, records: this.records, forgotten: (entry) => this.names.drop(entry) });
    this.admission = new Admission({
      ...options,
      held: () => this.live.size,
      heldBy: (owner) => this.live.countOwned(owner),
      shuttingDown: () => this.drain.isShuttingDown,
    });
    const track = this.track.bind(this);
    this.commands = new RegistryCommands({
      metrics: options.metrics,
      limits: options,
      admitWork: (entry) => this.admitUpload(entry),
      track: (work) => track(work, 'command'),
    });
    this.volumes = new RegistryVolumes({
      ...(options.volumes ? { store: options.volumes } : {}),
      ...(options.volumeHomes ? { homes: options.volumeHomes } : {}),
      ...(options.cluster ? { node: options.cluster.node } : {}),
      isDraining: () => this.isDraining,
      nameOf: (sessionId) => {
        const entry = this.live.all().find((candidate) => candidate.session.id === sessionId);
        if (!entry) return `session ${sessionId}`;
        return `${entry.source === 'e2b' ? 'sandbox' : 'session'} ${entry.id}`;
      },
    });
    this.terminals = new RegistryTerminals({ metrics: options.metrics, admitWork: (entry) => this.admitUpload(entry) });
    this.snapshots = new SessionSnapshots({ ...options, admitWork: (entry) => this.admitUpload(entry), track });
    this.files = new SessionFiles(options);
    this.names = new NamedSessions({
      ...options,
      live: this.live,
      records: this.records,
      open: (owner, id) => this.open(owner, id),
      create: (owner, source, naming) => this.create(owner, source, naming),
    });
    this.pauses = new SessionPauses({
      ...options,
      live: this.live,
      records: this.records,
      snapshots: this.snapshots,
      acquire: (owner, wanted) => this.acquire(owner, wanted),
      volumesFor: (owner) => this.volumes.of(owner, 'sessions'),
      hold: (session, owner, record, restored) => this.hold(session, owner, record, restored),
    });
    this.drain = new SessionDrain({
      ...options,
      live: this.live,
      pauses: this.pauses,
      commands: this.commands,
      stopping: () => {
        clearInterval(this.sweeper);
        this.snapshots.stop();
      },
      closed: () => {
        this.live.clear();
        this.names.clear();
      },
    });
    this.sweeper = setInterval(() => this.live.sweep(), SWEEP_INTERVAL_MS);
    this.sweeper.unref();
    options.pool.onIdleClose(async (session) => {
      const entry = this.live.ofSession(session);
      if (!entry) return;
      // A failed idle pause ends the session all the same (the pool closes it), with a record that says why.
      if (options.onIdle === 'pause') await this.pauses.pause(entry, 'idle').catch(() => undefined);
      else this.live.forget(entry, 'idle');
    });
  }

  /** Sessions alive, and executions running. */
  get stats(): { live: number; running: number; bySource: Record<SessionSource, number> } {
    const bySource = this.live.bySource();
    return { live: this.live.size, running: this.drain.running, bySource };
  }

  get isShuttingDown(): boolean {
    return this.drain.isShuttingDown;
  }

  /** Draining: going away (a SIGTERM came), while it may still serve as before for --drain-delay. */
  get isDraining(): boolean {
    return this.drain.isDraining;
  }

  /** Says the node is going away (/readyz answers 503; peers stop sending it new sessions), and changes nothing else. */
  beginDrain(): void {
    this.drain.beginDrain();
  }

  /** Stops new work, waits for running work, pauses what it can, closes every session (session-drain.ts). */
  shutdown(graceMs: number): Promise<void> {
    return this.drain.shutdown(graceMs);
  }

  /** An id a front door hands out (a UUID, a sandbox's), made this node's in a cluster: a peer then forwards its requests here. */
  ownId(id: string): string {
    return this.options.cluster?.own(id) ?? id;
  }

  /** Whether this node holds the session with this id live now (any owner's; one being paused is not). */
  holds(id: string): boolean {
    return this.live.holds(id);
  }

  /** The records of MCP connections, kept beside the paused sessions (paused-sessions.ts). */
  get connections(): Pick<PausedSessions, 'keepConnection' | 'findConnection' | 'forgetConnection'> {
    return this.options.paused;
  }

  /** Whether a new session fits under --max-sessions now. */
  hasRoom(): boolean {
    return this.live.size + this.admission.starting < this.options.maxSessions;
  }

  /** This server's name among the nodes sharing its store (SANDCELL_NODE_NAME, else the host name). */
  get node(): string {
    return this.options.paused.node;
  }

  /** The most sessions this server holds (--max-sessions). */
  get maxSessions(): number {
    return this.options.maxSessions;
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

  /** A new session for `owner`, within the owner's and the server's limits. */
  async create(owner: Owner, source: SessionSource, naming: SessionNaming = {}): Promise<ManagedSession> {
    if (naming.id !== undefined && (!SESSION_ID.test(naming.id) || this.live.byIdAnyOwner(naming.id))) {
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
      ...(naming.mounts?.length ? { mounts: naming.mounts } : {}),
    });
    const entry = this.register(session, owner, source, {
      ...naming,
      id: naming.id ?? this.options.cluster?.newSessionId() ?? session.id,
      publishOutputs: naming.publishOutputs ?? this.options.publishOutputs === true,
    });
    await this.files.watch(entry);
    return entry;
  }

  /**
   * The owner's session with this id, resumed first if it is paused (here or by
   * a server before a restart) or being paused now. Another owner's session is
   * "not found"; a session whose pause failed is "lost" (410).
   */
  async open(owner: Owner, id: string): Promise<ManagedSession> {
    const entry = this.live.byIdAnyOwner(id);
    if (entry && entry.owner.id !== owner.id) throw new SessionNotFoundError(id);
    if (entry?.pausing) await entry.pausing.catch(() => undefined);
    else if (entry && !entry.session.closed) return entry;
    else if (entry) {
      // Closed, not paused, behind the registry's back: gone, and its record with it.
      this.live.forget(entry, 'closed');
      await this.records.written(entry);
      throw new SessionNotFoundError(id);
    }
    return this.live.find(owner, id) ?? this.pauses.resume(owner, id);
  }

  /**
   * The live session with this id, whoever owns it: for the port door, which a host name reaches
   * without a key and which checks who may use the session itself (ports/port-door.ts).
   */
  heldSession(id: string): ManagedSession | undefined {
    return this.live.byIdAnyOwner(id);
  }

  /** The owner's live session with this id, if there is one (not resumed, not waited for). */
  find(owner: Owner, id: string): ManagedSession | undefined {
    return this.live.find(owner, id);
  }

  /** The owner's session with this id; another owner's session is "not found" too. */
  get(owner: Owner, id: string): ManagedSession {
    return this.live.get(owner, id);
  }

  /** The owner's live sessions (paused ones are `pauses.list`). */
  list(owner: Owner): ManagedSession[] {
    return this.live.list(owner);
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
    entry.inFlight++;
    try {
      return await this.track(async () => {
        // Nothing is awaited before the run: executions are queued in the order they were asked for.
        const execution: ServerExecution = await this.runCounted(entry, code, { ...runOptions, timeoutMs });
        if (entry.outputs && this.options.publisher) execution.files = await this.files.publish(entry, entry.outputs);
        return execution;
      }, 'execution');
    } finally {
      entry.inFlight--;
    }
  }

  /** A new session of the same owner holding what `entry` holds now. */
  async fork(entry: ManagedSession): Promise<ManagedSession> {
    this.admitUpload(entry);
    const session = await this.acquire(entry.owner, {
      environment: entry.session.environment.name,
      mounts: entry.session.mounts.map(asMount),
    });
    let report: RestoreReport;
    try {
      report = await this.track(() => entry.session.forkInto(session), 'fork');
    } catch (error) {
      await session.close();
      throw error;
    }
    const forked = this.register(session, entry.owner, entry.source, {
      id: session.id,
      // A fork publishes as its source does.
      ...(entry.publishOutputs ? { publishOutputs: true } : {}),
    });
    forked.restored = report;
    await this.files.watch(forked);
    return forked;
  }

  /** Closes a session and forgets it. */
  async remove(entry: ManagedSession, reason = 'deleted'): Promise<void> {
    this.live.forget(entry, reason);
    await entry.session.close();
  }

  /** Closes every session of a scope (an MCP connection that ended), and deletes its paused ones. */
  async removeScope(owner: Owner, scope: string): Promise<void> {
    const entries = this.live.all().filter((entry) => entry.owner.id === owner.id && entry.scope === scope);
    await Promise.all(entries.map((entry) => this.remove(entry, 'connection-closed')));
    await this.pauses.removeScope(owner, scope);
  }

  /** A session from the pool, within the owner's and the server's limits. */
  private async acquire(
    owner: Owner,
    options: { environment?: string; network?: NetworkOption; mounts?: VolumeMount[] },
  ): Promise<Session> {
    this.live.sweep();
    const { mounts, ...rest } = options;
    if (!mounts?.length) return this.admission.acquire(owner, rest);
    // In a cluster, on the node that keeps the owner's volumes (else relayed there, or refused).
    const volumes = await this.volumes.of(owner, 'sessions');
    return this.admission.acquire(owner, { ...rest, mounts, owner: owner.id, volumes });
  }

  /** Holds a new session: found by its id from now on, its marker written (said if this process ends without pausing it). */
  private register(
    session: Session,
    owner: Owner,
    source: SessionSource,
    naming: { id: string; name?: string; scope?: string; keep?: Record<string, unknown>; publishOutputs?: boolean },
  ): ManagedSession {
    const entry = newManagedSession({
      id: naming.id,
      owner,
      source,
      ...(naming.name !== undefined ? { name: naming.name, scope: naming.scope ?? source } : {}),
      ...(naming.keep !== undefined ? { keep: naming.keep } : {}),
      ...(naming.publishOutputs ? { publishOutputs: true } : {}),
      session,
    });
    this.live.add(entry);
    // Said if this process ends without pausing it (a crash, kill -9): its next request is told.
    this.records.markLive(entry);
    this.options.metrics.sessionsCreated.inc({ api: source });
    this.options.logger.info({ session: entry.id, owner: owner.label, source, name: naming.name }, 'session created');
    return entry;
  }

  /** Holds a resumed session under its paused record's id and name, its marker in the store before it is answered. */
  private async hold(
    session: Session,
    owner: Owner,
    record: PausedRecord,
    restored: RestoreReport,
  ): Promise<ManagedSession> {
    const entry = this.register(session, owner, record.source, record);
    entry.restored = restored;
    await this.files.watch(entry);
    // Its marker is in the store before it is answered: a server sharing the store then knows where it lives.
    await this.records.written(entry);
    this.names.remember(entry);
    return entry;
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

  private track<T>(work: () => Promise<T>, what: TrackedWork): Promise<T> {
    return this.drain.track(work, what);
  }
}
