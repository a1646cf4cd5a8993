/**
 * A cluster's front: any node takes any request and sends it on to the node
 * holding its session (cluster.ts), so a plain round-robin load balancer in
 * front of the nodes is enough. It sits before the app, in the Node request
 * listener and the upgrade handler, so bodies, streamed answers (SSE, NDJSON)
 * and websockets pass through as bytes, unread.
 *
 * Which session a request is for comes from where each front door names it:
 * `/v1/sessions/{id}`, an upload link's token, E2B's `/sandboxes/{id}` and
 * `E2b-Sandbox-Id`, Jupyter's `/jupyter/api/kernels/{id}` and `/jupyter/api/sessions/{id}`,
 * MCP's `Mcp-Session-Id`, `/v1/conversations/{id}`. A request is sent on when:
 * - its id's tag names a live peer, and this node does not hold the session
 *   (it may have moved here);
 * - or this node does not hold it and the catalog (`located/`) says a live
 *   peer does (a session resumed elsewhere after its home drained or died);
 * - or it asks for a new session while this node is full or draining, to the
 *   peer with most room;
 * - or this node is draining and the session is not (or no longer) live here:
 *   a peer that is not draining resumes it;
 * - or its home node is gone, no live node holds it, and another node took it
 *   in the catalog (`located/`, a conditional write) a moment before this one
 *   could: of nodes asked for it at once, one resumes it, the others forward.
 * A forwarded request is not forwarded again, except by a draining node to
 * one that is not, and by a session's home node (where its id's tag sent it)
 * to the node the catalog says resumed it: no loops. A peer that refuses the connection before
 * anything was sent is taken for dead, and the request is answered here.
 *
 * What only a request's body or record tells (a session that mounts a key's volumes, which one
 * node keeps) is sent on by the app once read instead (relay.ts).
 */
