/**
 * The hostile-request sweep of server-hostile-requests.test.ts, for the routes a server has only
 * with a store that publishes outputs: a real `sandcell serve --store fs://DIR --publish-outputs`
 * (the server signs and serves its own links), with two keys. Its doors here: a published
 * output's link (`GET /v1/outputs/{token}`, no key), E2B's signed file URLs at the server's root
 * (`/files?…&signature=v1_…`, made by the unmodified SDK) and an import of a published output into a
 * session (`POST /v1/sessions/{id}/files/import`). Each group starts with the request that must
 * work, so a broken setup cannot pass as a refusal; every refusal is a 4xx with an error in JSON
 * that shows no file's bytes (a 100 KB request line is Node's bare 431, before any route); after
 * each group the process still answers /healthz and a live session still holds its variable.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { Sandbox } from 'e2b';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rawRequest, waitFor } from './support/raw-http.js';
import { head, host, sendRaw } from './support/raw-socket.js';
import { type Json, killServes, type Serve, startServe, stopServe } from './support/serve-process.js';

const KEY = 'hostile-store-key-000000000001';
const OTHER_KEY = 'hostile-store-key-000000000002';
/** Short, so a link is seen to expire (the flag's least is 1s; a fresh link works for 2 s at least). */
const LINK_TTL_SECONDS = 3;
const MAX_UPLOAD_BYTES = 256 * 1024;
/** In every published file's bytes and every sandbox file's: a refusal that shows it leaked a file. */
const CONTENT_MARK = 'hostile-store-bytes';
const SANDBOX_SECRET = `${CONTENT_MARK}-sandbox-secret-${randomBytes(8).toString('hex')}`;
const FROM_ELSEWHERE = {
  origin: 'https://elsewhere.example',
  'sec-fetch-site': 'cross-site',
  'sec-fetch-mode': 'navigate',
  'sec-fetch-dest': 'document',
};
const E2B_VARIABLES = ['E2B_API_URL', 'E2B_SANDBOX_URL', 'E2B_API_KEY', 'E2B_DOMAIN', 'E2B_DEBUG'] as const;

const scratch = mkdtempSync(path.join(os.tmpdir(), 'sandcell-hostile-store-'));
const savedEnvironment = Object.fromEntries(E2B_VARIABLES.map((name) => [name, process.env[name]]));
let serve: Serve;
let port: number;
let sessionId: string;
let theirSessionId: string;
let sandbox: Sandbox | undefined;

interface Answer {
  status: number;
  text: string;
  json?: Json;
}

function parsed(status: number, text: string): Answer {
  try {
    return { status, text, json: JSON.parse(text) as Json };
  } catch {
    return { status, text };
  }
}

