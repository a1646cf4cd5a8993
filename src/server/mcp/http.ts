/**
 * MCP over Streamable HTTP at /mcp. Each MCP connection (Mcp-Session-Id) has
 * its own MCP server and its own sandboxes, belongs to the key that opened it,
 * and closes its sandboxes when the client deletes it or it idles out. A key
 * holds at most `limits.maxMcpSessions` of them; a connection is bound to the
 * `Host` (and `Origin`) it was opened with, checked by the SDK's own
 * DNS-rebinding protection on each later request too.
 *
 * A connection outlives its node: its record (owner, host, origin, the client's
 * name and capabilities) is kept beside the paused sessions, and a request for a
 * connection this node does not hold (its node drained, died or restarted) takes
 * it up here under the same id, as if initialized again: its named sessions,
 * paused with the drain, resume at their next call.
 */
import { randomUUID } from 'node:crypto';
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import {
  type ClientCapabilities,
  type Implementation,
  LATEST_PROTOCOL_VERSION,
  SUPPORTED_PROTOCOL_VERSIONS,
} from '@modelcontextprotocol/sdk/types.js';
import type { Context } from 'hono';
import { z } from 'zod';
import type { Owner } from '../core/auth.js';
import type { ServerContext } from '../core/context.js';
import { createMcpServer } from './mcp-server.js';

interface Connection {
  transport: WebStandardStreamableHTTPServerTransport;
  owner: Owner;
  lastUsedAt: number;
}

/** What is kept of a connection, for a node to take it up. */
const ConnectionRecord = z.object({
  owner: z.string().max(256),
  /** The node that holds it now: the one that opened it, or took it up last. */
  node: z.string().max(256).optional(),
  host: z.string().max(1024).optional(),
  origin: z.string().max(2048).optional(),
  client: z.object({ name: z.string().max(256), version: z.string().max(256) }).optional(),
  capabilities: z.record(z.string(), z.unknown()).optional(),
});
type ConnectionRecord = z.infer<typeof ConnectionRecord>;

/** What a client refused for the MCP session limit is told to wait (a session may idle out or be closed). */
const MCP_LIMIT_RETRY_AFTER_SECONDS = 30;
const CONNECTION_ID = /^[a-z0-9-]{1,64}$/;

const jsonRpcError = (status: number, message: string, headers: Record<string, string> = {}): Response =>
  new Response(JSON.stringify({ jsonrpc: '2.0', error: { code: -32000, message }, id: null }), {
    status,
    headers: { 'content-type': 'application/json', ...headers },
  });

export class McpHttpEndpoint {
  private readonly connections = new Map<string, Connection>();
  /** Initializations under way, by owner: counted against the limit before they are connections. */
  private readonly opening = new Map<string, number>();
  private readonly sweeper: NodeJS.Timeout;
  /** Connections being taken up from their records, by id: two requests at once take one up once. */
  private readonly takingUp = new Map<string, Promise<Connection | undefined>>();
  private closing = false;

  constructor(private readonly server: ServerContext) {
    this.sweeper = setInterval(() => this.closeIdle(), Math.min(60_000, server.options.idleTimeoutMs));
    this.sweeper.unref();
  }

  get size(): number {
    return this.connections.size;
  }

  async handle(context: Context, owner: Owner): Promise<Response> {
    const sessionId = context.req.header('mcp-session-id');
    if (sessionId) {
      const connection = this.connections.get(sessionId) ?? (await this.takeUp(context, owner, sessionId));
      // Another key's connection is "not found", like its sandboxes.
      if (!connection || connection.owner.id !== owner.id) {
        return jsonRpcError(404, 'Unknown MCP session; initialize a new one.');
      }
      connection.lastUsedAt = Date.now();
      return connection.transport.handleRequest(context.req.raw);
    }
    if (context.req.method !== 'POST') {
      return jsonRpcError(400, 'Start an MCP session with an initialize request (POST).');
    }
    if (this.server.registry.isShuttingDown) return jsonRpcError(503, 'The server is shutting down.');
    const limit = this.server.options.limits.maxMcpSessions;
    const open = this.countOwned(owner) + (this.opening.get(owner.id) ?? 0);
    if (open >= limit) {
      this.server.metrics.rejected.inc({ reason: 'mcp-sessions-per-key' });
      return jsonRpcError(
        429,
        `This key already has ${open} MCP sessions open, its limit: close one you no longer use ` +
          '(DELETE /mcp with its Mcp-Session-Id header; clients do this when they close), let one idle out, ' +
          'or raise --mcp-sessions-per-key.',
        { 'retry-after': String(MCP_LIMIT_RETRY_AFTER_SECONDS) },
      );
    }
    this.opening.set(owner.id, (this.opening.get(owner.id) ?? 0) + 1);
    try {
      return await this.open(context, owner);
    } finally {
      const opening = (this.opening.get(owner.id) ?? 1) - 1;
      if (opening > 0) this.opening.set(owner.id, opening);
      else this.opening.delete(owner.id);
    }
  }

