/**
 * The sessions the registry holds live, by id and by their library session: found for their owner
 * only (another owner's is "not found"), and forgotten once, with the reason, when they close,
 * pause or are deleted. A session whose sandbox closed behind the registry's back is forgotten by
 * the next look (sweep).
 */
import type { Logger } from 'pino';
import type { Session } from '../../session/session.js';
import type { Owner } from './auth.js';
import { SessionNotFoundError } from './errors.js';
import type { ManagedSession, SessionSource } from './managed-session.js';
import type { Metrics } from './metrics.js';
import type { SessionRecords } from './session-records.js';

export interface LiveSessionsHost {
  metrics: Metrics;
  logger: Logger;
  records: SessionRecords;
  /** Told of every session forgotten (the name index lets go of it). */
  forgotten?: (entry: ManagedSession) => void;
}

export class LiveSessions {
  private readonly byId = new Map<string, ManagedSession>();
  private readonly bySession = new WeakMap<Session, ManagedSession>();

  constructor(private readonly host: LiveSessionsHost) {}

  /** How many are held (one being paused included). */
  get size(): number {
    return this.byId.size;
  }

  add(entry: ManagedSession): void {
    this.byId.set(entry.id, entry);
    this.bySession.set(entry.session, entry);
  }

  /** Whether `entry` is the one held under its id (not one forgotten, nor another since under its id). */
  isHeld(entry: ManagedSession): boolean {
    return this.byId.get(entry.id) === entry;
  }

  /** The entry of a library session, while it is held. */
  ofSession(session: Session): ManagedSession | undefined {
    const entry = this.bySession.get(session);
    return entry && this.isHeld(entry) ? entry : undefined;
  }

  /** The entry under this id, any owner's, in any state: for the registry's own checks. */
  byIdAnyOwner(id: string): ManagedSession | undefined {
    return this.byId.get(id);
  }

  /** Whether this node holds the session with this id live now (any owner's; one being paused is not). */
  holds(id: string): boolean {
    const entry = this.byId.get(id);
    return entry !== undefined && !entry.session.closed && !entry.pausing;
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

  /** The owner's sessions held now. */
  list(owner: Owner): ManagedSession[] {
    this.sweep();
    return [...this.byId.values()].filter((entry) => entry.owner.id === owner.id);
  }

  /** Every session held now, any owner's. */
  all(): ManagedSession[] {
    return [...this.byId.values()];
  }

  countOwned(owner: Owner): number {
    let count = 0;
    for (const entry of this.byId.values()) if (entry.owner.id === owner.id) count++;
    return count;
  }

  /** How many are held, by the front door that made them. */
  bySource(): Record<SessionSource, number> {
    this.sweep();
    const counts: Record<SessionSource, number> = {
      v1: 0,
      azure: 0,
      mcp: 0,
      conversation: 0,
      e2b: 0,
      jupyter: 0,
      'jupyter-terminal': 0,
    };
    for (const entry of this.byId.values()) counts[entry.source]++;
    return counts;
  }

  /** Lets go of the session, once: counted, logged, and its record told why (session-records.ts). */
  forget(entry: ManagedSession, reason: string): void {
    if (!this.isHeld(entry)) return;
    this.byId.delete(entry.id);
    entry.closedAt = Date.now();
    entry.closedReason = reason;
    this.host.forgotten?.(entry);
    this.host.metrics.sessionsClosed.inc({ reason });
    this.host.logger.info({ session: entry.id, owner: entry.owner.label, reason }, 'session closed');
    this.host.records.markClosed(entry, reason);
  }

  /** Forgets sessions closed other than through the registry (the pool's idle close is reported as it happens). */
  sweep(): void {
    for (const entry of this.byId.values()) {
      if (entry.session.closed && !entry.pausing) this.forget(entry, 'closed');
    }
  }

  /** Lets go of every session at the end of a shutdown, each said closed by it (the pool closes their sandboxes). */
  closeAll(reason: string): void {
    for (const entry of this.byId.values()) {
      entry.closedAt = Date.now();
      entry.closedReason = reason;
    }
    this.host.metrics.sessionsClosed.inc({ reason }, this.byId.size);
  }

  clear(): void {
    this.byId.clear();
  }
}
