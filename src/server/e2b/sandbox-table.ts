/**
 * The E2B sandboxes of one server: each is a sandcell session from the
 * registry (so the key's session limits, metrics and idle rules apply) whose
 * session id is the sandbox's id, with what E2B adds around it — the two
 * tokens that sandbox traffic must carry, metadata, environment variables, a
 * deadline and a lifecycle — kept in the session's `keep`, so they travel
 * with it when it pauses and come back when it resumes (sandbox-keep.ts).
 *
 * A sandbox is in one of three states:
 * - running: its session is live;
 * - dormant: the server paused its session (idle, shutdown) before its
 *   deadline; to its clients it still runs, and any use resumes it;
 * - paused: paused as E2B's clients see it — by `pause()`, or by its deadline
 *   with `onTimeout: 'pause'`; `connect()` resumes it, and so does its traffic
 *   when it was created with `autoResume`.
 * A sandbox whose deadline passes is killed (or paused, per its lifecycle).
 *
 * The control plane finds a sandbox by id within its owner; sandbox traffic,
 * which carries no API key, by id, then checks its tokens (routes.ts); a signed
 * file URL, which names no sandbox, by the token its signature proves.
 *
 * The table is the truth only for the sandboxes this server holds live. Of any
 * other it holds a copy at most (read from the registry's paused records at
 * start, at a listing, by a request), and a copy is never trusted: each use
 * reads the sandbox's record again, since another server sharing the store (a
 * node of a cluster) may have resumed, paused, extended or killed it since, or
 * drained it to the store after this one last looked. A record that says its
 * sandbox was lost (its server stopped without pausing it) is answered as lost.
 */

import type { Logger } from 'pino';
import { SessionLostError } from '../../snapshots/snapshot-errors.js';
import type { Owner } from '../core/auth.js';
import { SessionNotFoundError } from '../core/errors.js';
import type { ManagedSession, PausedRecord } from '../core/managed-session.js';
import type { SessionRegistry } from '../core/registry.js';
import { E2bError, SandboxPausedError, TrafficLookupsExhaustedError } from './errors.js';
import { readKeep } from './sandbox-keep.js';
import {
  type E2bSandbox,
  keepOf,
  type NewSandbox,
  newSandboxId,
  newToken,
  notFound,
  refuseLargeKeep,
  rowOfKeep,
  type SandboxRow,
  type SandboxState,
} from './sandbox-row.js';
import { environmentOfTemplate } from './template-environment.js';

/** E2B's floor for the timeout of a sandbox its own traffic resumed. */
const MIN_AUTO_RESUME_MS = 60_000;
/** A deadline pause refused (code still running) is tried again this much later, this many times, then the sandbox is killed. */
const PAUSE_RETRY_MS = 15_000;
const PAUSE_ATTEMPTS = 3;
/**
 * Reads of the store that sandbox traffic for ids this server does not hold live may cause, at most,
 * each second: traffic carries no API key, so made-up ids must not turn into a flood of reads.
 */
const TRAFFIC_LOOKUPS_PER_SECOND = 200;

export interface TableOptions {
  registry: SessionRegistry;
  logger: Logger;
  /** Every owner this server knows (its keys' owners): whose paused sandboxes a restarted server looks up. */
  owners: () => Owner[];
}

export class SandboxTable {
  private readonly byId = new Map<string, SandboxRow>();
  private readonly timers = new Map<string, NodeJS.Timeout>();
  private readonly pauseAttempts = new Map<string, number>();
  private lastOrder = 0;
  private loading?: Promise<void>;
  private lookupSecond = 0;
  private lookups = 0;

  constructor(private readonly options: TableOptions) {}

  private get registry(): SessionRegistry {
    return this.options.registry;
  }

