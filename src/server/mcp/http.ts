/**
 * MCP over Streamable HTTP at /mcp. Each MCP connection (Mcp-Session-Id) has
 * its own MCP server and its own sandboxes, belongs to the key that opened it,
 * and closes its sandboxes when the client deletes it or it idles out. A key
 * holds at most `limits.maxMcpSessions` of them; a connection is bound to the
 * `Host` (and `Origin`) it was opened with, checked by the SDK's own
 * DNS-rebinding protection on each later request too.
 */
import { randomUUID } from 'node:crypto';
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import type { Context } from 'hono';
import type { Owner } from '../core/auth.js';
import type { ServerContext } from '../core/context.js';
import { createMcpServer } from './mcp-server.js';

interface Connection {
  transport: WebStandardStreamableHTTPServerTransport;
  owner: Owner;
  lastUsedAt: number;
}

/** What a client refused for the MCP session limit is told to wait (a session may idle out or be closed). */
const MCP_LIMIT_RETRY_AFTER_SECONDS = 30;

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
      const connection = this.connections.get(sessionId);
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
    const scope = `mcp:${id}`;
    const { maxRequestBytes, maxUploadBytes } = this.server.options.limits;
    const host = context.req.header('host');
    const origin = context.req.header('origin');
    const transport = new WebStandardStreamableHTTPServerTransport({
      sessionIdGenerator: () => id,
      enableJsonResponse: true,
      // Our browser guard already checked this request; the SDK then holds the connection to it.
      enableDnsRebindingProtection: true,
      allowedHosts: host === undefined ? [] : [host],
      allowedOrigins: origin === undefined ? [] : [origin],
      maxRequestBodySize: Math.max(maxRequestBytes, Math.ceil((maxUploadBytes * 4) / 3) + 64 * 1024),
      onsessioninitialized: () => {
        this.connections.set(id, { transport, owner, lastUsedAt: Date.now() });
        this.server.logger.info({ mcpSession: id, owner: owner.label }, 'MCP session opened');
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
    const response = await transport.handleRequest(context.req.raw);
    if (!this.connections.has(id)) await transport.close();
    return response;
  }

  async close(): Promise<void> {
    clearInterval(this.sweeper);
    await Promise.all([...this.connections.values()].map((connection) => connection.transport.close()));
  }

  private countOwned(owner: Owner): number {
    let count = 0;
    for (const connection of this.connections.values()) if (connection.owner.id === owner.id) count++;
    return count;
  }

  private async forget(id: string, owner: Owner, scope: string): Promise<void> {
    if (this.connections.delete(id)) this.server.logger.info({ mcpSession: id }, 'MCP session closed');
    await this.server.registry.removeScope(owner, scope).catch(() => undefined);
  }

  private closeIdle(): void {
    const cutoff = Date.now() - this.server.options.idleTimeoutMs;
    for (const connection of this.connections.values()) {
      if (connection.lastUsedAt < cutoff) void connection.transport.close();
    }
  }
}
