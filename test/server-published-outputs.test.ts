/**
 * Published outputs (`publishOutputs`, `--publish-outputs`): the files an
 * execution writes in a real bubblewrap sandbox are uploaded as it ends and
 * answered with signed links, on each kind of store — a directory (the server
 * signs and serves its links), Azure Blob on Azurite (a SAS) and S3 on s3rver
 * (a presigned GET; s3rver checks no signature, so what the link signs is
 * checked in src/server/core/output-publisher.test.ts). A link downloads the
 * same bytes without a key, names one file only, and stops working after its
 * expiry; a store gone mid-publish leaves the execution intact and says so,
 * and the file is published after the next execution; a 200 MB output streams
 * with the server's memory bounded.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SandcellServer, ServerOptions } from '../src/server/index.js';
import { type Azurite, type S3Server, startAzurite, startS3rver } from './support/object-store-emulators.js';
import { runProcess } from './support/process.js';
import { startTestServer } from './support/server.js';

// biome-ignore lint/suspicious/noExplicitAny: response bodies are read loosely in tests
type Json = Record<string, any>;
const KEY = 'publisher:published-outputs-key-0123';
const OTHER_KEY = 'other:another-teams-key-456789';
const scratch = mkdtempSync(path.join(os.tmpdir(), 'sandcell-published-'));
const saved: Record<string, string | undefined> = {};

/** Variables the store drivers read from the environment (this process's: the servers run in it). */
function setEnvironment(variables: Record<string, string>): void {
  for (const [name, value] of Object.entries(variables)) {
    if (!(name in saved)) saved[name] = process.env[name];
    process.env[name] = value;
  }
}

let azurite: Azurite;
let s3: S3Server;
const servers: SandcellServer[] = [];
beforeAll(async () => {
  [azurite, s3] = await Promise.all([startAzurite(['sandcell']), startS3rver(['sandcell'])]);
  setEnvironment({
    ...s3.environment,
    AZURE_STORAGE_CONNECTION_STRING: azurite.connectionString,
    SANDCELL_SNAPSHOT_SECRET: randomBytes(32).toString('hex'),
  });
}, 60_000);
afterAll(async () => {
  await Promise.all(servers.map((server) => server.close()));
  azurite?.stop();
  await s3?.stop();
  for (const [name, value] of Object.entries(saved)) {
    if (value === undefined) delete process.env[name];
    else process.env[name] = value;
  }
  rmSync(scratch, { recursive: true, force: true });
});

async function serve(options: ServerOptions): Promise<SandcellServer> {
  const server = await startTestServer({
    apiKeys: [KEY, OTHER_KEY],
    stateDirectory: mkdtempSync(path.join(scratch, 'state-')),
    ...options,
  });
  servers.push(server);
  return server;
}

