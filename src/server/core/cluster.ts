/**
 * The nodes of a cluster: sandcell servers that share one store (`--store`) and
 * each say where peers reach them (`--advertise-url`). The store is the
 * catalog; nothing else is shared and nothing votes:
 *
 *   nodes/<node>.json     { node, tag, url, live, max, draining, at }, rewritten every heartbeat
 *   located/<id>.json     { node }: where a live session is, written as it starts or resumes there
 *
 * Every id a node hands out (a session's, a sandbox's, a kernel's, an MCP
 * session's) begins with the node's tag, eight hex digits of its name's
 * digest, which fits each front door's id format (a UUID's first group, E2B's
 * lower-case letters and digits), so a request is sent to the node holding its
 * session without asking the store. A session that moved (its home drained or
 * died, and another node resumed it) is found through `located/`.
 *
 * A node is alive while its record keeps changing: each node judges that by its
 * own clock (when it last saw the record change), so clocks need not agree.
 * A node that stops heartbeating is dead after `staleMs`; sessions it held live
 * are lost (410) from then on, those it paused are resumed by whichever node
 * their next request reaches.
 */
import { createHash, randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import { InvalidInputError } from '../../errors.js';
import type { ObjectStore } from '../../store/object-store.js';

/** A node's name: a DNS label (a StatefulSet's pod names are), so it is also a word of a store key. */
export const NODE_NAME = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;
/** The header a forwarded request carries: the node that forwarded it. Such a request is never forwarded again. */
export const FORWARDED_BY_HEADER = 'x-sandcell-forwarded-by';

const TAG = /^[0-9a-f]{8}$/;
const MAX_NODE_RECORD_BYTES = 4096;
const DEFAULT_HEARTBEAT_MS = 2_000;
/** Missed heartbeats after which a node is taken for dead. */
const STALE_HEARTBEATS = 4;
/** The least time between two readings of the store's nodes. */
const REFRESH_MS = 250;
/** A node first seen with a heartbeat older than this (by its own clock) is a dead one's leftover record. */
const LEFTOVER_MS = 60_000;
/** Reads of the catalog a node makes for requests it does not hold, at most, each second. */
const LOCATES_PER_SECOND = 200;

export interface Peer {
  node: string;
  tag: string;
  /** Where the other nodes reach it, e.g. `http://sandcell-1.sandcell-peers:8080`. */
  url: string;
  /** Its live sessions and its --max-sessions, as of its last heartbeat. */
  live: number;
  max: number;
  draining: boolean;
}

export interface ClusterOptions {
  node: string;
  url: string;
  objects: () => Promise<ObjectStore>;
  logger: Logger;
  /** This node's load, said in each heartbeat. */
  load: () => { live: number; max: number; draining: boolean };
  heartbeatMs?: number;
}

/** The eight hex digits every id this node hands out begins with. */
export function nodeTag(node: string): string {
  return createHash('sha256').update(node).digest('hex').slice(0, 8);
}

export class Cluster {
  readonly node: string;
  readonly tag: string;
  readonly url: string;
  private readonly heartbeatMs: number;
  /** Peers by tag (this node included), with when this node last saw each one's record change. */
  private readonly peers = new Map<string, { peer: Peer; at: number; seen: number }>();
  private timer?: NodeJS.Timeout;
  private beating?: Promise<void>;
  private refreshedAt = 0;
  private locateSecond = 0;
  private locates = 0;
  private stopped = false;

  constructor(private readonly options: ClusterOptions) {
    if (!NODE_NAME.test(options.node)) {
      throw new InvalidInputError(
        `The node name ${JSON.stringify(options.node)} is not a DNS label (lower-case letters, digits and '-', at most 63): set SANDCELL_NODE_NAME.`,
      );
    }
    this.node = options.node;
    this.tag = nodeTag(options.node);
    this.url = options.url.replace(/\/+$/, '');
    this.heartbeatMs = options.heartbeatMs ?? DEFAULT_HEARTBEAT_MS;
  }

  /** Says this node is here and reads who else is; then again every heartbeat. */
  async start(): Promise<void> {
    await this.beat();
    this.timer = setInterval(() => {
      this.refreshedAt = 0;
      void this.refresh();
    }, this.heartbeatMs);
    this.timer.unref();
  }

  /** Says at once that this node is draining (peers stop sending it new sessions). */
  async announce(): Promise<void> {
    await this.beating;
    this.refreshedAt = 0;
    await this.refresh();
  }

  /** Leaves the cluster: its record goes, so peers stop forwarding to it. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    await this.beating;
    const objects = await this.options.objects();
    await objects.delete(nodeKey(this.node)).catch(() => undefined);
  }

  /** An id of this node's: `id` (a UUID, a hex or base-36 id) with its first eight characters this node's tag. */
  own(id: string): string {
    return this.tag + id.slice(this.tag.length);
  }

  /** A new session id of this node's. */
  newSessionId(): string {
    return this.tag + randomBytes(8).toString('hex');
  }

  /**
   * The live peer (never this node) an id's tag names, if there is one. A tag of no node this one
   * has seen (one that joined since the last heartbeat) makes it read the store's nodes again first.
   */
  async peerOf(id: string): Promise<Peer | undefined> {
    const tag = id.slice(0, 8);
    if (!TAG.test(tag) || tag === this.tag) return undefined;
    return this.aliveByTag(tag);
  }

  /** Whether the node of this name is alive (this one always is); one not seen yet is looked for first. */
  async isAlive(node: string): Promise<boolean> {
    if (node === this.node) return true;
    return (await this.aliveByTag(nodeTag(node))) !== undefined;
  }

  /**
   * The peer of this tag if it is alive. One not seen yet, or seen alive only by an old reading (this
   * node's own heartbeats late, on a busy machine), is read from the store again before it is taken
   * for dead: a dead node is one whose record stopped changing, not one this node stopped reading.
   */
  private async aliveByTag(tag: string): Promise<Peer | undefined> {
    const alive = this.alive(this.peers.get(tag));
    if (alive) return alive;
    await this.refresh();
    return this.alive(this.peers.get(tag));
  }

  /**
   * Reads the store's nodes, at most every REFRESH_MS (ids with made-up tags cannot make it list the
   * store at will). Asked sooner, it waits for the next reading rather than answering from the last:
   * a node that joined just after it (one restarted, say) is found, not taken for gone.
   */
  private async refresh(): Promise<void> {
    if (this.stopped) return;
    const wait = this.refreshedAt + REFRESH_MS - Date.now();
    this.beating ??= (wait > 0 ? new Promise((resolve) => setTimeout(resolve, wait)) : Promise.resolve())
      .then(() => this.beat())
      .catch((error: Error) => this.options.logger.warn({ error: error.message }, 'cluster heartbeat failed'))
      .finally(() => {
        this.beating = undefined;
      });
    await this.beating;
  }

  /** The live peers, this node left out. */
  livePeers(): Peer[] {
    const peers: Peer[] = [];
    for (const known of this.peers.values()) {
      const live = known.peer.node === this.node ? undefined : this.alive(known);
      if (live) peers.push(live);
    }
    return peers;
  }

  /** Takes a peer for dead until its record changes again (it refused a connection). */
  suspect(node: string): void {
    const known = this.peers.get(nodeTag(node));
    if (known && node !== this.node) known.seen = 0;
  }

  /**
   * The live peer that holds session `id` by the catalog (a session that moved), if another one
   * does. Each look is a read of the store, asked before any key is checked: past LOCATES_PER_SECOND
   * a node stops looking (and answers the request itself), so requests for made-up ids cannot turn
   * into a flood of reads.
   */
  async locate(id: string): Promise<Peer | undefined> {
    if (!this.withinLocates()) return undefined;
    const objects = await this.options.objects();
    const bytes = await objects.read(locatedKey(id), MAX_NODE_RECORD_BYTES).catch(() => undefined);
    if (bytes === undefined) return undefined;
    const node = parseLocated(bytes);
    if (node === undefined || node === this.node) return undefined;
    return this.alive(this.peers.get(nodeTag(node)));
  }

  /**
   * Takes session `id`, whose home node is gone and which no live node holds, for this node to resume:
   * a conditional write of its catalog entry, so that of nodes asked for it at once exactly one
   * resumes it and the others send their requests there. Undefined when it is this node's to answer;
   * else the live peer that took it first. An entry left by a node that is gone is taken over. Past
   * LOCATES_PER_SECOND nothing is written: the request is answered here, and the snapshot's own claim
   * (paused-sessions.ts) still lets only one node resume it.
   */
  async lease(id: string): Promise<Peer | undefined> {
    if (id.startsWith(this.tag) || !this.withinLocates()) return undefined;
    const objects = await this.options.objects();
    const body = () => Buffer.from(JSON.stringify({ node: this.node }));
    for (let attempt = 0; attempt < 2; attempt++) {
      if ((await objects.writeIfAbsent(locatedKey(id), body())) !== undefined) return undefined;
      const bytes = await objects.read(locatedKey(id), MAX_NODE_RECORD_BYTES).catch(() => undefined);
      const node = bytes === undefined ? undefined : parseLocated(bytes);
      if (node === this.node) return undefined;
      const peer = node === undefined ? undefined : this.alive(this.peers.get(nodeTag(node)));
      if (peer) return peer;
      // Left by a node that is gone (or unreadable): removed, and written again.
      if (bytes !== undefined) await objects.delete(locatedKey(id)).catch(() => undefined);
    }
    return undefined;
  }

  /** Counts a read of the catalog for a request this node does not hold; false past LOCATES_PER_SECOND. */
  private withinLocates(): boolean {
    const second = Math.floor(Date.now() / 1000);
    if (second !== this.locateSecond) {
      this.locateSecond = second;
      this.locates = 0;
    }
    return ++this.locates <= LOCATES_PER_SECOND;
  }

  /** Says in the catalog that session `id` is live here. */
  async place(id: string): Promise<void> {
    // One whose id names this node is found by its tag: only a session away from home needs an entry.
    if (id.startsWith(this.tag)) return;
    const objects = await this.options.objects();
    await objects.write(locatedKey(id), Buffer.from(JSON.stringify({ node: this.node })));
  }

  /** Takes session `id` out of the catalog, unless another node has placed it since. */
  async unplace(id: string): Promise<void> {
    if (id.startsWith(this.tag)) return;
    const objects = await this.options.objects();
    const bytes = await objects.read(locatedKey(id), MAX_NODE_RECORD_BYTES).catch(() => undefined);
    if (bytes !== undefined && parseLocated(bytes) === this.node) await objects.delete(locatedKey(id));
  }

  private alive(known: { peer: Peer; seen: number } | undefined): Peer | undefined {
    if (!known || Date.now() - known.seen > this.heartbeatMs * STALE_HEARTBEATS) return undefined;
    return known.peer;
  }

  private async beat(): Promise<void> {
    if (this.stopped) return;
    this.refreshedAt = Date.now();
    const objects = await this.options.objects();
    const load = this.options.load();
    const record = { node: this.node, tag: this.tag, url: this.url, ...load, at: Date.now() };
    await objects.write(nodeKey(this.node), Buffer.from(JSON.stringify(record)));
    const now = Date.now();
    const listed = new Set<string>();
    for await (const object of objects.list('nodes/')) {
      const bytes = await objects.read(object.key, MAX_NODE_RECORD_BYTES).catch(() => undefined);
      const parsed = bytes === undefined ? undefined : parseNode(bytes);
      if (!parsed || nodeKey(parsed.peer.node) !== object.key) continue;
      const { peer, at } = parsed;
      const known = this.peers.get(peer.tag);
      if (known && known.peer.node !== peer.node) {
        this.options.logger.error({ node: peer.node, other: known.peer.node }, 'two nodes share a tag: rename one');
        continue;
      }
      // Alive while its record changes, by this node's clock: the clocks of nodes need not agree. A record
      // first seen long after its last heartbeat was left by a node that died.
      const leftover = known === undefined && now - at > LEFTOVER_MS;
      const seen = leftover ? 0 : known === undefined || known.at !== at ? now : known.seen;
      if (known === undefined && peer.node !== this.node && !leftover)
        this.options.logger.info({ peer: peer.node }, 'peer found');
      this.peers.set(peer.tag, { peer, at, seen });
      listed.add(peer.tag);
    }
    // A node whose record is gone left the cluster (a drain's end).
    for (const [tag, known] of this.peers) {
      if (listed.has(tag)) continue;
      this.peers.delete(tag);
      this.options.logger.info({ peer: known.peer.node }, 'peer left');
    }
  }
}

function nodeKey(node: string): string {
  return `nodes/${node}.json`;
}

function locatedKey(id: string): string {
  return `located/${id}.json`;
}

function parseLocated(bytes: Uint8Array): string | undefined {
  try {
    const { node } = JSON.parse(Buffer.from(bytes).toString('utf8')) as { node?: unknown };
    return typeof node === 'string' && NODE_NAME.test(node) ? node : undefined;
  } catch {
    return undefined;
  }
}

function parseNode(bytes: Uint8Array): { peer: Peer; at: number } | undefined {
  let value: Record<string, unknown>;
  try {
    value = JSON.parse(Buffer.from(bytes).toString('utf8')) as Record<string, unknown>;
  } catch {
    return undefined;
  }
  const { node, url, live, max, draining, at } = value;
  if (typeof node !== 'string' || !NODE_NAME.test(node) || typeof url !== 'string' || !/^https?:\/\//.test(url))
    return undefined;
  const count = (n: unknown) => (typeof n === 'number' && Number.isFinite(n) ? n : 0);
  return {
    peer: {
      node,
      tag: nodeTag(node),
      url: url.replace(/\/+$/, ''),
      live: count(live),
      max: count(max),
      draining: draining === true,
    },
    at: count(at),
  };
}