  private async open(context: Context, owner: Owner): Promise<Response> {
    const id = this.server.registry.ownId(randomUUID());
    const record: ConnectionRecord = {
      owner: owner.id,
      node: this.server.registry.node,
      ...optional('host', context.req.header('host')),
      ...optional('origin', context.req.header('origin')),
    };
    const { transport, mcp } = await this.connect(id, owner, record);
    const response = await transport.handleRequest(context.req.raw);
    if (!this.connections.has(id)) {
      await transport.close();
      return response;
    }
    this.server.logger.info({ mcpSession: id, owner: owner.label }, 'MCP session opened');
    const client = mcp.server.getClientVersion();
    const capabilities = mcp.server.getClientCapabilities();
    const kept: ConnectionRecord = {
      ...record,
      ...(client ? { client: { name: client.name, version: client.version } } : {}),
      ...(capabilities ? { capabilities } : {}),
    };
    await this.keep(id, kept);
    return response;
  }

  /** Whether this node holds connection `id` (forwarding.ts answers its requests here). */
  holds(id: string): boolean {
    return this.connections.has(id);
  }

  /** The node that holds connection `id` by its record (the one that took it up last), if it has one. */
  async holder(id: string): Promise<string | undefined> {
    const record = await this.read(id).catch(() => undefined);
    return record?.node;
  }

  /** Writes the record; without it the connection works here, but no other node can take it up. */
  private async keep(id: string, record: ConnectionRecord): Promise<void> {
    await this.server.registry.connections
      .keepConnection(id, Buffer.from(JSON.stringify(record)))
      .catch((error: Error) =>
        this.server.logger.warn({ mcpSession: id, error: error.message }, 'could not keep the MCP session'),
      );
  }

  private async read(id: string): Promise<ConnectionRecord | undefined> {
    if (!CONNECTION_ID.test(id)) return undefined;
    const bytes = await this.server.registry.connections.findConnection(id);
    if (bytes === undefined) return undefined;
    const parsed = ConnectionRecord.safeParse(JSON.parse(Buffer.from(bytes).toString('utf8')));
    return parsed.success ? parsed.data : undefined;
  }

  /** An MCP server on a new transport for connection `id`, bound to the record's host and origin. */
  private async connect(id: string, owner: Owner, record: ConnectionRecord) {
    const scope = `mcp:${id}`;
    const { maxRequestBytes, maxUploadBytes } = this.server.options.limits;
    const transport = new WebStandardStreamableHTTPServerTransport({
      sessionIdGenerator: () => id,
      enableJsonResponse: true,
      // Our browser guard already checked this request; the SDK then holds the connection to it.
      enableDnsRebindingProtection: true,
      allowedHosts: record.host === undefined ? [] : [record.host],
      allowedOrigins: record.origin === undefined ? [] : [record.origin],
      maxRequestBodySize: Math.max(maxRequestBytes, Math.ceil((maxUploadBytes * 4) / 3) + 64 * 1024),
      onsessioninitialized: () => {
        this.connections.set(id, { transport, owner, lastUsedAt: Date.now() });
      },
      onsessionclosed: () => void this.forget(id, owner, scope),
    });
    transport.onclose = () => void this.forget(id, owner, scope);
    const mcp = createMcpServer({
      registry: this.server.registry,
      owner,
      scope,
      version: this.server.version,
      deployment: 'http',
      defaultEnvironment: this.server.options.sessionOptions.environmentName,
    });
    await mcp.connect(transport);
    return { transport, mcp };
  }