  /** A new sandbox on a session from the registry (under the sandbox's id), within the key's limits. */
  async create(request: NewSandbox): Promise<E2bSandbox> {
    const id = this.registry.ownId(newSandboxId());
    const environment = request.snapshot
      ? { environment: request.snapshot.environment }
      : environmentOfTemplate(request.templateId);
    const now = Date.now();
    const row: SandboxRow = {
      id,
      owner: request.owner,
      templateId: request.templateId,
      envdAccessToken: newToken(),
      trafficAccessToken: newToken(),
      envVars: request.envVars,
      metadata: request.metadata,
      order: this.nextOrder(now),
      startedAt: new Date(now),
      endAt: new Date(now + request.timeoutMs),
      timeoutMs: request.timeoutMs,
      lifecycle: request.lifecycle,
      traffic: request.traffic,
    };
    refuseLargeKeep(row);
    const entry = await this.registry.create(request.owner, 'e2b', {
      id,
      // In its marker from the start: a sandbox lost with its server is told so to traffic that proves its token.
      keep: keepOf(row),
      ...environment,
      ...(request.network !== undefined ? { network: request.network } : {}),
      ...(request.mounts ? { mounts: request.mounts } : {}),
    });
    if (request.snapshot) {
      try {
        await this.registry.snapshots.restore(entry, request.snapshot.id);
      } catch (error) {
        await this.registry.remove(entry, 'failed').catch(() => undefined);
        throw error;
      }
    }
    return this.attach(row, entry);
  }

  /** A new sandbox holding what `source` holds now, with its own id and tokens (E2B's fork). */
  async fork(source: E2bSandbox, timeoutMs: number): Promise<E2bSandbox> {
    const entry = await this.registry.fork(source.entry);
    const now = Date.now();
    const row: SandboxRow = {
      id: entry.id,
      owner: source.owner,
      templateId: source.templateId,
      envdAccessToken: newToken(),
      trafficAccessToken: newToken(),
      envVars: source.envVars,
      metadata: source.metadata,
      order: this.nextOrder(now),
      startedAt: new Date(now),
      endAt: new Date(now + timeoutMs),
      timeoutMs,
      lifecycle: source.lifecycle,
      traffic: source.traffic,
    };
    return this.attach(row, entry);
  }

  /** The owner's sandbox with this id, in any state; another owner's sandbox is not found either (404). */
  async get(owner: Owner, id: string): Promise<SandboxRow> {
    const row = await this.lookup(owner, id);
    if (!row) throw notFound(id);
    return row;
  }

  /**
   * The owner's sandboxes, running (dormant ones too) and paused, oldest first: the live ones this
   * table holds and the paused records of the registry, which outrank any copy of them it held.
   */
  async list(owner: Owner): Promise<{ row: SandboxRow; state: SandboxState }[]> {
    await this.loaded();
    const records = await this.registry.pauses.list(owner);
    const recorded = new Set<string>();
    for (const record of records) {
      if (record.source !== 'e2b' || record.snapshotId === undefined) continue;
      recorded.add(record.id);
      const held = this.byId.get(record.id);
      if (!held || !this.heldLive(held)) this.adopt(owner, record.id, record.keep);
    }
    const listed: { row: SandboxRow; state: SandboxState }[] = [];
    for (const row of [...this.byId.values()]) {
      if (row.owner.id !== owner.id) continue;
      const state = this.settle(row);
      if (state === undefined) continue;
      // Paused through another door (deleted, resumed and closed there), or live on another server now.
      if (state !== 'running' && !recorded.has(row.id) && !row.entry?.pausing) {
        this.forget(row);
        continue;
      }
      listed.push({ row, state });
    }
    return listed.sort((first, second) => first.row.order - second.row.order);
  }

  /**
   * The sandbox with this id whoever owns it, for sandbox traffic (which then proves its token): one
   * this server holds live, else as its record in the store says now. Undefined when there is none.
   */
  async forTraffic(id: string): Promise<SandboxRow | undefined> {
    await this.loaded();
    const held = this.byId.get(id);
    await held?.entry?.pausing?.catch(() => undefined);
    if (held && this.heldLive(held)) return this.settle(held) === undefined ? undefined : held;
    const owners = held ? [held.owner] : this.options.owners();
    this.countLookups(owners.length);
    for (const owner of owners) {
      const row = await this.fromRecord(owner, id);
      if (row) return row.lost || this.settle(row) !== undefined ? row : undefined;
    }
    return undefined;
  }

  /**
   * The sandbox whose envd token `accepts` takes, whoever owns it: for a signed file URL, which
   * names no sandbox but proves one's token (envd-signed-urls.ts). Every sandbox the table holds is
   * tried, one hash each; the one found is then settled as traffic's is (undefined when it is gone).
   */
  async findByEnvdToken(accepts: (envdAccessToken: string) => boolean): Promise<SandboxRow | undefined> {
    await this.loaded();
    for (const row of [...this.byId.values()]) {
      if (accepts(row.envdAccessToken)) return this.forTraffic(row.id);
    }
    return undefined;
  }

