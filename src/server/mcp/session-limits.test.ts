/**
 * MCP sessions per key stay bounded, over real HTTP on 127.0.0.1 with the
 * official SDK's client; no code runs, so the kernels are the scripted
 * backend's.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rawRequest, waitFor } from '../../../test/support/raw-http.js';
import { type LogCapture, startScriptedServer } from '../../../test/support/server.js';
import type { SandcellServer } from '../index.js';

type Server = SandcellServer & { logs: LogCapture };

const KEY = 'limits-test-key-0001';
const OTHER_KEY = 'limits-test-key-0002';
const keyed = (key = KEY) => ({ authorization: `Bearer ${key}` });

describe('MCP sessions per key', () => {
  let server: Server;
  const clients: Client[] = [];

  beforeAll(async () => {
    server = await startScriptedServer(undefined, {
      apiKeys: [KEY, OTHER_KEY],
      poolSize: 0,
      limits: { maxMcpSessions: 3 },
    });
  });
  afterAll(async () => {
    for (const client of clients) await client.close().catch(() => undefined);
    await server?.close();
  });

  async function connect(key = KEY): Promise<{ client: Client; transport: StreamableHTTPClientTransport }> {
    const client = new Client({ name: 'limits-test', version: '1.0.0' });
    const transport = new StreamableHTTPClientTransport(new URL(`${server.url}/mcp`), {
      requestInit: { headers: keyed(key) },
    });
    await client.connect(transport);
    clients.push(client);
    return { client, transport };
  }

  it('refuses the next initialize past the limit, saying how to close one; a closed one frees its slot', async () => {
    const open = [await connect(), await connect(), await connect()];
    await expect(connect()).rejects.toThrow(/DELETE \/mcp/);
    const refused = await rawRequest(server.port, '/mcp', {
      method: 'POST',
      headers: { ...keyed(), 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: { protocolVersion: '2025-03-26', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
      }),
    });
    expect(refused.status).toBe(429);
    expect(refused.json).toMatchObject({ jsonrpc: '2.0', error: { code: -32000 } });
    expect(refused.json.error.message).toContain('Mcp-Session-Id');
    expect(refused.headers['retry-after']).toBeDefined();

    // The limit is per key.
    const other = await connect(OTHER_KEY);
    expect((await other.client.listTools()).tools.length).toBe(8);

    // The open ones keep working; closing one (DELETE /mcp) lets a new one in.
    expect((await open[0]!.client.listTools()).tools.length).toBe(8);
    await open[0]!.transport.terminateSession();
    const next = await connect();
    expect((await next.client.listTools()).tools.length).toBe(8);
    await expect(connect()).rejects.toThrow(/3 MCP sessions open/);
  });
});

describe('MCP sessions that idle out', () => {
  let server: Server;

  beforeAll(async () => {
    server = await startScriptedServer(undefined, { poolSize: 0, idleTimeoutMs: 1_000, limits: { maxMcpSessions: 1 } });
  });
  afterAll(async () => {
    await server?.close();
  });

  it('free their slot', async () => {
    const initialize = () =>
      rawRequest(server.port, '/mcp', {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
        body: JSON.stringify({
          jsonrpc: '2.0',
          id: 1,
          method: 'initialize',
          params: { protocolVersion: '2025-03-26', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
        }),
      });
    expect((await initialize()).status).toBe(200);
    expect((await initialize()).status).toBe(429);
    let next = 0;
    await waitFor('the idle MCP session to close', async () => {
      next = (await initialize()).status;
      return next === 200;
    });
    expect(next).toBe(200);
  });
});
