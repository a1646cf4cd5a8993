/**
 * The E2B front door's own logic on the scripted backend (no sandbox): the
 * Connect stream of Process.Start byte for byte, error shapes and statuses,
 * body and per-key limits, pagination tokens, and what commands receive.
 * The real SDK against real sandboxes is in test/e2b/.
 */
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type LogCapture, startScriptedServer } from '../../../test/support/server.js';
import type { CommandScript, ScriptedCommandContext } from '../../backends/scripted/script.js';
import type { SandcellServer } from '../index.js';
import { END_STREAM_FLAG, encodeEnvelope } from './connect-envelope.js';

const KEY = 'e2b_00112233445566778899aabbccddeeff';
const seen: ScriptedCommandContext[] = [];
const command: CommandScript = (context) => {
  seen.push(context);
  if (context.command.includes('fail'))
    return [
      { type: 'stderr', text: 'bad\n' },
      { type: 'exit', code: 2 },
    ];
  if (context.command.includes('hang')) return [{ type: 'hang' }];
  return [{ type: 'stdout', text: 'hi\n' }];
};

let server: SandcellServer & { logs: LogCapture };

beforeAll(async () => {
  server = await startScriptedServer(
    undefined,
    {
      apiKeys: [KEY],
      limits: { maxSessions: 3, maxRequestBytes: 64 * 1024, maxUploadBytes: 64 * 1024 },
    },
    { command },
  );
});
afterAll(async () => {
  await server?.close();
});

const control = (path: string, init: RequestInit = {}) =>
  fetch(`${server.url}/e2b${path}`, {
    ...init,
    headers: { 'x-api-key': KEY, 'content-type': 'application/json', ...init.headers },
  });

async function createSandbox(body: Record<string, unknown> = {}) {
  const response = await control('/sandboxes', {
    method: 'POST',
    body: JSON.stringify({ templateID: 'base', ...body }),
  });
  expect(response.status).toBe(201);
  return (await response.json()) as {
    sandboxID: string;
    envdAccessToken: string;
    envdVersion: string;
    clientID: string;
  };
}

/** Splits a Connect stream into its envelopes: [flag, JSON]. */
function envelopes(bytes: Buffer): [number, unknown][] {
  const out: [number, unknown][] = [];
  for (let offset = 0; offset < bytes.length; ) {
    const length = bytes.readUInt32BE(offset + 1);
    out.push([bytes[offset] ?? -1, JSON.parse(bytes.subarray(offset + 5, offset + 5 + length).toString())]);
    offset += 5 + length;
  }
  return out;
}

