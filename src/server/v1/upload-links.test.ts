/**
 * Files in by stream and by upload link, over real HTTP on 127.0.0.1, on the scripted backend
 * (its /mnt/data is the scripted file store, which the kernel's answers read): a PUT is streamed
 * into the session, bounded by the server's upload limit and not by the session's transfer
 * limit; an upload link writes only its one file of its one session, with no key, until it
 * expires. On a real sandbox, with a large file and the server's memory watched:
 * test/server-published-outputs.test.ts.
 */
import { createHash } from 'node:crypto';
import http from 'node:http';
import { describe, expect, it } from 'vitest';
import { byCode, value } from '../../../test/support/kernel-script.js';
import { useScriptedServer } from '../../../test/support/server.js';

// biome-ignore lint/suspicious/noExplicitAny: response bodies are read loosely in tests
type Json = Record<string, any>;

const ALICE = 'alice:alice-upload-links-key-000001';
const BOB = 'bob:bob-upload-links-key-0000000001';
const TRANSFER_BYTES = 64 * 1024;
const UPLOAD_BYTES = 1024 * 1024;

const sha256 = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex');

// The code reports what the session's /mnt/data holds: the digest of each file the test asks about.
const kernel = byCode({
  digests: ({ files }) => [
    value(
      JSON.stringify(
        Object.fromEntries(
          files
            .list('', { recursive: true })
            .filter((entry) => entry.type === 'file')
            .map((entry) => [entry.path, sha256(files.read(entry.path))]),
        ),
      ),
    ),
  ],
});

const fixture = useScriptedServer(kernel, {
  apiKeys: [ALICE, BOB],
  sessionOptions: { fileTransferBytes: TRANSFER_BYTES },
  limits: { maxUploadBytes: UPLOAD_BYTES },
});
const alice = fixture.clientWith(ALICE.slice(ALICE.indexOf(':') + 1));
const bob = fixture.clientWith(BOB.slice(BOB.indexOf(':') + 1));

async function newSession(): Promise<string> {
  return (await alice.json<{ id: string }>('/v1/sessions', { method: 'POST' })).id;
}

/** Path → sha256 of every file in the session, as its code sees them. */
async function digests(id: string): Promise<Record<string, string>> {
  const execution = await alice.json<Json>(`/v1/sessions/${id}/executions`, {
    method: 'POST',
    json: { code: 'digests' },
  });
  return JSON.parse(execution.results[0].data['text/plain']);
}

/** A PUT through node:http, `pieces` chunks of `size` bytes with no Content-Length (chunked). */
function putChunked(
  path: string,
  pieces: number,
  size: number,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: Json }> {
  const url = new URL(`${fixture.server.url}${path}`);
  return new Promise((resolve, reject) => {
    const request = http.request(
      url,
      { method: 'PUT', headers: { 'transfer-encoding': 'chunked', ...headers } },
      (response) => {
        let body = '';
        response.on('data', (chunk) => {
          body += chunk;
        });
        response.on('end', () => resolve({ status: response.statusCode ?? 0, body: JSON.parse(body) }));
      },
    );
    request.on('error', reject);
    let sent = 0;
    const pump = () => {
      while (sent < pieces && request.write(Buffer.alloc(size, sent % 251))) sent++;
      if (sent >= pieces) request.end();
      else request.once('drain', pump);
    };
    pump();
  });
}

async function uploadLink(id: string, body: Json, client = alice): Promise<Json> {
  return client.json<Json>(`/v1/sessions/${id}/files/upload-link`, { method: 'POST', json: body });
}

/** A PUT to a link, with no key. */
function putTo(url: string, body: string | Uint8Array, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(`${fixture.server.url}${url}`, { method: 'PUT', body, headers });
}

const content = Buffer.from(Array.from({ length: 700_000 }, (_, index) => (index * 13) % 256));

describe('files in by stream', () => {
  it('a PUT streams a file past the session’s transfer limit, up to the server’s upload limit', async () => {
    const id = await newSession();
    expect(content.length).toBeGreaterThan(TRANSFER_BYTES);
    const put = await alice(`/v1/sessions/${id}/files/in/big.bin`, { method: 'PUT', body: content });
    expect(put.status).toBe(201);
    expect(await put.json()).toMatchObject({ path: 'in/big.bin', size: content.length });
    expect(await digests(id)).toEqual({ 'in/big.bin': sha256(content) });
    // A multipart upload too: the form is within the upload limit, so is each file.
    const form = new FormData();
    form.append('file', new Blob([content]), 'form.bin');
    const posted = await alice(`/v1/sessions/${id}/files`, { method: 'POST', body: form });
    expect(posted.status).toBe(201);
    expect(await digests(id)).toEqual({ 'in/big.bin': sha256(content), 'form.bin': sha256(content) });
    expect((await alice(`/v1/sessions/${id}/files/form.bin`, { method: 'DELETE' })).status).toBe(204);

    // Past the upload limit without a Content-Length: cut there, 413, and nothing of it stays.
    const over = await putChunked(`/v1/sessions/${id}/files/over.bin`, 20, 64 * 1024, {
      authorization: `Bearer ${ALICE.slice(ALICE.indexOf(':') + 1)}`,
    });
    expect(over.status).toBe(413);
    expect(over.body.error).toMatchObject({ code: 'body-too-large', message: expect.stringContaining('1 MiB') });
    // With one that says so: refused before a byte is read.
    const declared = await alice(`/v1/sessions/${id}/files/declared.bin`, {
      method: 'PUT',
      body: Buffer.alloc(UPLOAD_BYTES + 1),
    });
    expect(declared.status).toBe(413);
    expect(await digests(id)).toEqual({ 'in/big.bin': sha256(content) });
  });
});