  /**
   * The running sandbox behind traffic that proved its token: a dormant one is resumed, a paused one
   * too when its lifecycle says so (`autoResume`); otherwise E2B's answer, 409 "paused".
   */
  async serve(row: SandboxRow): Promise<E2bSandbox> {
    const gone = () => new E2bError(502, `The sandbox ${row.id} was not found.`);
    if (row.lost) throw row.lost;
    const state = this.state(row);
    if (state === undefined) throw gone();
    if (state === 'running') return row as E2bSandbox;
    if (state === 'paused' && !row.lifecycle.autoResume) throw new SandboxPausedError(row.id);
    return this.resume(row, { timeoutMs: Math.max(row.timeoutMs, MIN_AUTO_RESUME_MS), gone });
  }

  /**
   * The state of a sandbox this table holds; undefined when it is gone (the caller forgets it). A
   * session paused by the server is dormant until the sandbox's deadline, paused (or expired, then
   * gone) after it.
   */
  state(row: SandboxRow): SandboxState | undefined {
    const entry = row.entry;
    if (entry && !entry.pausing && !entry.session.closed && entry.closedAt === undefined) return 'running';
    const live = this.registry.find(row.owner, row.id);
    if (live && live.source === 'e2b') {
      // Resumed meanwhile, through another door (/v1) or by a request of its own.
      if (live !== entry) {
        if (row.pausedAt) this.restart(row, row.timeoutMs);
        this.attach(row, live);
      }
      return 'running';
    }
    if (row.pausedAt) return 'paused';
    // Closed, not paused: deleted, expired, closed for idling (--on-idle close), or its pause failed.
    if (entry && !entry.pausing && entry.closedReason !== 'paused') return undefined;
    if (row.endAt.getTime() > Date.now()) return 'dormant';
    return row.lifecycle.onTimeout === 'pause' ? 'paused' : undefined;
  }

  /**
   * Resumes a dormant or paused sandbox. A paused one starts anew for `timeoutMs`; a dormant one keeps
   * its deadline unless `timeoutMs` moves it later. `gone` is what the caller answers when the
   * registry no longer has it.
   */
  async resume(row: SandboxRow, options: { timeoutMs?: number; gone?: () => Error } = {}): Promise<E2bSandbox> {
    const before = this.state(row);
    if (before === 'running') return row as E2bSandbox;
    let entry: ManagedSession;
    try {
      entry = await this.registry.open(row.owner, row.id);
    } catch (error) {
      if (error instanceof SessionNotFoundError) {
        this.forget(row);
        throw options.gone?.() ?? notFound(row.id);
      }
      throw error;
    }
    if (before === 'paused') this.restart(row, options.timeoutMs ?? row.timeoutMs);
    else if (options.timeoutMs !== undefined && Date.now() + options.timeoutMs > row.endAt.getTime()) {
      row.endAt = new Date(Date.now() + options.timeoutMs);
    }
    this.pauseAttempts.delete(row.id);
    return this.attach(row, entry);
  }

  /** A paused sandbox runs again: from now, for `timeoutMs`. */
  private restart(row: SandboxRow, timeoutMs: number): void {
    const now = Date.now();
    row.pausedAt = undefined;
    row.startedAt = new Date(now);
    row.endAt = new Date(now + timeoutMs);
  }

  /**
   * Pauses a running sandbox as its clients see it (`pause()`, or its deadline with onTimeout
   * 'pause'); a dormant one is resumed first, so its record says it is paused. False when it was
   * paused already.
   */
  async pause(row: SandboxRow): Promise<boolean> {
    const state = this.state(row);
    if (state === 'paused') return false;
    const live = state === 'running' ? (row as E2bSandbox) : await this.resume(row);
    live.pausedAt = new Date();
    this.syncKeep(live);
    try {
      await this.registry.pauses.pause(live.entry, 'requested');
    } catch (error) {
      // Refused (code still ran) or lost: a sandbox left running is not paused.
      live.pausedAt = undefined;
      if (!live.entry.session.closed) this.syncKeep(live);
      throw error;
    }
    this.clearTimer(row.id);
    return true;
  }