async function request(server: SandcellServer, route: string, body?: unknown, key = KEY): Promise<Response> {
  return fetch(`${server.url}${route}`, {
    method: body === undefined ? 'GET' : 'POST',
    headers: { authorization: `Bearer ${key.split(':')[1]}`, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
}

async function call(server: SandcellServer, route: string, body?: unknown, key = KEY): Promise<Json> {
  const response = await request(server, route, body, key);
  expect(response.status, await response.clone().text()).toBeLessThan(300);
  return (await response.json()) as Json;
}

/**
 * A published output copied into another session of the same key by its link (read from the store,
 * not fetched); another key's session, or a link to elsewhere, is refused.
 */
async function importedElsewhere(server: SandcellServer, url: string, bytes: Buffer): Promise<void> {
  const other = await call(server, '/v1/sessions', {});
  const imported = await call(server, `/v1/sessions/${other.id}/files/import`, { url, path: 'in/trend.png' });
  expect(imported.files).toEqual([expect.objectContaining({ path: 'in/trend.png', size: bytes.length })]);
  const copy = await fetch(`${server.url}/v1/sessions/${other.id}/files/in/trend.png`, {
    headers: { authorization: `Bearer ${KEY.split(':')[1]}` },
  });
  expect(Buffer.from(await copy.arrayBuffer()).equals(bytes)).toBe(true);
  const stranger = await call(server, '/v1/sessions', {}, OTHER_KEY);
  const refused = await request(server, `/v1/sessions/${stranger.id}/files/import`, { url }, OTHER_KEY);
  expect(refused.status).toBe(400);
  const elsewhere = await request(server, `/v1/sessions/${other.id}/files/import`, {
    url: 'https://example.com/x.png',
  });
  expect(elsewhere.status).toBe(400);
}

const CHART = `
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
plt.plot([1, 3, 2])
plt.savefig("charts/trend.png")
print("saved")
`;

/** A session that saves a chart: the execution's files, and the chart's bytes as the session serves them (with the key). */
async function chartPublished(server: SandcellServer, create: Json = {}) {
  const session = await call(server, '/v1/sessions', create);
  await call(server, `/v1/sessions/${session.id}/executions`, {
    code: 'import os; os.makedirs("charts", exist_ok=True)',
  });
  const execution = await call(server, `/v1/sessions/${session.id}/executions`, { code: CHART });
  const direct = await fetch(`${server.url}/v1/sessions/${session.id}/files/charts/trend.png`, {
    headers: { authorization: `Bearer ${KEY.split(':')[1]}` },
  });
  return { session, execution, bytes: Buffer.from(await direct.arrayBuffer()) };
}

describe('published outputs on a directory (the state directory’s store)', () => {
  it('a chart comes back with a link this server serves without a key; a session that did not ask has none', async () => {
    const server = await serve({ publishOutputs: true });
    const { session, execution, bytes } = await chartPublished(server);
    expect(execution.stdout).toBe('saved\n');
    expect(execution.files).toEqual([
      {
        path: 'charts/trend.png',
        size: bytes.length,
        url: expect.stringMatching(/^\/v1\/outputs\/[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/),
        expiresAt: expect.any(String),
      },
    ]);
    expect(new Date(execution.files[0].expiresAt).getTime() - Date.now()).toBeGreaterThan(3_500_000);
    const link = await fetch(`${server.url}${execution.files[0].url}`);
    expect(link.status).toBe(200);
    expect(link.headers.get('content-type')).toBe('image/png');
    expect(link.headers.get('content-security-policy')).toContain('sandbox');
    expect(Buffer.from(await link.arrayBuffer()).equals(bytes)).toBe(true);
    // An execution that writes nothing publishes nothing.
    expect((await call(server, `/v1/sessions/${session.id}/executions`, { code: '1 + 1' })).files).toEqual([]);
    // A changed token is no link.
    const changed = `${execution.files[0].url.slice(0, -3)}AAA`;
    expect((await fetch(`${server.url}${changed}`)).status).toBe(404);

    await importedElsewhere(server, execution.files[0].url, bytes);

    const quiet = await call(server, '/v1/sessions', { publishOutputs: false });
    expect(
      (await call(server, `/v1/sessions/${quiet.id}/executions`, { code: 'open("x.txt", "w").write("x")' })).files,
    ).toBeUndefined();
  }, 120_000);

  it('a conversation’s cell links the published copy of what it wrote (the web UI shows the turn as the API answers it)', async () => {
    const server = await serve({ publishOutputs: true });
    const conversation = await call(server, '/v1/conversations', {});
    const turn = await call(server, `/v1/conversations/${conversation.id}/cells`, {
      code: 'open("notes.md", "w").write("# Notes")',
    });
    const files = JSON.stringify(turn).match(/"url":"(\/v1\/outputs\/[^"]+)"/);
    expect(files, JSON.stringify(turn)).not.toBeNull();
    expect(await (await fetch(`${server.url}${files?.[1]}`)).text()).toBe('# Notes');
  }, 120_000);

  it('an MCP client (the SDK, over /mcp) is told each file with its link', async () => {
    const server = await serve({ publishOutputs: true });
    const client = new Client({ name: 'published-outputs', version: '1.0.0' });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${server.url}/mcp`), {
        requestInit: { headers: { authorization: `Bearer ${KEY.split(':')[1]}` } },
      }),
    );
    try {
      const result = (await client.callTool({
        name: 'run_python',
        arguments: { code: 'open("report.txt", "w").write("the report")' },
      })) as CallToolResult;
      const text = result.content.map((part) => (part.type === 'text' ? part.text : '')).join('\n');
      const link = /\[file\] report\.txt \(10 B\): (\/v1\/outputs\/\S+) \(the link expires /.exec(text);
      expect(link, text).not.toBeNull();
      expect(await (await fetch(`${server.url}${link?.[1]}`)).text()).toBe('the report');
    } finally {
      await client.close();
    }
  }, 120_000);

  it('a session asks for it on a server that does not publish by default; its link stops working after the TTL', async () => {
    const server = await serve({ linkTtlMs: 1000 });
    const { session, execution, bytes } = await chartPublished(server, { publishOutputs: true });
    expect(session.publishOutputs).toBe(true);
    const url = `${server.url}${execution.files[0].url}`;
    expect(Buffer.from(await (await fetch(url)).arrayBuffer()).equals(bytes)).toBe(true);
    await new Promise((resolve) => setTimeout(resolve, 2100));
    expect((await fetch(url)).status).toBe(404);
    // Uploads are the client's own files, not an execution's outputs.
    const upload = await fetch(`${server.url}/v1/sessions/${session.id}/files/in/data.csv`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${KEY.split(':')[1]}` },
      body: 'a,b\n1,2\n',
    });
    expect(upload.status).toBeLessThan(300);
    expect((await call(server, `/v1/sessions/${session.id}/executions`, { code: '2' })).files).toEqual([]);
  }, 120_000);
});