describe('upload links', () => {
  it('writes its one file with no key, again until it expires, and nothing else', async () => {
    const id = await newSession();
    const made = await uploadLink(id, { path: '/mnt/data/inputs/data.bin' });
    expect(made).toMatchObject({
      method: 'PUT',
      path: 'inputs/data.bin',
      url: expect.stringMatching(/^\/v1\/uploads\//),
    });
    const ttl = Date.parse(made.expiresAt) - Date.now();
    expect(ttl).toBeGreaterThan(55 * 60_000); // the server's --link-ttl: 1 hour by default
    expect(ttl).toBeLessThanOrEqual(60 * 60_000);

    const put = await putTo(made.url, content);
    expect(put.status).toBe(201);
    expect(await put.json()).toMatchObject({ path: 'inputs/data.bin', size: content.length });
    // Used again, it replaces the file: a client may retry a failed upload.
    const again = await putTo(made.url, 'second');
    expect(again.status).toBe(201);
    expect(await digests(id)).toEqual({ 'inputs/data.bin': sha256(Buffer.from('second')) });

    // From a page on another site too: the link is its own credential, where another keyless PUT from there is refused.
    const foreign = { origin: 'https://elsewhere.example', 'sec-fetch-site': 'cross-site' };
    expect((await putTo(made.url, 'from a page', foreign)).status).toBe(201);
    const keyless = await putTo(`/v1/sessions/${id}/files/x.txt`, 'x', foreign);
    expect(keyless.status).toBe(403);
    expect(((await keyless.json()) as Json).error.code).toBe('cross-site-request');

    // The same upload limit as any upload.
    const over = await putChunked(made.url, 20, 64 * 1024);
    expect(over.status).toBe(413);
    // Cut before its first piece reached the sandbox: the file is the last one written whole.
    expect(await digests(id)).toEqual({ 'inputs/data.bin': sha256(Buffer.from('from a page')) });
  });

  it('refuses a changed, foreign or expired link, and one of a closed session, with the same 404', async () => {
    const id = await newSession();
    // Its token expires on the second below: within 1 to 2 s from now.
    const made = await uploadLink(id, { path: 'a.txt', expiresIn: 2 });
    const token = made.url.slice('/v1/uploads/'.length) as string;
    const [payload, signature] = token.split('.') as [string, string];
    // Its payload names another path: the signature no longer matches.
    const claims = JSON.parse(Buffer.from(payload, 'base64url').toString());
    const forged = Buffer.from(JSON.stringify({ ...claims, p: 'elsewhere.txt' })).toString('base64url');
    const flipped = `${signature.slice(0, -2)}${signature.endsWith('AA') ? 'BB' : 'AA'}`;
    for (const bad of [`${forged}.${signature}`, `${payload}.${flipped}`, payload, 'x'.repeat(3000), `${token}.x`]) {
      const answer = await putTo(`/v1/uploads/${bad}`, 'bytes');
      expect(answer.status, bad.slice(0, 40)).toBe(bad.length > 2048 ? 400 : 404);
    }
    // Positive control before it expires, then the same link after.
    expect((await putTo(made.url, 'in time')).status).toBe(201);
    await new Promise((resolve) => setTimeout(resolve, 2100));
    const late = await putTo(made.url, 'late');
    expect(late.status).toBe(404);
    expect(((await late.json()) as Json).error.message).toMatch(/expired/);
    expect(await digests(id)).toEqual({ 'a.txt': sha256(Buffer.from('in time')) });

    // Another key cannot make a link to this session; a closed session's link writes nothing.
    expect(
      (await bob(`/v1/sessions/${id}/files/upload-link`, { method: 'POST', json: { path: 'b.txt' } })).status,
    ).toBe(404);
    const live = await uploadLink(id, { path: 'c.txt' });
    expect((await alice(`/v1/sessions/${id}`, { method: 'DELETE' })).status).toBe(204);
    expect((await putTo(live.url, 'after close')).status).toBe(404);
  });

  it('refuses a path outside /mnt/data and a life past 7 days', async () => {
    const id = await newSession();
    for (const body of [
      { path: '../etc/passwd' },
      { path: '/etc/passwd' },
      { path: '' },
      { path: 'a.txt', expiresIn: 8 * 24 * 3600 },
      { path: 'a.txt', expiresIn: 0 },
      { path: 'a.txt', extra: true },
    ]) {
      const answer = await alice(`/v1/sessions/${id}/files/upload-link`, { method: 'POST', json: body });
      expect(answer.status, JSON.stringify(body)).toBe(400);
    }
    const keyless = await fetch(`${fixture.server.url}/v1/sessions/${id}/files/upload-link`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ path: 'a' }),
    });
    expect(keyless.status).toBe(401);
  });
});