/** A request with a key (`undefined`: none), JSON in and out. */
async function api(route: string, body?: unknown, key: string | undefined = KEY): Promise<Answer> {
  const response = await fetch(`${serve.url}${route}`, {
    method: body === undefined ? 'GET' : 'POST',
    headers: {
      ...(key === undefined ? {} : { authorization: `Bearer ${key}` }),
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return parsed(response.status, await response.text());
}

/** A request on a fresh connection, its target sent as written (fetch would normalise `..` and more). */
async function raw(target: string, request: Parameters<typeof rawRequest>[2] = {}): Promise<Answer> {
  const answer = await rawRequest(port, target, request);
  return { status: answer.status, text: answer.text, json: answer.json };
}

let published = 0;
/** A file the session writes, published as the execution ends: its link, its bytes (marked) and when the link expires. */
async function publishOutput(session: string, key: string) {
  published++;
  const name = `out-${published}.txt`;
  const bytes = `${CONTENT_MARK}-${published}-${randomBytes(8).toString('hex')}`;
  const run = await api(
    `/v1/sessions/${session}/executions`,
    { code: `open(${JSON.stringify(name)}, "w").write(${JSON.stringify(bytes)})` },
    key,
  );
  expect(run.status, run.text).toBe(200);
  const file = (run.json?.files as Json[] | undefined)?.find((entry) => entry.path === name);
  expect(file?.url, run.text).toMatch(/^\/v1\/outputs\/[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/);
  const url = String(file?.url);
  return {
    name,
    url,
    token: url.slice('/v1/outputs/'.length),
    bytes,
    expiresAt: Date.parse(String(file?.expiresAt)),
  };
}

/** A refusal: a 4xx (never a 5xx) with an error in JSON (this server's, or E2B's shape), and no file's bytes. */
function expectRefused(answer: Answer, what: string, status?: number): void {
  const shown = `${what}: ${answer.status} ${answer.text.slice(0, 300)}`;
  if (status !== undefined) expect(answer.status, shown).toBe(status);
  expect(answer.status, shown).toBeGreaterThanOrEqual(400);
  expect(answer.status, shown).toBeLessThan(500);
  expect(answer.json?.error?.message ?? answer.json?.message, shown).toEqual(expect.any(String));
  expectNothingLeaked(answer, what);
}

function expectNothingLeaked(answer: { text: string }, what: string): void {
  expect(answer.text, what).not.toContain(CONTENT_MARK);
  expect(answer.text, what).not.toMatch(/root:[^:]*:0:0:/);
}

/** The process still serves, and the live session still holds what it was given. */
async function expectStillServing(what: string): Promise<void> {
  expect(serve.child.exitCode, what).toBeNull();
  expect(serve.child.signalCode, what).toBeNull();
  expect((await fetch(`${serve.url}/healthz`)).status, what).toBe(200);
  const run = await api(`/v1/sessions/${sessionId}/executions`, { code: 'x + 1' });
  expect(run.status, what).toBe(200);
  expect(JSON.stringify(run.json?.results), what).toContain('42');
}

/** The server process's open file descriptors (each published file it serves opens one). */
function openDescriptors(): number {
  return readdirSync(`/proc/${serve.child.pid}/fd`).length;
}

/** A base64url character that decodes to the same bits in a 32-byte digest's last place (43 characters hold 258 bits). */
function sameDigestCharacter(character: string): string {
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
  return alphabet[alphabet.indexOf(character) ^ 1] as string;
}

/** `text` with its character at `index` replaced by another of the base64url alphabet. */
function flipped(text: string, index: number): string {
  const at = index < 0 ? text.length + index : index;
  return `${text.slice(0, at)}${text[at] === 'A' ? 'B' : 'A'}${text.slice(at + 1)}`;
}

beforeAll(async () => {
  serve = await startServe(
    [
      '--pool-size',
      '1',
      '--preload',
      'none',
      '--store',
      `fs://${path.join(scratch, 'store')}`,
      '--publish-outputs',
      '--link-ttl',
      `${LINK_TTL_SECONDS}s`,
      '--max-upload-bytes',
      String(MAX_UPLOAD_BYTES),
    ],
    // No state directory (the test env's SANDCELL_STATE_DIR=none): the store's secret is this one.
    { SANDCELL_API_KEYS: `${KEY},${OTHER_KEY}`, SANDCELL_SNAPSHOT_SECRET: randomBytes(32).toString('hex') },
  );
  port = Number(new URL(serve.url).port);
  const created = await api('/v1/sessions', {});
  expect(created.status, created.text).toBe(201);
  sessionId = String(created.json?.id);
  expect((await api(`/v1/sessions/${sessionId}/executions`, { code: 'x = 41' })).status).toBe(200);
  const theirs = await api('/v1/sessions', {}, OTHER_KEY);
  expect(theirs.status, theirs.text).toBe(201);
  theirSessionId = String(theirs.json?.id);

  for (const name of E2B_VARIABLES) delete process.env[name];
  process.env.E2B_API_URL = `${serve.url}/e2b`;
  process.env.E2B_SANDBOX_URL = `${serve.url}/e2b`;
  process.env.E2B_API_KEY = KEY;
  sandbox = await Sandbox.create();
});

afterAll(async () => {
  await sandbox?.kill().catch(() => undefined);
  if (serve) await stopServe(serve, 'SIGTERM');
  killServes();
  for (const [name, value] of Object.entries(savedEnvironment)) {
    if (value === undefined) delete process.env[name];
    else process.env[name] = value;
  }
  rmSync(scratch, { recursive: true, force: true });
});

describe('hostile requests to the routes of a server that publishes outputs', () => {
  it('GET /v1/outputs/{token}: the link as issued serves its bytes to anyone; anything else is refused, and it expires', async () => {
    const mine = await publishOutput(sessionId, KEY);
    const served = await raw(mine.url);
    expect(served.status, served.text).toBe(200);
    expect(served.text).toBe(mine.bytes);
    // Checked again once expired, at the end: it works now, so what changes then is the time.
    const expiring = await publishOutput(sessionId, KEY);
    expect((await raw(expiring.url)).text).toBe(expiring.bytes);

    const [payload = '', signature = ''] = mine.token.split('.');
    const expiringSignature = expiring.token.split('.')[1] ?? '';
    const lastSame = `${signature.slice(0, -1)}${sameDigestCharacter(signature.at(-1) as string)}`;
    const refused: [string, string][] = [
      ['an empty token', '/v1/outputs/'],
      ['a garbage token', '/v1/outputs/garbage'],
      ['a dot alone', '/v1/outputs/.'],
      ['a token of 2 KB and one character', `/v1/outputs/${'A'.repeat(2049)}`],
      ['a real token padded past 2 KB', `/v1/outputs/${mine.token}${'A'.repeat(2100 - mine.token.length)}`],
      ['a token with `..` after it', `${mine.url}..`],
      ['a token with `..` between its parts', `/v1/outputs/${payload}..${signature}`],
      ['a third part after the signature', `${mine.url}.${signature}`],
      ['`..` as the token', '/v1/outputs/..'],
      // Dot segments are resolved before any route or check sees the path (as a browser does): these
      // name /v1/sessions, which needs a key, however the link's exemptions read them.
      ['`..` segments climbing out', '/v1/outputs/../sessions'],
      ['`..` segments after a real token', `${mine.url}/../../sessions`],
      ['encoded `..` segments after a real token', `${mine.url}/%2e%2e/%2e%2e/sessions`],
      ['an encoded NUL after the token', `${mine.url}%00`],
      [
        'an encoded NUL inside the signature',
        `/v1/outputs/${payload}.${signature.slice(0, 20)}%00${signature.slice(20)}`,
      ],
      ['an encoded slash after the token', `${mine.url}%2f..%2f..%2fhealthz`],
      ['an encoded slash for the dot', `/v1/outputs/${payload}%2f${signature}`],
      ['one character of the signature flipped', `/v1/outputs/${payload}.${flipped(signature, 10)}`],
      // A lenient base64 decoder reads both of these as the same digest: the link as issued is the only one.
      ['the signature’s last character changed in bits a decoder drops', `/v1/outputs/${payload}.${lastSame}`],
      [
        'a character the decoder skips inside the signature',
        `/v1/outputs/${payload}.${signature.slice(0, 20)}*${signature.slice(20)}`,
      ],
      ['one character of the payload flipped', `/v1/outputs/${flipped(payload, 10)}.${signature}`],
      ['the payload alone', `/v1/outputs/${payload}`],
      ['the signature alone', `/v1/outputs/.${signature}`],
      ['the payload with another real token’s signature', `/v1/outputs/${payload}.${expiringSignature}`],
      [
        'the signature in standard base64',
        `/v1/outputs/${payload}.${Buffer.from(signature, 'base64url').toString('base64')}`,
      ],
    ];
    for (const [what, target] of refused) expectRefused(await raw(target), what);
    // The link itself still works: each refusal above was of the change, not of an expired link.
    expect((await raw(mine.url)).text, 'the link as issued, after the refusals').toBe(mine.bytes);

    // 100 KB is more than any request line this server reads: refused before any route, the process unharmed.
    for (const [what, token] of [
      ['a 100 KB token', 'A'.repeat(100 * 1024)],
      ['a real token padded to 100 KB', `${mine.token}${'A'.repeat(100 * 1024)}`],
    ] as const) {
      const answer = await sendRaw(port, head([`GET /v1/outputs/${token} HTTP/1.1`, host(port)]));
      expect(answer.status, `${what}: ${answer.text.slice(0, 300)}`).toBeGreaterThanOrEqual(400);
      expect(answer.status, what).toBeLessThan(500);
      expectNothingLeaked(answer, what);
    }

    // Another key's link: the link is the credential, whoever's key (or none) comes with it.
    const theirs = await publishOutput(theirSessionId, OTHER_KEY);
    for (const [what, headers] of [
      ['with its own key', { authorization: `Bearer ${OTHER_KEY}` }],
      ['with another key', { authorization: `Bearer ${KEY}` }],
      ['with no key', {}],
      ['with a key the server does not know', { authorization: 'Bearer not-a-key-of-this-server-0000' }],
    ] as const) {
      const answer = await raw(theirs.url, { headers });
      expect(answer.status, what).toBe(200);
      expect(answer.text, what).toBe(theirs.bytes);
    }

    // Once the pool has refilled, so that a sandbox starting adds no descriptors to the count below.
    await waitFor('the pool to settle', async () => {
      const health = (await (await fetch(`${serve.url}/healthz`)).json()) as Json;
      return health.sessions?.starting === 0;
    });
    // A page on another site: links are meant to be pasted, so it is served.
    const pasted = await publishOutput(sessionId, KEY);
    const fromElsewhere = await raw(pasted.url, { headers: FROM_ELSEWHERE });
    expect(fromElsewhere.status, fromElsewhere.text).toBe(200);
    expect(fromElsewhere.text).toBe(pasted.bytes);

    // A range is served as the range, or as the whole file: never anything else.
    const ranged = await rawRequest(port, pasted.url, { headers: { range: 'bytes=2-5' } });
    if (ranged.status === 206) expect(ranged.text).toBe(pasted.bytes.slice(2, 6));
    else {
      expect(ranged.status).toBe(200);
      expect(ranged.text).toBe(pasted.bytes);
    }

    // HEAD answers as GET without the body, and leaves no file open behind it.
    const before = openDescriptors();
    for (let index = 0; index < 40; index++) {
      const answer = await rawRequest(port, pasted.url, { method: 'HEAD' });
      expect(answer.status).toBe(200);
      expect(answer.headers['content-type']).toBe('text/plain; charset=utf-8');
      expect(answer.text).toBe('');
    }
    expect(openDescriptors() - before, 'file descriptors the server holds after 40 HEAD requests').toBeLessThan(10);

    for (const method of ['POST', 'PUT', 'DELETE', 'PATCH']) {
      const answer = await raw(pasted.url, {
        method,
        headers: { 'content-type': 'text/plain' },
        body: 'overwritten',
      });
      expectRefused(answer, `${method} on a link`);
      const still = await raw(pasted.url);
      expect(still.text, `after ${method} on a link`).toBe(pasted.bytes);
    }

    // An expired link: no longer served, nor imported.
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, expiring.expiresAt + 100 - Date.now())));
    expectRefused(await raw(expiring.url), 'an expired link', 404);
    expectRefused(await raw(expiring.url, { headers: FROM_ELSEWHERE }), 'an expired link from another site', 404);
    expectRefused(
      await api(`/v1/sessions/${sessionId}/files/import`, { url: expiring.url, path: 'imported/expired.txt' }),
      'an import of an expired link',
      400,
    );
    await expectStillServing('after the output links');
  });

  it('GET and POST /files?signature=…: a link opens its own path and operation only, unexpired and within the limits', async () => {
    const live = sandbox as Sandbox;
    const bytes = `${CONTENT_MARK}-sandbox-${randomBytes(8).toString('hex')}`;
    const upload = await fetch(await live.uploadUrl('/home/user/hostile/ok.txt'), {
      method: 'POST',
      headers: { 'content-type': 'application/octet-stream' },
      body: bytes,
    });
    expect(upload.status, await upload.clone().text()).toBe(200);
    const downloadUrl = new URL(await live.downloadUrl('/home/user/hostile/ok.txt'));
    const download = await raw(`${downloadUrl.pathname}${downloadUrl.search}`);
    expect(download.status, download.text).toBe(200);
    expect(download.text).toBe(bytes);
    await live.files.write('/home/user/hostile/secret.txt', SANDBOX_SECRET);
    const soon = new URL(await live.downloadUrl('/home/user/hostile/ok.txt', { useSignatureExpiration: 60 }));
    expect((await raw(`${soon.pathname}${soon.search}`)).text).toBe(bytes);

    const target = (url: URL | string) => {
      const parsedUrl = new URL(url);
      return `${parsedUrl.pathname}${parsedUrl.search}`;
    };
    const signature = downloadUrl.searchParams.get('signature') ?? '';
    const query = downloadUrl.search.slice(1);
    const withQuery = (changes: Record<string, string>) => {
      const changed = new URL(downloadUrl);
      for (const [name, value] of Object.entries(changes)) changed.searchParams.set(name, value);
      return target(changed);
    };
    const refused: [string, string, number?][] = [
      ['an empty signature', withQuery({ signature: '' }), 400],
      ['a garbage signature', withQuery({ signature: 'garbage' }), 400],
      ['v1_ and nothing', withQuery({ signature: 'v1_' }), 400],
      ['v1_ and 43 characters outside base64', withQuery({ signature: `v1_${'%'.repeat(43)}` }), 400],
      ['a signature of 10 KB', withQuery({ signature: `v1_${'A'.repeat(10 * 1024)}` }), 400],
      ['a path of 8 KB', withQuery({ path: `/home/user/${'a'.repeat(8 * 1024)}` }), 400],
      ['one character of the signature flipped', withQuery({ signature: flipped(signature, 10) }), 401],
      ['a link for one path used for another', withQuery({ path: '/home/user/hostile/secret.txt' }), 401],
      ['a link for one path used for /etc/passwd', withQuery({ path: '/etc/passwd' }), 401],
      ['a link used as another user', withQuery({ username: 'root' }), 401],
      ['an expiration added to a link that had none', withQuery({ signature_expiration: '9999999999' }), 401],
      ['an expiration that is not a number', withQuery({ signature_expiration: 'tomorrow' }), 400],
      ['two signatures, a garbage one first', `/files?signature=garbage&${query}`, 400],
      ['two paths, another one first', `/files?path=%2Fhome%2Fuser%2Fhostile%2Fsecret.txt&${query}`, 401],
    ];
    for (const [what, request, status] of refused) expectRefused(await raw(request), what, status);

    // Repeated parameters after a real link's own: the first of each is the one signed and served.
    for (const [what, extra] of [
      ['a second, garbage signature', '&signature=garbage'],
      ['a second path', '&path=%2Fhome%2Fuser%2Fhostile%2Fsecret.txt'],
      ['a second path climbing out', '&path=..%2F..%2Fetc%2Fpasswd'],
    ] as const) {
      const answer = await raw(`${target(downloadUrl)}${extra}`);
      expect(answer.text, what).not.toContain(SANDBOX_SECRET);
      expect(answer.text, what).not.toMatch(/root:[^:]*:0:0:/);
      if (answer.status === 200) expect(answer.text, what).toBe(bytes);
      else expectRefused(answer, what);
    }

    // Without a signature /files is no signed link: nothing of the sandbox is served.
    const unsigned = await raw('/files?path=%2Fhome%2Fuser%2Fhostile%2Fok.txt');
    expect(unsigned.status, unsigned.text).toBeLessThan(500);
    expect(unsigned.text).not.toContain(bytes);

    const expired = await raw(
      target(await live.downloadUrl('/home/user/hostile/ok.txt', { useSignatureExpiration: -60 })),
    );
    expectRefused(expired, 'an expired link', 401);
    expect(expired.json?.message).toMatch(/expired/);

    // Paths outside /home/user, signed as the SDK signs any path: refused, whoever signed them.
    for (const outside of ['../../etc/passwd', '/etc/passwd', '/home/user/../../etc/passwd', '/proc/self/environ']) {
      expectRefused(await raw(target(await live.downloadUrl(outside))), `a download of ${outside}`, 400);
      const written = await raw(target(await live.uploadUrl(outside)), {
        method: 'POST',
        headers: { 'content-type': 'application/octet-stream' },
        body: 'planted',
      });
      expectRefused(written, `an upload to ${outside}`, 400);
    }

    // A download link is no upload link; an upload link writes its own path only, within the upload limit.
    const overwrite = await raw(target(downloadUrl), {
      method: 'POST',
      headers: { 'content-type': 'application/octet-stream' },
      body: 'overwritten',
    });
    expectRefused(overwrite, 'a POST with a download link', 401);
    const otherPath = new URL(await live.uploadUrl('/home/user/hostile/new.txt'));
    otherPath.searchParams.set('path', '/home/user/hostile/secret.txt');
    expectRefused(
      await raw(target(otherPath), {
        method: 'POST',
        headers: { 'content-type': 'application/octet-stream' },
        body: 'overwritten',
      }),
      'an upload link for one path used for another',
      401,
    );
    const tooLarge = await raw(target(await live.uploadUrl('/home/user/hostile/large.bin')), {
      method: 'POST',
      headers: { 'content-type': 'application/octet-stream' },
      body: Buffer.alloc(MAX_UPLOAD_BYTES + 1, 120),
    });
    expectRefused(tooLarge, 'an upload over the limit', 413);
    expect(await live.files.exists('/home/user/hostile/large.bin')).toBe(false);
    expect(await live.files.read('/home/user/hostile/secret.txt')).toBe(SANDBOX_SECRET);
    expect(await live.files.read('/home/user/hostile/ok.txt')).toBe(bytes);

    // A 100 KB query is more than any request line this server reads.
    const huge = await sendRaw(
      port,
      head([`GET /files?path=ok.txt&signature=v1_${'A'.repeat(100 * 1024)} HTTP/1.1`, host(port)]),
    );
    expect(huge.status, huge.text.slice(0, 300)).toBeGreaterThanOrEqual(400);
    expect(huge.status).toBeLessThan(500);
    await expectStillServing('after the signed file URLs');
  });

  it('POST /v1/sessions/{id}/files/import: only the caller’s own published output, read from the store, never fetched', async () => {
    const mine = await publishOutput(sessionId, KEY);
    const control = await api(`/v1/sessions/${sessionId}/files/import`, {
      url: mine.url,
      path: 'imported/control.txt',
    });
    expect(control.status, control.text).toBe(201);
    const copy = await fetch(`${serve.url}/v1/sessions/${sessionId}/files/imported/control.txt`, {
      headers: { authorization: `Bearer ${KEY}` },
    });
    expect(await copy.text()).toBe(mine.bytes);

    // Anything a URL names elsewhere is never asked for: a listener here counts what reaches it.
    let fetched = 0;
    let theirName = '';
    const listener = http.createServer((_request, response) => {
      fetched++;
      response.end(`${CONTENT_MARK}-fetched`);
    });
    await new Promise<void>((resolve) => listener.listen(0, '127.0.0.1', resolve));
    const elsewhere = `http://127.0.0.1:${(listener.address() as AddressInfo).port}`;
    try {
      const theirs = await publishOutput(theirSessionId, OTHER_KEY);
      theirName = theirs.name;
      // The store's key of their output, as a cloud link's path ends in it (the token's payload is not secret).
      const theirPayload = theirs.token.split('.')[0] ?? '';
      const theirKey = String(JSON.parse(Buffer.from(theirPayload, 'base64url').toString('utf8')).k);
      expect(theirKey).toMatch(/^outputs\//);
      const importing: [string, unknown][] = [
        ['another key’s link', { url: theirs.url }],
        ['another key’s link, absolute', { url: `${serve.url}${theirs.url}` }],
        ['another key’s output by its store key, as a cloud link', { url: `https://bucket.example/${theirKey}` }],
        ['another key’s output by its store key on a host that answers', { url: `${elsewhere}/${theirKey}` }],
        ['a host that answers', { url: `${elsewhere}/file.txt` }],
        ['the cloud’s metadata address', { url: 'http://169.254.169.254/latest/meta-data/iam/security-credentials/' }],
        ['a file URL', { url: 'file:///etc/passwd' }],
        ['this server’s own file route', { url: `${serve.url}/v1/sessions/${sessionId}/files/imported/control.txt` }],
        ['this server’s health route', { url: `${serve.url}/healthz` }],
        ['a 100 KB url', { url: `${mine.url}${'A'.repeat(100 * 1024)}` }],
        ['a number for url', { url: 42 }],
        ['null for url', { url: null }],
        ['a list for url', { url: [mine.url] }],
        ['an object for url', { url: { href: mine.url } }],
        ['no url', { path: 'imported/nothing.txt' }],
        ['a field the body does not have', { url: mine.url, owner: 'someone-else' }],
        ['a path climbing out of /mnt/data', { url: mine.url, path: '../../etc/passwd' }],
        ['an absolute path elsewhere', { url: mine.url, path: '/etc/passwd' }],
        ['a path through /mnt/data climbing out', { url: mine.url, path: '/mnt/data/../../etc/cron.d/x' }],
        ['an empty path', { url: mine.url, path: '' }],
        ['a number for path', { url: mine.url, path: 7 }],
        ['a path with a NUL', { url: mine.url, path: 'imported/a\u0000b.txt' }],
      ];
      for (const [what, body] of importing) {
        expectRefused(await api(`/v1/sessions/${sessionId}/files/import`, body), what);
      }
      expect(fetched, 'requests that reached the other host').toBe(0);
    } finally {
      await new Promise((resolve) => listener.close(resolve));
    }

    const route = `/v1/sessions/${sessionId}/files/import`;
    const body = JSON.stringify({ url: mine.url, path: 'imported/refused.txt' });
    const asJson = { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' };
    expectRefused(
      await raw(route, { method: 'POST', headers: asJson, body: '{"url": "/v1/outputs/' }),
      'malformed JSON',
      400,
    );
    expectRefused(
      await raw(route, { method: 'POST', headers: { ...asJson, 'content-type': 'text/plain' }, body }),
      'a body that is not declared JSON',
    );
    expectRefused(
      await raw(route, { method: 'POST', headers: { 'content-type': 'application/json' }, body }),
      'no key',
      401,
    );
    expectRefused(
      await raw(route, { method: 'POST', headers: { ...asJson, authorization: `Bearer ${OTHER_KEY}` }, body }),
      'another key, into a session not its own',
      404,
    );
    expectRefused(
      await api(`/v1/sessions/${theirSessionId}/files/import`, { url: mine.url }, OTHER_KEY),
      'another key, with this key’s link',
      400,
    );
    // The link itself still imports: each refusal above was of the request, not of an expired link.
    const again = await api(route, { url: mine.url, path: 'imported/again.txt' });
    expect(again.status, again.text).toBe(201);

    for (const leftOver of ['imported/refused.txt', 'imported/nothing.txt', theirName]) {
      const file = await api(`/v1/sessions/${sessionId}/files/${leftOver}`);
      expect(file.status, `${leftOver}: ${file.text}`).toBe(404);
    }
    await expectStillServing('after the imports');
  });
  it('PUT /v1/uploads/{token}: a link writes its one file, anything else is refused, and a body cut off leaves nothing', async () => {
    const made = await api(`/v1/sessions/${sessionId}/files/upload-link`, { path: 'uploads/control.txt' });
    expect(made.status, made.text).toBe(201);
    const link = String(made.json?.url);
    const token = link.slice('/v1/uploads/'.length);
    const control = await raw(link, { method: 'PUT', headers: { 'content-type': 'text/plain' }, body: 'sent' });
    expect(control.status, control.text).toBe(201);

    const [payload = '', signature = ''] = token.split('.');
    const theirs = await api(`/v1/sessions/${theirSessionId}/files/upload-link`, { path: 'x.txt' }, OTHER_KEY);
    const theirSignature = String(theirs.json?.url).split('.')[1] ?? '';
    const claims = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
    const elsewhere = Buffer.from(JSON.stringify({ ...claims, p: '../../etc/passwd' })).toString('base64url');
    const refusedTokens: [string, string][] = [
      ['', 'no token'],
      ['x', 'garbage'],
      [payload, 'a payload without its signature'],
      [`${payload}.${theirSignature}`, 'another link’s signature'],
      [`${payload}.${flipped(signature, 5)}`, 'a signature with one character changed'],
      [`${payload}.${signature}%00`, 'a NUL after the signature'],
      [`${elsewhere}.${signature}`, 'a payload naming another path'],
      [`${token}/..%2f..%2fetc%2fpasswd`, 'a path after the token'],
      ['a'.repeat(3000), 'a token over 2 KB'],
    ];
    for (const [bad, what] of refusedTokens) {
      expectRefused(await raw(`/v1/uploads/${bad}`, { method: 'PUT', body: 'written' }), what);
    }
    for (const method of ['GET', 'POST', 'DELETE']) {
      expectRefused(
        await raw(link, { method, body: method === 'GET' || method === 'DELETE' ? undefined : 'x' }),
        method,
      );
    }
    expectRefused(
      await raw(link, { method: 'PUT', body: 'x'.repeat(MAX_UPLOAD_BYTES + 1) }),
      'a body over the limit',
      413,
    );

    // A body that says more than it sends, then stops: the server waits no longer than the client stays.
    const cut = await sendRaw(
      port,
      `${head([`PUT ${link} HTTP/1.1`, host(port), 'Content-Length: 100000'])}only this much`,
      { halfClose: true, waitMs: 2000 },
    );
    expect(cut.status === undefined || (cut.status >= 400 && cut.status < 500), cut.text).toBe(true);
    // A chunked body that breaks its own framing.
    const broken = await sendRaw(
      port,
      `${head([`PUT ${link} HTTP/1.1`, host(port), 'Transfer-Encoding: chunked'])}5\r\nhello\r\nzz\r\n`,
      { waitMs: 2000 },
    );
    expect(broken.status === undefined || (broken.status >= 400 && broken.status < 500), broken.text).toBe(true);

    const listed = await api(`/v1/sessions/${sessionId}/files?path=uploads`);
    expect(listed.status, listed.text).toBe(200);
    // The control's file, written whole; what was cut off or refused left nothing of its own.
    const files = ((listed.json?.files ?? []) as Json[]).map((file) => [file.path, file.size]);
    expect(files).toEqual([['uploads/control.txt', 4]]);
    const content = await fetch(`${serve.url}/v1/sessions/${sessionId}/files/uploads/control.txt`, {
      headers: { authorization: `Bearer ${KEY}` },
    });
    expect(await content.text()).toBe('sent');
    // The link itself still writes: each refusal above was of the request.
    expect((await raw(link, { method: 'PUT', body: 'again' })).status).toBe(201);
    await expectStillServing('after the upload links');
  });
});