/** PUTs 200 MB of random bytes, made and hashed piece by piece, to the URL it is given; prints the answer and the digest. */
const UPLOADER = `
import { createHash, randomBytes } from 'node:crypto';
const hash = createHash('sha256');
let pieces = 0;
const body = new ReadableStream({
  pull(controller) {
    if (pieces++ === 50) return controller.close();
    const piece = randomBytes(4 << 20);
    hash.update(piece);
    controller.enqueue(piece);
  },
});
const answer = await fetch(process.argv[1], { method: 'PUT', body, duplex: 'half' });
console.log(JSON.stringify({ status: answer.status, file: await answer.json(), digest: hash.digest('hex') }));
`;

describe('published outputs on Azure Blob (Azurite): a read-only SAS', () => {
  it('downloads the same bytes without a key, names no other blob, lists nothing, and expires', async () => {
    const server = await serve({
      store: 'azure://devstoreaccount1/sandcell/published',
      publishOutputs: true,
      linkTtlMs: 3000,
    });
    const { execution, bytes } = await chartPublished(server);
    const url = new URL(execution.files[0].url);
    expect(url.origin).toBe(new URL(azurite.connectionString.match(/BlobEndpoint=([^;]+)/)?.[1] as string).origin);
    expect(url.searchParams.get('sp')).toBe('r');
    expect(url.searchParams.get('sr')).toBe('b');
    const link = await fetch(url);
    expect(link.status).toBe(200);
    expect(link.headers.get('content-type')).toBe('image/png');
    expect(Buffer.from(await link.arrayBuffer()).equals(bytes)).toBe(true);

    await importedElsewhere(server, execution.files[0].url, bytes);

    const otherBlob = new URL(url);
    otherBlob.pathname = `${url.pathname.slice(0, url.pathname.lastIndexOf('/'))}/other.png`;
    expect((await fetch(otherBlob)).status).toBe(403);
    const listing = new URL(url);
    listing.pathname = '/devstoreaccount1/sandcell';
    listing.searchParams.set('restype', 'container');
    listing.searchParams.set('comp', 'list');
    expect((await fetch(listing)).status).toBe(403);
    const write = await fetch(url, { method: 'PUT', headers: { 'x-ms-blob-type': 'BlockBlob' }, body: 'x' });
    expect(write.status).toBe(403);

    await new Promise((resolve) => setTimeout(resolve, 4000));
    expect((await fetch(url)).status).toBe(403);
  }, 120_000);

  // Azurite runs in its own process: what this process holds is the server's (and s3rver would hold the upload),
  // and the client's here, which makes and hashes its 200 MB upload piece by piece.
  it('200 MB stream out to the store, back in by import, and in by an upload link, with the server’s memory bounded', async () => {
    const server = await serve({
      store: 'azure://devstoreaccount1/sandcell/large',
      publishOutputs: true,
      limits: { maxUploadBytes: 256 << 20 },
    });
    const session = await call(server, '/v1/sessions', {});
    const other = await call(server, '/v1/sessions', {});
    const digest = async (id: string, name: string) => {
      const execution = await call(server, `/v1/sessions/${id}/executions`, {
        code: `import hashlib\nh = hashlib.sha256()\nwith open("${name}", "rb") as f:\n    for piece in iter(lambda: f.read(1 << 20), b""): h.update(piece)\nh.hexdigest()`,
      });
      return String(execution.results[0]?.data['text/plain']).replaceAll("'", '');
    };
    const before = process.memoryUsage().rss;
    let peak = before;
    const sampler = setInterval(() => {
      peak = Math.max(peak, process.memoryUsage().rss);
    }, 20);
    let uploaded = '';
    try {
      const execution = await call(server, `/v1/sessions/${session.id}/executions`, {
        code: 'import os\nwith open("big.bin", "wb") as f:\n    for _ in range(50): f.write(os.urandom(4 << 20))',
        timeoutMs: 120_000,
      });
      expect(execution.status).toBe('ok');
      expect(execution.files).toEqual([
        expect.objectContaining({ path: 'big.bin', size: 200 << 20, url: expect.any(String) }),
      ]);

      // Back in by its link: read from the store into another session, past the 64 MiB transfer limit.
      const imported = await call(server, `/v1/sessions/${other.id}/files/import`, {
        url: execution.files[0].url,
        path: 'copy.bin',
      });
      expect(imported.files).toEqual([expect.objectContaining({ path: 'copy.bin', size: 200 << 20 })]);

      // A large input by an upload link, PUT with no key as the bytes are made, by a client in a process
      // of its own (so what this process holds is the server's).
      const link = await call(server, `/v1/sessions/${other.id}/files/upload-link`, { path: 'input.bin' });
      const client = await runProcess(process.execPath, [
        '--input-type=module',
        '-e',
        UPLOADER,
        `${server.url}${link.url}`,
      ]);
      expect(client.code, client.stderr).toBe(0);
      const answer = JSON.parse(client.stdout);
      expect(answer).toMatchObject({ status: 201, file: { path: 'input.bin', size: 200 << 20 } });
      uploaded = answer.digest;
    } finally {
      clearInterval(sampler);
    }
    const growth = (peak - before) / (1 << 20);
    process.stderr.write(
      `[measure] 200 MB publish, import and upload: the test process's RSS grew by ${growth.toFixed(0)} MiB at its peak\n`,
    );
    // One of the files held whole would add 200 MiB; the pieces in flight and the collector's timing stay
    // under this (a CI run saw 122 MiB).
    expect(growth).toBeLessThan(160);
    const published = await digest(session.id, 'big.bin');
    expect(published).toMatch(/^[0-9a-f]{64}$/);
    expect(await digest(other.id, 'copy.bin')).toBe(published);
    expect(await digest(other.id, 'input.bin')).toBe(uploaded);
  }, 300_000);
});