  /** Moves the sandbox's deadline to `timeoutMs` from now (shorter or longer, as E2B does). */
  setTimeout(sandbox: E2bSandbox, timeoutMs: number): void {
    sandbox.endAt = new Date(Date.now() + timeoutMs);
    this.syncKeep(sandbox);
    this.schedule(sandbox);
  }

  /** Closes the sandbox's session, or deletes its paused state, and forgets it. */
  async kill(row: SandboxRow, reason = 'deleted'): Promise<void> {
    this.forget(row);
    const entry = row.entry;
    if (entry && !entry.pausing && !entry.session.closed && entry.closedAt === undefined) {
      await this.registry.remove(entry, reason);
      return;
    }
    await entry?.pausing?.catch(() => undefined);
    const live = this.registry.find(row.owner, row.id);
    if (live) await this.registry.remove(live, reason);
    else await this.registry.pauses.remove(row.owner, row.id);
  }

  /**
   * The owner's sandbox with this id: the one this server holds live, else as its record in the store
   * says now (a copy this table held is replaced). Throws SessionLostError for one whose state is gone.
   */
  private async lookup(owner: Owner, id: string): Promise<SandboxRow | undefined> {
    await this.loaded();
    const held = this.byId.get(id);
    if (held && held.owner.id !== owner.id) return undefined;
    await held?.entry?.pausing?.catch(() => undefined);
    const row = held && this.heldLive(held) ? held : await this.fromRecord(owner, id);
    if (!row) return undefined;
    if (row.lost) throw row.lost;
    return this.settle(row) === undefined ? undefined : row;
  }

  /** Whether this server holds the row's sandbox live now (its session here, or resumed here through another door). */
  private heldLive(row: SandboxRow): boolean {
    const entry = row.entry;
    if (entry && !entry.pausing && !entry.session.closed && entry.closedAt === undefined) return true;
    return this.registry.find(row.owner, row.id)?.source === 'e2b';
  }

  /**
   * The owner's sandbox with this id as the registry has it now: live here (resumed through another
   * door), or its paused record; a row whose record says it was lost carries why. Whatever copy the
   * table held is replaced, or forgotten when there is nothing. SessionElsewhereError when it is live
   * on another server (whose requests are sent there).
   */
  private async fromRecord(owner: Owner, id: string): Promise<SandboxRow | undefined> {
    const live = this.registry.find(owner, id);
    if (live?.source === 'e2b') {
      const held = this.byId.get(id);
      return held && held.owner.id === owner.id ? this.attach(held, live) : this.adopt(owner, id, live.keep, live);
    }
    let record: PausedRecord | undefined;
    try {
      record = await this.registry.pauses.resumable(owner, id);
    } catch (error) {
      if (!(error instanceof SessionLostError)) throw error;
      const lost = this.adopt(owner, id, (await this.registry.pauses.find(owner, id))?.keep);
      if (lost) {
        this.clearTimer(id);
        lost.lost = error;
        return lost;
      }
      throw error;
    }
    if (record?.source === 'e2b') {
      const row = this.adopt(owner, id, record.keep);
      if (row) return row;
    }
    const held = this.byId.get(id);
    if (held) this.forget(held);
    return undefined;
  }

  /** Counts reads of the store that traffic causes; past the budget, traffic is told to come back. */
  private countLookups(reads: number): void {
    const second = Math.floor(Date.now() / 1000);
    if (second !== this.lookupSecond) {
      this.lookupSecond = second;
      this.lookups = 0;
    }
    this.lookups += reads;
    if (this.lookups > TRAFFIC_LOOKUPS_PER_SECOND) throw new TrafficLookupsExhaustedError();
  }

  /** The row's state, forgetting it (and deleting what is left of it) when it is gone. */
  private settle(row: SandboxRow): SandboxState | undefined {
    const state = this.state(row);
    if (state !== undefined) return state;
    this.forget(row);
    const entry = row.entry;
    // Past its deadline while the server had paused it: killed, as it would have been running.
    if (!entry || entry.closedReason === 'paused') {
      void this.registry.pauses.remove(row.owner, row.id).catch(() => undefined);
    }
    return undefined;
  }