import {
  type ClientRequest,
  Agent as HttpAgent,
  request as httpRequest,
  type IncomingMessage,
  type ServerResponse,
} from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import { connect as netConnect, type Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { connect as tlsConnect } from 'node:tls';
import type { Logger } from 'pino';
import { AZURE_SCOPE } from '../azure/routes.js';
import type { ApiKeys, Owner } from '../core/auth.js';
import { type Cluster, FORWARDED_BY_HEADER, type Peer } from '../core/cluster.js';
import type { SessionRegistry } from '../core/registry.js';
import { CURSORS_HEADER } from '../e2b/list-query.js';
import { E2B_PREFIX } from '../e2b/routes.js';
import { claimedPorts } from '../ports/port-address.js';
import { type GatheredList, LISTS, MAX_LIST_BYTES, mergeList } from './gathered-lists.js';
import { HOP_BY_HOP } from './hop-by-hop.js';

/** What a request names: a registry session (found in the catalog when moved), or another id a node hands out. */
export interface NamedId {
  id: string;
  /**
   * `mcp`: an MCP connection, which any node takes up from its record once its node lets it go;
   * `conversation`: a conversation, which any node takes up from the store once its node handed it over.
   */
  kind: 'session' | 'mcp' | 'conversation' | 'other';
}

const ID = '([A-Za-z0-9_-]{1,64})';
const SESSION_PATHS = [
  new RegExp(`^/v1/sessions/${ID}(?:/|$)`),
  new RegExp(`^${E2B_PREFIX}/+(?:v2/)?sandboxes/${ID}(?:/|$)`),
  new RegExp(`^/jupyter/api/kernels/${ID}(?:/|$)`),
  // A Jupyter terminal's name is its session's id (jupyter/jupyter-terminals.ts).
  new RegExp(`^/jupyter/api/terminals/${ID}(?:/|$)`),
  new RegExp(`^/jupyter/terminals/websocket/${ID}(?:/|$)`),
];
const NOTEBOOK_SESSION_PATH = new RegExp(`^/jupyter/api/sessions/${ID}$`);
/** A conversation is kept by one node (its history in that node's state directory), and moves with a drain. */
const CONVERSATION_PATH = new RegExp(`^/v1/conversations/${ID}(?:/|$)`);
const UPLOAD_LINK_PATH = /^\/v1\/uploads\/([A-Za-z0-9_-]{1,2048})\.[A-Za-z0-9_-]+$/;
const CREATIONS: { method: string; path: RegExp; header?: string }[] = [
  { method: 'POST', path: /^\/v1\/sessions\/?$/ },
  { method: 'POST', path: new RegExp(`^${E2B_PREFIX}/+(?:v2/)?sandboxes\\/?$`) },
  { method: 'POST', path: /^\/jupyter\/api\/(?:kernels|sessions|terminals)\/?$/ },
  { method: 'POST', path: /^\/v1\/conversations\/?$/ },
];
const MCP_PATH = /^\/mcp\/?$/;
/** How long a peer may take to accept a connection before it is taken for gone. */
const CONNECT_TIMEOUT_MS = 3_000;
const IDLE_CONNECTION_MS = 4_000;
/** How long a node waits for each peer's part of a list. */
const LIST_TIMEOUT_MS = 10_000;
/** The code a list's request to a peer fails with when it never connected. */
const UNREACHED = 'SANDCELL_PEER_UNREACHED';
const AZURE_PREFIX = '/azure/';

/** The session (or other node-tagged id) a request is for, from where its front door names it. */
export function namedIdOf(request: IncomingMessage): NamedId | undefined {
  // A port's traffic names its sandbox in its host name or E2B's headers (ports/port-address.ts).
  const port = claimedPorts.get(request);
  if (port) return port.sandboxId === '' ? undefined : { id: port.sandboxId, kind: 'session' };
  const target = request.url ?? '';
  const path = target.split('?', 1)[0] ?? '';
  for (const pattern of SESSION_PATHS) {
    const match = pattern.exec(path);
    if (match?.[1]) return { id: match[1], kind: 'session' };
  }
  const sandbox = request.headers['e2b-sandbox-id'];
  if (typeof sandbox === 'string' && path.startsWith(`${E2B_PREFIX}/`) && /^[a-z0-9]{1,64}$/.test(sandbox))
    return { id: sandbox, kind: 'session' };
  const upload = UPLOAD_LINK_PATH.exec(path);
  if (upload?.[1]) {
    // The token's claims name its session; only the node that verifies it trusts it.
    try {
      const { s } = JSON.parse(Buffer.from(upload[1], 'base64url').toString('utf8')) as { s?: unknown };
      if (typeof s === 'string' && /^[a-z0-9_-]{1,64}$/.test(s)) return { id: s, kind: 'session' };
    } catch {
      return undefined;
    }
  }
  const conversation = CONVERSATION_PATH.exec(path);
  if (conversation?.[1]) return { id: conversation[1], kind: 'conversation' };
  const other = NOTEBOOK_SESSION_PATH.exec(path);
  if (other?.[1]) return { id: other[1], kind: 'other' };
  const mcp = request.headers['mcp-session-id'];
  if (typeof mcp === 'string' && MCP_PATH.test(path) && mcp.length <= 64) return { id: mcp, kind: 'mcp' };
  return undefined;
}

/** Whether the request asks for a new session (which a full or draining node hands to a peer). */
function isCreation(request: IncomingMessage): boolean {
  const path = (request.url ?? '').split('?', 1)[0] ?? '';
  if (request.method === 'POST' && MCP_PATH.test(path) && request.headers['mcp-session-id'] === undefined) return true;
  return CREATIONS.some((creation) => creation.method === request.method && creation.path.test(path));
}

const hasBody = (request: IncomingMessage): boolean =>
  request.headers['transfer-encoding'] !== undefined || Number(request.headers['content-length'] ?? 0) > 0;

export interface ForwarderOptions {
  cluster: Cluster;
  apiKeys: ApiKeys;
  registry: SessionRegistry;
  logger: Logger;
  /** The MCP connections (mcp/http.ts): whether this node holds one, and which node does by its record. */
  connections?: { holds(id: string): boolean; holder(id: string): Promise<string | undefined> };
  /** The conversations (conversations/store.ts): whether this node holds one. */
  conversations?: { holds(id: string): boolean };
}

export class Forwarder {
  // Idle connections are dropped well before a peer's own keep-alive timeout (5 s said, 15 s kept):
  // a request is never sent on a connection the peer is closing.
  private readonly httpAgent = new HttpAgent({ keepAlive: true, maxSockets: 256, timeout: IDLE_CONNECTION_MS });
  private readonly httpsAgent = new HttpsAgent({ keepAlive: true, maxSockets: 256, timeout: IDLE_CONNECTION_MS });

  /** Sessions this node took in the catalog to resume (Cluster.lease), by the requests answering here that took them. */
  private readonly leases = new Map<string, number>();

  constructor(private readonly options: ForwarderOptions) {}

  /** The peer this request goes to, or undefined when this node answers it. */
  async target(request: IncomingMessage): Promise<Peer | undefined> {
    const { cluster, registry } = this.options;
    const draining = registry.isDraining;
    const forwarded = request.headers[FORWARDED_BY_HEADER] !== undefined;
    const direct = namedIdOf(request);
    if (direct?.kind === 'mcp') {
      if (!this.options.connections?.holds(direct.id)) return this.connectionTarget(request, direct.id, forwarded);
      // Held here: answered here, or, in a drain, taken up by a peer once its sessions are paused.
      if (!draining) return undefined;
      return (await registry.pauses.settledScope(`mcp:${direct.id}`)) ? this.roomiest() : undefined;
    }
    // A forwarded request is answered where it arrived, unless this node is going away, or it is its
    // session's home (the peer went by the id's tag), which no longer holds it: then, once more, to the
    // node the catalog says resumed it. No other node forwards it again: no loops.
    if (!draining && forwarded) {
      if (direct === undefined || !this.movable(direct) || !direct.id.startsWith(cluster.tag) || this.holds(direct))
        return undefined;
      return cluster.locate(direct.id).catch(() => undefined);
    }
    const named = direct ?? (await this.azureNamed(request));
    if (named === undefined || named === 'new') {
      const creation = named === 'new' || isCreation(request);
      return creation && (draining || !registry.hasRoom()) ? this.roomiest() : undefined;
    }
    if (named.kind === 'session') {
      // One being paused by a drain: once it is, a peer resumes it.
      if (draining) await registry.pauses.settled(named.id);
    }
    if (this.movable(named) && this.holds(named)) return undefined;
    const peer = await cluster.peerOf(named.id);
    if (peer || !this.movable(named)) return peer;
    const located = await cluster.locate(named.id).catch(() => undefined);
    if (located) return located;
    if (draining) return this.roomiest();
    // Its home is gone and no live node holds it: this node resumes it unless another took it first.
    if (!this.mayLease(request)) return undefined;
    const leased = await cluster.lease(named.id).catch(() => undefined);
    if (leased) return leased;
    this.leases.set(named.id, (this.leases.get(named.id) ?? 0) + 1);
    return undefined;
  }

  /**
   * Whether a request may write the catalog (a lease): one with a key this server takes, or E2B's
   * sandbox traffic, which carries its sandbox's tokens instead (checked once the sandbox is read).
   * Others are answered here without one: they cannot make this node write the store at will (a
   * refused request's lease would be written and deleted again), and the snapshot's claim still
   * lets only one node resume the session.
   */
  private mayLease(request: IncomingMessage): boolean {
    // A port's traffic, too: its URL is its credential (or its token, checked once the sandbox is read).
    if (typeof request.headers['e2b-sandbox-id'] === 'string' || claimedPorts.has(request)) return true;
    try {
      const apiKey = request.headers['x-api-key'];
      this.options.apiKeys.authenticate(request.headers.authorization, typeof apiKey === 'string' ? apiKey : undefined);
      return true;
    } catch {
      return false;
    }
  }

  /** Whether what the id names moves between nodes (found in the catalog once it left its home). */
  private movable(named: NamedId): boolean {
    return named.kind === 'session' || named.kind === 'conversation';
  }

  /** Whether this node holds the session or conversation the id names. */
  private holds(named: NamedId): boolean {
    if (named.kind === 'conversation') return this.options.conversations?.holds(named.id) ?? false;
    return this.options.registry.holds(named.id);
  }

  /**
   * A request answered here is done: a session it leased (target) that this node did not go on to
   * hold (it was not found, refused, or not resumed by this request) is let go in the catalog.
   */
  async done(request: IncomingMessage): Promise<void> {
    const named = namedIdOf(request);
    const count = named === undefined ? undefined : this.leases.get(named.id);
    if (named === undefined || count === undefined) return;
    if (count > 1) {
      this.leases.set(named.id, count - 1);
      return;
    }
    this.leases.delete(named.id);
    if (!this.holds(named)) await this.options.cluster.unplace(named.id).catch(() => undefined);
  }

  /**
   * Where a request for MCP connection `id`, which this node does not hold, goes: to its id's node
   * (first), which holds it unless another node took it up; there, to the node its record names
   * (one hop more); else nowhere, and this node takes it up (mcp/http.ts), unless it is draining:
   * then a peer with room does.
   */
  private async connectionTarget(request: IncomingMessage, id: string, forwarded: boolean): Promise<Peer | undefined> {
    const { cluster, registry, connections, apiKeys } = this.options;
    if (!forwarded) {
      const home = await cluster.peerOf(id);
      if (home) return home;
    }
    // The record is read from the store for a key only: no one else makes this node read it at will.
    try {
      apiKeys.authenticate(request.headers.authorization);
    } catch {
      return undefined;
    }
    const holder = await connections?.holder(id);
    if (holder !== undefined && holder !== cluster.node) {
      const peer = cluster.livePeers().find((candidate) => candidate.node === holder);
      if (peer) return peer;
    }
    return registry.isDraining ? this.roomiest() : undefined;
  }

  /**
   * An Azure request's session, found by its identifier (a name the client chose, so not tagged):
   * undefined when it is held here (or the key is not one), 'new' when no node has it yet.
   */
  private async azureNamed(request: IncomingMessage): Promise<NamedId | 'new' | undefined> {
    const url = new URL(request.url ?? '/', 'http://request.invalid');
    const identifier = url.searchParams.get('identifier');
    if (!url.pathname.startsWith(AZURE_PREFIX) || identifier === null) return undefined;
    let owner: Owner;
    try {
      owner = this.options.apiKeys.authenticate(request.headers.authorization);
    } catch {
      return undefined;
    }
    const where = await this.options.registry.names.where(owner, AZURE_SCOPE, identifier).catch(() => undefined);
    if (!where || where.held) return undefined;
    return where.id === undefined ? 'new' : { id: where.id, kind: 'session' };
  }

  /**
   * Sends the request to `peer` and its answer back. False when the peer could not be reached
   * before anything of the request was sent: the caller answers it here (the peer is taken for dead).
   */
  forward(request: IncomingMessage, response: ServerResponse, peer: Peer): Promise<boolean> {
    const url = new URL(request.url ?? '/', peer.url);
    const https = url.protocol === 'https:';
    const headers = this.passedOn(request.headers);
    return new Promise<boolean>((resolve) => {
      let bodySent = false;
      const upstream: ClientRequest = (https ? httpsRequest : httpRequest)(url, {
        method: request.method ?? 'GET',
        headers,
        agent: https ? this.httpsAgent : this.httpAgent,
      });
      // A machine gone answers nothing at all: without this, a connection would wait minutes for it.
      const connecting = setTimeout(() => {
        const error: NodeJS.ErrnoException = new Error(`no connection within ${CONNECT_TIMEOUT_MS} ms`);
        error.code = 'ETIMEDOUT';
        upstream.destroy(error);
      }, CONNECT_TIMEOUT_MS);
      upstream.on('close', () => clearTimeout(connecting));
      upstream.on('socket', (socket) => {
        // The body is read only once the peer is reached: a dead peer leaves it for this node to answer.
        const send = () => {
          clearTimeout(connecting);
          bodySent = hasBody(request);
          request.pipe(upstream);
        };
        if (socket.connecting) socket.once('connect', send);
        else send();
      });
      upstream.on('response', (answer) => {
        const passed: Record<string, string | string[]> = {};
        for (const [name, value] of Object.entries(answer.headers)) {
          if (value !== undefined && !HOP_BY_HOP.has(name)) passed[name] = value;
        }
        response.writeHead(answer.statusCode ?? 502, passed);
        // A stream's headers go at once (its first event may be long in coming); a sized answer's go
        // with its body, in one write.
        if (answer.headers['content-length'] === undefined) response.flushHeaders();
        answer.pipe(response);
        answer.on('error', () => response.destroy());
        resolve(true);
      });
      upstream.on('error', (error: NodeJS.ErrnoException) => {
        if (!bodySent && !response.headersSent && isUnreachable(error)) {
          this.options.cluster.suspect(peer.node);
          this.options.logger.warn({ peer: peer.node, error: error.message }, 'peer unreachable: answering here');
          resolve(false);
          return;
        }
        this.options.logger.warn({ peer: peer.node, error: error.message }, 'forwarded request failed');
        if (!response.headersSent) {
          const body = JSON.stringify({
            error: {
              code: 'node-unreachable',
              message: `The node ${peer.node} holding this session did not answer (${error.code ?? error.message}); try again.`,
            },
          });
          response.writeHead(502, { 'content-type': 'application/json', 'retry-after': '1' });
          response.end(body);
        } else response.destroy();
        resolve(true);
      });
      // The client went away (a closed event stream): so does the forwarded request.
      response.on('close', () => {
        if (!response.writableFinished) upstream.destroy();
      });
    });
  }

  /** The list this request asks for, when it is one that every node answers in part. */
  listOf(request: IncomingMessage): GatheredList | undefined {
    if (request.method !== 'GET' || request.headers[FORWARDED_BY_HEADER] !== undefined) return undefined;
    const path = (request.url ?? '').split('?', 1)[0] ?? '';
    return LISTS.find((list) => list.path.test(path));
  }

  /**
   * Answers a list from every live node, this one included (asked over HTTP, as a peer asks it):
   * this node's answer as it is unless it is a 200, with each peer's entries added. A peer that
   * cannot be reached is taken for dead and left out (its live sessions are gone with it; its
   * paused ones every node lists from the store). A peer reached that does not answer in time, or
   * answers other than 200, makes the list a 503 in the door's shape: a list with a live node's
   * sessions missing would tell a client they are gone (a Jupyter client marks their kernels dead).
   * False when this node could not be asked so: the caller answers it alone.
   */
  async gather(request: IncomingMessage, response: ServerResponse, list: GatheredList): Promise<boolean> {
    const { cluster, logger } = this.options;
    const self = { node: cluster.node, url: cluster.url } as Peer;
    const missing: string[] = [];
    const answers = await Promise.all(
      [self, ...cluster.livePeers()].map((peer) =>
        this.fetchFrom(peer, request)
          .then((answer) => {
            if (answer.status !== 200 && peer !== self) {
              logger.warn({ peer: peer.node, status: answer.status }, 'a node refused its part of a list');
              missing.push(peer.node);
            }
            return answer;
          })
          .catch((error: NodeJS.ErrnoException) => {
            if (peer === self) return undefined;
            if (error.code === UNREACHED) {
              logger.warn({ peer: peer.node, error: error.message }, 'a node could not be reached for a list');
              cluster.suspect(peer.node);
            } else {
              logger.warn({ peer: peer.node, error: error.message }, 'a node did not answer its part of a list');
              missing.push(peer.node);
            }
            return undefined;
          }),
      ),
    );
    const own = answers[0];
    // Its own answer could not be read over HTTP (its advertised address does not reach it): answered here alone.
    if (!own) return false;
    if (own.status !== 200) {
      response.writeHead(own.status, { 'content-type': own.contentType ?? 'application/json' });
      response.end(own.body);
      return true;
    }
    if (missing.length > 0) {
      const message = `The list is incomplete: ${missing.sort().join(', ')} did not give its part (no answer within ${LIST_TIMEOUT_MS / 1000} s, or an error). Retry in a moment.`;
      const body = JSON.stringify(list.failure('list-incomplete', message));
      response.writeHead(503, {
        'content-type': 'application/json',
        'content-length': Buffer.byteLength(body),
        'retry-after': '1',
      });
      response.end(body);
      return true;
    }
    const { items: merged, headers } = mergeList(list, request, answers, (index) =>
      logger.warn({ peer: index === 0 ? cluster.node : 'a peer' }, 'a page of a list came without its cursors'),
    );
    const body = JSON.stringify(list.wrap(merged));
    response.writeHead(200, { ...headers, 'content-length': Buffer.byteLength(body) });
    response.end(body);
    return true;
  }

  /** A GET of the same request from `peer`, answered there (never forwarded again); its status and body. */
  private fetchFrom(
    peer: Peer,
    request: IncomingMessage,
  ): Promise<{ status: number; contentType?: string; body: string; nextToken?: string; cursors?: string }> {
    const url = new URL(request.url ?? '/', peer.url);
    const https = url.protocol === 'https:';
    return new Promise((resolve, reject) => {
      const upstream = (https ? httpsRequest : httpRequest)(url, {
        method: 'GET',
        headers: this.passedOn(request.headers),
        agent: https ? this.httpsAgent : this.httpAgent,
        timeout: LIST_TIMEOUT_MS,
      });
      let reached = false;
      upstream.on('socket', (socket) => {
        if (!socket.connecting) {
          reached = true;
          return;
        }
        // A machine gone answers nothing at all: taken for gone as a forwarded request would be.
        const connecting = setTimeout(
          () => upstream.destroy(new Error(`no connection within ${CONNECT_TIMEOUT_MS} ms`)),
          CONNECT_TIMEOUT_MS,
        );
        upstream.once('close', () => clearTimeout(connecting));
        socket.once('connect', () => {
          clearTimeout(connecting);
          reached = true;
        });
      });
      upstream.on('timeout', () => upstream.destroy(new Error(`no answer within ${LIST_TIMEOUT_MS} ms`)));
      upstream.on('error', (error: NodeJS.ErrnoException) => {
        // Not connected: the peer is gone (a refused connection, a machine that answers nothing).
        if (!reached) error.code = UNREACHED;
        reject(error);
      });
      upstream.on('response', (answer) => {
        const chunks: Buffer[] = [];
        let bytes = 0;
        answer.on('data', (chunk: Buffer) => {
          bytes += chunk.length;
          if (bytes > MAX_LIST_BYTES) upstream.destroy(new Error(`a list over ${MAX_LIST_BYTES} bytes`));
          else chunks.push(chunk);
        });
        answer.on('error', reject);
        answer.on('end', () => {
          const { 'content-type': contentType, 'x-next-token': nextToken, [CURSORS_HEADER]: cursors } = answer.headers;
          resolve({
            status: answer.statusCode ?? 502,
            body: Buffer.concat(chunks).toString('utf8'),
            ...(contentType ? { contentType } : {}),
            ...(typeof nextToken === 'string' ? { nextToken } : {}),
            ...(typeof cursors === 'string' ? { cursors } : {}),
          });
        });
      });
      upstream.end();
    });
  }

  /** Passes an upgrade (Jupyter's channels websocket) on to `peer` as bytes, both ways. */
  upgrade(request: IncomingMessage, socket: Duplex, head: Buffer, peer: Peer): void {
    const url = new URL(peer.url);
    const port = Number(url.port || (url.protocol === 'https:' ? 443 : 80));
    const upstream: Socket =
      url.protocol === 'https:'
        ? tlsConnect({ host: url.hostname, port, servername: url.hostname })
        : netConnect({ host: url.hostname, port });
    upstream.setTimeout(CONNECT_TIMEOUT_MS, () => {
      if (upstream.connecting) upstream.destroy(new Error(`no connection within ${CONNECT_TIMEOUT_MS} ms`));
    });
    socket.on('error', () => upstream.destroy());
    upstream.on('error', (error) => {
      this.options.logger.warn({ peer: peer.node, error: error.message }, 'forwarded upgrade failed');
      socket.destroy();
    });
    upstream.once(url.protocol === 'https:' ? 'secureConnect' : 'connect', () => {
      upstream.setTimeout(0);
      const lines = [`${request.method ?? 'GET'} ${request.url ?? '/'} HTTP/1.1`];
      const raw = request.rawHeaders;
      for (let index = 0; index + 1 < raw.length; index += 2) {
        if (raw[index]?.toLowerCase() === FORWARDED_BY_HEADER) continue;
        lines.push(`${raw[index]}: ${raw[index + 1]}`);
      }
      lines.push(`${FORWARDED_BY_HEADER}: ${this.options.cluster.node}`);
      upstream.write(`${lines.join('\r\n')}\r\n\r\n`);
      if (head.length > 0) upstream.write(head);
      socket.pipe(upstream);
      upstream.pipe(socket);
    });
    socket.on('close', () => upstream.destroy());
    upstream.on('close', () => socket.destroy());
  }

  /** Closes its connections to peers: only once no forwarded request is left (the server's connections are closed). */
  close(): void {
    this.httpAgent.destroy();
    this.httpsAgent.destroy();
  }

  /** The live peer with the most room that is not draining, for a new session; undefined when none has room. */
  private roomiest(): Peer | undefined {
    let best: Peer | undefined;
    for (const peer of this.options.cluster.livePeers()) {
      if (peer.draining || peer.live >= peer.max) continue;
      if (!best || peer.live / peer.max < best.live / best.max) best = peer;
    }
    return best;
  }

  private passedOn(incoming: IncomingMessage['headers']): Record<string, string | string[]> {
    const headers: Record<string, string | string[]> = {};
    for (const [name, value] of Object.entries(incoming)) {
      if (value !== undefined && !HOP_BY_HOP.has(name) && name !== FORWARDED_BY_HEADER) headers[name] = value;
    }
    headers[FORWARDED_BY_HEADER] = this.options.cluster.node;
    return headers;
  }
}

/** Errors that mean nothing reached the peer: it is not there (or not yet). */
function isUnreachable(error: NodeJS.ErrnoException): boolean {
  // Not ECONNRESET: a kept-alive connection the peer closed says nothing of whether it is alive.
  return ['ECONNREFUSED', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN', 'ETIMEDOUT'].includes(
    error.code ?? '',
  );
}
