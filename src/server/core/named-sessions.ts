/**
 * Sessions found by a client's name rather than an id (Azure identifiers, MCP session names):
 * made on first use, resumed under their name once paused, and, in a cluster, claimed in the store
 * first so two nodes asked for a new name at once do not both make one. A named session whose
 * state was lost is said once, and its name is free again.
 */
import type { Owner } from './auth.js';
import type { Cluster } from './cluster.js';
import type { LiveSessions } from './live-sessions.js';
import type { ManagedSession, SessionSource } from './managed-session.js';
import type { PausedRecord, PausedSessions } from './paused-sessions.js';
import type { SessionRecords } from './session-records.js';

/** How long a request waits for the record of a named session another node is starting. */
const NAMED_START_WAIT_MS = 15_000;

export interface NamedSessionsHost {
  paused: PausedSessions;
  cluster?: Cluster | undefined;
  live: LiveSessions;
  records: SessionRecords;
  /** The owner's session with this id, resumed if paused (SessionRegistry.open). */
  open(owner: Owner, id: string): Promise<ManagedSession>;
  /** A new session (SessionRegistry.create). */
  create(
    owner: Owner,
    source: SessionSource,
    naming: { id?: string; name: string; scope: string; environment?: string },
  ): Promise<ManagedSession>;
}

export class NamedSessions {
  /** Each name's session, or its start or resume under way. */
  private readonly byName = new Map<string, Promise<ManagedSession>>();

  constructor(private readonly host: NamedSessionsHost) {}

  /** The owner's session called `name` in `scope`, created on first use (as Azure does for identifiers). */
  /** `environment` is the one a new session starts in; an existing session is answered as it is (the caller checks). */
  async open(
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
      if (entry && !entry.session.closed && this.host.live.isHeld(entry)) return entry;
      if (this.byName.get(key) === existing) this.byName.delete(key);
      if (entry) this.host.live.forget(entry, 'closed');
      return this.open(owner, source, scope, name, environment);
    }
    // Paused (idle, or by a server before a restart): resumed, under its name.
    const creating = this.host.paused
      .findByName(owner.id, scope, name)
      .then((paused) => this.forgetIfLost(owner, paused))
      .then((paused) =>
        paused
          ? this.host.open(owner, paused.id)
          : this.createNamed(owner, source, { name, scope, ...(environment === undefined ? {} : { environment }) }),
      );
    this.byName.set(key, creating);
    creating.catch(() => {
      if (this.byName.get(key) === creating) this.byName.delete(key);
    });
    return creating;
  }

  /** The named session if it exists (no creation); a paused one is resumed. */
  async find(owner: Owner, scope: string, name: string): Promise<ManagedSession | undefined> {
    const entry = await this.byName.get(nameKey(owner.id, scope, name))?.catch(() => undefined);
    if (entry && !entry.session.closed && this.host.live.isHeld(entry) && !entry.pausing) return entry;
    if (entry?.pausing) await entry.pausing.catch(() => undefined);
    const paused = await this.forgetIfLost(owner, await this.host.paused.findByName(owner.id, scope, name));
    return paused ? this.host.open(owner, paused.id) : undefined;
  }

  /**
   * Where the owner's session called `name` in `scope` is, for a request that names it so (an Azure
   * identifier): held live here, or the id the store's name index gives (none for a new name).
   */
  async where(owner: Owner, scope: string, name: string): Promise<{ held: true } | { held: false; id?: string }> {
    const entry = await this.byName.get(nameKey(owner.id, scope, name))?.catch(() => undefined);
    if (entry && this.host.live.isHeld(entry) && this.host.live.holds(entry.id)) return { held: true };
    const record = await this.host.paused.findByName(owner.id, scope, name);
    return record ? { held: false, id: record.id } : { held: false };
  }

  /** A named session resumed by its id: its name finds it again. */
  remember(entry: ManagedSession): void {
    if (entry.name !== undefined)
      this.byName.set(nameKey(entry.owner.id, entry.scope ?? entry.source, entry.name), Promise.resolve(entry));
  }

  /** The registry let go of the session: its name no longer finds it. */
  drop(entry: ManagedSession): void {
    if (entry.name === undefined) return;
    const key = nameKey(entry.owner.id, entry.scope ?? entry.source, entry.name);
    void this.byName.get(key)?.then((named) => {
      if (named === entry && this.byName.get(key)) this.byName.delete(key);
    });
  }

  clear(): void {
    this.byName.clear();
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
    const { cluster, paused } = this.host;
    if (!cluster) return this.host.create(owner, source, naming);
    const id = cluster.newSessionId();
    const holder = await paused.claimName(owner.id, naming.scope, naming.name, id);
    if (holder !== undefined) {
      // Another node claimed the name a moment ago and is starting its session: once its record is
      // written, this request is told where it lives (409 session-elsewhere; sent again, it is forwarded).
      const deadline = Date.now() + NAMED_START_WAIT_MS;
      while (!(await paused.find(owner.id, holder)) && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      return this.host.open(owner, holder);
    }
    const entry = await this.host.create(owner, source, { ...naming, id });
    await this.host.records.written(entry);
    return entry;
  }

  /**
   * A named session whose state was lost is said once (SessionLostError), and its record goes:
   * the name is free again, so the next use of it starts a new session rather than failing on.
   */
  private async forgetIfLost(owner: Owner, paused: PausedRecord | undefined): Promise<PausedRecord | undefined> {
    if (paused === undefined || paused.snapshotId !== undefined || this.host.live.find(owner, paused.id)) return paused;
    // Live on another server, it is not this one's to forget (SessionElsewhereError); lost, it is said once.
    const lost = await this.host.records.lost(paused);
    await this.host.paused.remove(owner.id, paused);
    throw lost;
  }
}

function nameKey(ownerId: string, scope: string, name: string): string {
  return `${ownerId}\u0000${scope}\u0000${name}`;
}