  /** A row rebuilt from what a session kept (a paused record's, or a resumed session's `keep`). */
  private adopt(
    owner: Owner,
    id: string,
    kept: Record<string, unknown> | undefined,
    entry?: ManagedSession,
  ): SandboxRow | undefined {
    const keep = readKeep(kept);
    if (!keep) return undefined;
    const row = rowOfKeep(owner, id, keep, entry);
    this.lastOrder = Math.max(this.lastOrder, keep.order);
    this.byId.set(id, row);
    this.schedule(row);
    return row;
  }

  /** Takes a live session into the row: it holds the row's keep, and the row's deadline runs. */
  private attach(row: SandboxRow, entry: ManagedSession): E2bSandbox {
    row.entry = entry;
    this.byId.set(row.id, row);
    this.syncKeep(row);
    this.schedule(row);
    return row as E2bSandbox;
  }

  /** Writes the row's data into its session's keep (what its pause records). */
  private syncKeep(row: SandboxRow): void {
    if (row.entry) row.entry.keep = keepOf(row);
  }

  /**
   * Fills the table, once, with the paused sandboxes of every owner the server knows: so a
   * restarted server answers their traffic (409 paused, or a resume) and runs their deadlines.
   */
  private loaded(): Promise<void> {
    this.loading ??= (async () => {
      for (const owner of this.options.owners()) {
        try {
          for (const record of await this.registry.pauses.list(owner)) {
            if (record.source === 'e2b' && record.snapshotId !== undefined && !this.byId.has(record.id)) {
              this.adopt(owner, record.id, record.keep);
            }
          }
        } catch (error) {
          this.options.logger.warn(
            { owner: owner.label, error: (error as Error).message },
            'could not read the paused E2B sandboxes of a key',
          );
        }
      }
    })();
    return this.loading;
  }

  private nextOrder(now: number): number {
    this.lastOrder = Math.max(now, this.lastOrder + 1);
    return this.lastOrder;
  }

  private schedule(row: SandboxRow): void {
    this.clearTimer(row.id);
    if (row.pausedAt) return;
    // Node's timers hold at most 2^31-1 ms; a longer deadline is checked again when that one fires.
    const delay = Math.min(Math.max(0, row.endAt.getTime() - Date.now()), 2 ** 31 - 1);
    const timer = setTimeout(() => {
      if (this.byId.get(row.id) !== row) return;
      if (row.endAt.getTime() > Date.now()) return this.schedule(row);
      void this.expire(row).catch((error: Error) =>
        this.options.logger.warn({ sandbox: row.id, error: error.message }, 'E2B sandbox deadline failed'),
      );
    }, delay);
    timer.unref();
    this.timers.set(row.id, timer);
  }

  /** Its deadline passed: a running sandbox is killed or paused; a dormant one is killed or left paused. */
  private async expire(held: SandboxRow): Promise<void> {
    let row = held;
    if (!this.heldLive(held)) {
      // Only a copy here: its record says whether it is still paused and when its deadline is now.
      const fresh = await this.fromRecord(held.owner, held.id).catch(() => undefined);
      if (!fresh || fresh.lost || fresh.endAt.getTime() > Date.now()) return;
      row = fresh;
    }
    const entry = row.entry;
    const running = entry && !entry.pausing && !entry.session.closed && entry.closedAt === undefined;
    if (row.lifecycle.onTimeout === 'kill') return this.kill(row, 'expired');
    if (!running) {
      this.settle(row);
      return;
    }
    try {
      await this.pause(row);
      this.pauseAttempts.delete(row.id);
    } catch (error) {
      const attempts = (this.pauseAttempts.get(row.id) ?? 0) + 1;
      if (this.state(row) !== 'running') return;
      if (attempts >= PAUSE_ATTEMPTS) {
        this.pauseAttempts.delete(row.id);
        this.options.logger.warn(
          { sandbox: row.id, error: (error as Error).message },
          'E2B sandbox could not pause at its deadline: killed',
        );
        return this.kill(row, 'expired');
      }
      this.pauseAttempts.set(row.id, attempts);
      const timer = setTimeout(() => void this.expire(row).catch(() => undefined), PAUSE_RETRY_MS);
      timer.unref();
      this.timers.set(row.id, timer);
    }
  }

  private clearTimer(id: string): void {
    clearTimeout(this.timers.get(id));
    this.timers.delete(id);
  }

  private forget(row: SandboxRow): void {
    if (this.byId.get(row.id) !== row) return;
    this.clearTimer(row.id);
    this.pauseAttempts.delete(row.id);
    this.byId.delete(row.id);
  }
}