describe('E2B routes (scripted)', () => {
  it('answers create with the fields every SDK requires, and the older path too', async () => {
    const created = await createSandbox();
    // The SDKs' getHost(port) builds `${port}-${sandboxID}.${domain}`: the server's own, on this machine.
    expect(created).toMatchObject({ clientID: 'sandcell', envdVersion: '0.5.7', domain: `localhost:${server.port}` });
    expect(created.envdAccessToken).toMatch(/^[0-9a-f]{64}$/);
    // A base URL given with a trailing slash still reaches the route.
    expect((await control(`//sandboxes/${created.sandboxID}`)).status).toBe(200);
    expect((await control(`/sandboxes/${created.sandboxID}`, { method: 'DELETE' })).status).toBe(204);
    const again = await control(`/sandboxes/${created.sandboxID}`, { method: 'DELETE' });
    expect(again.status).toBe(404);
    expect(await again.json()).toEqual({ code: 404, message: expect.any(String) });
  });

  it('streams Process.Start as Connect envelopes: start, base64 data, end, then the end of stream', async () => {
    const sandbox = await createSandbox({ envVars: { FROM_SANDBOX: '1' } });
    const response = await fetch(`${server.url}/e2b/process.Process/Start`, {
      method: 'POST',
      headers: {
        'e2b-sandbox-id': sandbox.sandboxID,
        'e2b-sandbox-port': '49983',
        'x-access-token': sandbox.envdAccessToken,
        'content-type': 'application/connect+json',
      },
      body: encodeEnvelope({ process: { cmd: '/bin/bash', args: ['-l', '-c', "echo it's"], envs: { OWN: '2' } } }),
    });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('application/connect+json');
    const events = envelopes(Buffer.from(await response.arrayBuffer()));
    expect(events).toEqual([
      [0, { event: { start: { pid: expect.any(Number) } } }],
      [0, { event: { data: { stdout: Buffer.from('hi\n').toString('base64') } } }],
      [0, { event: { end: { exitCode: 0, exited: true, status: 'exit status 0' } } }],
      [END_STREAM_FLAG, {}],
    ]);
    const last = seen.at(-1);
    expect(last?.command).toBe(`exec '/bin/bash' '-l' '-c' 'echo it'\\''s'`);
    expect(last?.cwd).toBe('/home/user');
    expect(last?.env).toMatchObject({ HOME: '/home/user', FROM_SANDBOX: '1', OWN: '2' });
    await control(`/sandboxes/${sandbox.sandboxID}`, { method: 'DELETE' });
  });

  it('maps errors to Connect codes with their statuses, and a stream’s refusal to its end of stream', async () => {
    const sandbox = await createSandbox();
    const headers = {
      'e2b-sandbox-id': sandbox.sandboxID,
      'e2b-sandbox-port': '49983',
      'x-access-token': sandbox.envdAccessToken,
    };
    const signal = await fetch(`${server.url}/e2b/process.Process/SendSignal`, {
      method: 'POST',
      headers: { ...headers, 'content-type': 'application/json' },
      body: JSON.stringify({ process: { pid: 99999 }, signal: 'SIGNAL_SIGKILL' }),
    });
    expect(signal.status).toBe(404);
    expect(await signal.json()).toMatchObject({ code: 'not_found' });
    const unknown = await fetch(`${server.url}/e2b/filesystem.Filesystem/Chmod`, {
      method: 'POST',
      headers: { ...headers, 'content-type': 'application/json' },
      body: '{}',
    });
    expect(await unknown.json()).toMatchObject({ code: 'unimplemented' });
    const pty = await fetch(`${server.url}/e2b/process.Process/Start`, {
      method: 'POST',
      headers: { ...headers, 'content-type': 'application/connect+json' },
      body: encodeEnvelope({ process: { cmd: 'bash' }, pty: { size: { cols: 80, rows: 24 } } }),
    });
    // A scripted sandbox runs no programs, so it has no terminal to give: the stream's end says so.
    expect(envelopes(Buffer.from(await pty.arrayBuffer()))).toEqual([
      [END_STREAM_FLAG, { error: { code: expect.any(String), message: expect.stringContaining('no terminals') } }],
    ]);
    // Another port is the app's, through the port door: a scripted sandbox has no way in to its ports.
    const port = await fetch(`${server.url}/e2b/health`, { headers: { ...headers, 'e2b-sandbox-port': '8080' } });
    expect(port.status).toBe(501);
    expect(await port.json()).toMatchObject({ sandboxId: sandbox.sandboxID, code: 501 });
    const notAPort = await fetch(`${server.url}/e2b/health`, { headers: { ...headers, 'e2b-sandbox-port': 'x' } });
    expect(notAPort.status).toBe(502);
    await control(`/sandboxes/${sandbox.sandboxID}`, { method: 'DELETE' });
  });

  it('bounds bodies (413) and sandboxes per key (429, the SDK’s RateLimitError), in E2B’s error shape', async () => {
    const large = await control('/sandboxes', {
      method: 'POST',
      body: JSON.stringify({ templateID: 'base', metadata: { big: 'x'.repeat(100_000) } }),
    });
    expect(large.status).toBe(413);
    expect(await large.json()).toMatchObject({ code: 413 });
    const created = [await createSandbox(), await createSandbox(), await createSandbox()];
    const refused = await control('/sandboxes', { method: 'POST', body: '{}' });
    expect(refused.status).toBe(429);
    const { message } = (await refused.json()) as { code: number; message: string };
    expect(message).toContain('limit');
    // An E2B user frees a sandbox with the SDK; /v1's routes are another front door's words.
    expect(message).toContain('sandbox.kill()');
    expect(message).not.toContain('/v1');
    for (const sandbox of created) await control(`/sandboxes/${sandbox.sandboxID}`, { method: 'DELETE' });
  });

  it('bounds uploads, decompressed too, and reads back what fits', async () => {
    const sandbox = await createSandbox();
    const upload = (body: Uint8Array, headers: Record<string, string>) =>
      fetch(`${server.url}/e2b/files?path=${encodeURIComponent('/home/user/up.bin')}`, {
        method: 'POST',
        headers: {
          'e2b-sandbox-id': sandbox.sandboxID,
          'e2b-sandbox-port': '49983',
          'x-access-token': sandbox.envdAccessToken,
          'content-type': 'application/octet-stream',
          ...headers,
        },
        body,
      });
    const fits = await upload(gzipSync(Buffer.from('ok')), { 'content-encoding': 'gzip' });
    expect(await fits.json()).toEqual([{ name: 'up.bin', type: 'file', path: '/home/user/up.bin' }]);
    const bomb = await upload(gzipSync(Buffer.alloc(1024 * 1024)), { 'content-encoding': 'gzip' });
    expect(bomb.status).toBe(413);
    expect(await bomb.json()).toMatchObject({ code: 413 });
    expect((await upload(new Uint8Array(100 * 1024), {})).status).toBe(413);
    await control(`/sandboxes/${sandbox.sandboxID}`, { method: 'DELETE' });
  });

  it('pages the list newest first (or oldest first) with an opaque token, filters it, and refuses a forged token', async () => {
    const created = [
      await createSandbox({ metadata: { page: 'yes' } }),
      await createSandbox({ metadata: { page: 'yes' } }),
    ];
    const ids = async (response: Response) =>
      ((await response.json()) as { sandboxID: string }[]).map((entry) => entry.sandboxID);
    // The SDK encodes the filter's keys and values, then the query string encodes it again.
    const filter = encodeURIComponent(new URLSearchParams({ page: 'yes' }).toString());
    const first = await control(`/v2/sandboxes?metadata=${filter}&limit=1`);
    const token = first.headers.get('x-next-token');
    expect(token).toBeTruthy();
    expect(await ids(first)).toEqual([created[1]?.sandboxID]);
    const second = await control(`/v2/sandboxes?metadata=${filter}&limit=1&nextToken=${token}`);
    expect(second.headers.get('x-next-token')).toBeNull();
    expect(await ids(second)).toEqual([created[0]?.sandboxID]);
    const oldest = await control(`/v2/sandboxes?metadata=${filter}&order=asc&limit=1`);
    expect(await ids(oldest)).toEqual([created[0]?.sandboxID]);
    const after = await control(
      `/v2/sandboxes?metadata=${filter}&order=asc&limit=1&nextToken=${oldest.headers.get('x-next-token')}`,
    );
    expect(await ids(after)).toEqual([created[1]?.sandboxID]);
    // Repeated states (as the SDK sends a list), a start time, a template.
    expect(await ids(await control(`/v2/sandboxes?metadata=${filter}&state=running&state=paused`))).toHaveLength(2);
    const future = new Date(Date.now() + 60_000).toISOString();
    expect(await ids(await control(`/v2/sandboxes?metadata=${filter}&startedAfter=${future}`))).toEqual([]);
    const past = new Date(Date.now() - 60_000).toISOString();
    expect(await ids(await control(`/v2/sandboxes?metadata=${filter}&startedAfter=${past}`))).toHaveLength(2);
    expect(await ids(await control(`/v2/sandboxes?metadata=${filter}&template=base`))).toHaveLength(2);
    expect(await ids(await control(`/v2/sandboxes?metadata=${filter}&template=other`))).toEqual([]);
    expect((await control('/v2/sandboxes?nextToken=bm90LWEtbnVtYmVy')).status).toBe(400);
    expect((await control('/v2/sandboxes?limit=1000')).status).toBe(400);
    expect((await control('/v2/sandboxes?order=sideways')).status).toBe(400);
    expect((await control('/v2/sandboxes?startedAfter=yesterday')).status).toBe(400);
    for (const sandbox of created) await control(`/sandboxes/${sandbox.sandboxID}`, { method: 'DELETE' });
  });
});