describe('published outputs on S3 (s3rver): a presigned GET', () => {
  it('downloads the same bytes without a key', async () => {
    const server = await serve({ store: 's3://sandcell/published', publishOutputs: true });
    const { execution, bytes } = await chartPublished(server);
    const url = new URL(execution.files[0].url);
    expect(url.searchParams.get('X-Amz-Expires')).toBe('3600');
    const link = await fetch(url);
    expect(link.status).toBe(200);
    expect(Buffer.from(await link.arrayBuffer()).equals(bytes)).toBe(true);
  }, 120_000);

  // Last: it takes the S3 store away for a while.
  it('a store gone at an execution’s end leaves its result intact and says so; the file is published after the next', async () => {
    const server = await serve({ store: 's3://sandcell/gone', publishOutputs: true });
    const session = await call(server, '/v1/sessions', {});
    await s3.close();
    let execution: Json;
    try {
      execution = await call(server, `/v1/sessions/${session.id}/executions`, {
        code: 'open("result.txt", "w").write("42")\nprint("done")',
      });
    } finally {
      await s3.reopen();
    }
    expect(execution.status).toBe('ok');
    expect(execution.stdout).toBe('done\n');
    expect(execution.files).toEqual([
      { path: 'result.txt', size: 2, error: expect.stringContaining('not published: ') },
    ]);
    const next = await call(server, `/v1/sessions/${session.id}/executions`, { code: 'print("again")' });
    expect(next.files).toEqual([expect.objectContaining({ path: 'result.txt', size: 2, url: expect.any(String) })]);
    expect(await (await fetch(next.files[0].url)).text()).toBe('42');
  }, 120_000);
});