  /**
   * Connection `id` of `owner`, opened by a node that no longer holds it, taken up here from its
   * record: initialized again (as its client did, with the protocol version it speaks now) under
   * the same id. Undefined when there is no such record of this owner's.
   */
  private takeUp(context: Context, owner: Owner, id: string): Promise<Connection | undefined> {
    if (!CONNECTION_ID.test(id) || this.server.registry.isShuttingDown) return Promise.resolve(undefined);
    let taking = this.takingUp.get(id);
    if (!taking) {
      taking = this.takeUpNow(context, owner, id)
        .catch((error: Error) => {
          this.server.logger.warn({ mcpSession: id, error: error.message }, 'could not take up an MCP session');
          return undefined;
        })
        .finally(() => this.takingUp.delete(id));
      this.takingUp.set(id, taking);
    }
    return taking;
  }

  private async takeUpNow(context: Context, owner: Owner, id: string): Promise<Connection | undefined> {
    const record = await this.read(id);
    if (record?.owner !== owner.id) return undefined;
    const { transport } = await this.connect(id, owner, record);
    const asked = context.req.header('mcp-protocol-version');
    const version = asked && SUPPORTED_PROTOCOL_VERSIONS.includes(asked) ? asked : LATEST_PROTOCOL_VERSION;
    const headers = {
      accept: 'application/json, text/event-stream',
      'content-type': 'application/json',
      ...optional('host', record.host),
      ...optional('origin', record.origin),
    };
    const send = (body: unknown, more: Record<string, string> = {}) =>
      transport.handleRequest(
        new Request(context.req.url, { method: 'POST', headers: { ...headers, ...more }, body: JSON.stringify(body) }),
      );
    const client: Implementation = record.client ?? { name: 'unknown', version: '0' };
    const capabilities: ClientCapabilities = (record.capabilities ?? {}) as ClientCapabilities;
    const initialized = await send({
      jsonrpc: '2.0',
      id: 0,
      method: 'initialize',
      params: { protocolVersion: version, capabilities, clientInfo: client },
    });
    const connection = this.connections.get(id);
    if (!initialized.ok || !connection) {
      await transport.close();
      return undefined;
    }
    await send(
      { jsonrpc: '2.0', method: 'notifications/initialized' },
      { 'mcp-session-id': id, 'mcp-protocol-version': version },
    );
    // Held here now: the other nodes send its requests here. Its sessions were paused where it was.
    this.server.registry.pauses.markScopePaused(`mcp:${id}`);
    await this.keep(id, { ...record, node: this.server.registry.node });
    this.server.logger.info(
      { mcpSession: id, owner: owner.label, from: record.node },
      'MCP session taken up from its record',
    );
    return connection;
  }

  async close(): Promise<void> {
    // Its connections are kept (their sessions were paused): another node, or this one restarted, takes them up.
    this.closing = true;
    clearInterval(this.sweeper);
    await Promise.all([...this.connections.values()].map((connection) => connection.transport.close()));
  }

  private countOwned(owner: Owner): number {
    let count = 0;
    for (const connection of this.connections.values()) if (connection.owner.id === owner.id) count++;
    return count;
  }

  private async forget(id: string, owner: Owner, scope: string): Promise<void> {
    if (!this.connections.delete(id)) return;
    if (this.closing) return;
    this.server.logger.info({ mcpSession: id }, 'MCP session closed');
    await this.server.registry.connections.forgetConnection(id).catch(() => undefined);
    await this.server.registry.removeScope(owner, scope).catch(() => undefined);
  }

  private closeIdle(): void {
    const cutoff = Date.now() - this.server.options.idleTimeoutMs;
    for (const connection of this.connections.values()) {
      if (connection.lastUsedAt < cutoff) void connection.transport.close();
    }
  }
}

const optional = <Name extends string>(name: Name, value: string | undefined): { [key in Name]?: string } =>
  (value === undefined ? {} : { [name]: value }) as { [key in Name]?: string };
