/**
 * E2B's signed file URLs through the unmodified SDK (`e2b` 2.51) on real bubblewrap sandboxes:
 * `sandbox.downloadUrl()` and `sandbox.uploadUrl()` make links at the server's root
 * (`/files?path=…&signature=v1_…`) that a plain client, with none of the SDK's headers, downloads
 * and uploads with; each link opens only its own sandbox, path and operation, until it expires,
 * and a page on another site may use one.
 */
import { Sandbox } from 'e2b';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startE2bServer, type TestServer } from '../support/e2b.js';

const MAX_UPLOAD_BYTES = 1024 * 1024;
const SIGNATURE = /^v1_[A-Za-z0-9+/]{43}$/;
const FROM_ELSEWHERE = {
  origin: 'https://elsewhere.example',
  'sec-fetch-site': 'cross-site',
  'sec-fetch-mode': 'cors',
};

let server: TestServer;
let sandbox: Sandbox;
let other: Sandbox;
const bytes = new Uint8Array(1000).map((_, index) => (index * 7) % 256);

beforeAll(async () => {
  server = await startE2bServer({ limits: { maxUploadBytes: MAX_UPLOAD_BYTES } });
  [sandbox, other] = await Promise.all([Sandbox.create(), Sandbox.create()]);
  await sandbox.files.write('/home/user/report.bin', bytes.buffer);
  await sandbox.files.write('/home/user/whose.txt', 'mine');
  await other.files.write('/home/user/whose.txt', 'theirs');
});
afterAll(async () => {
  await Promise.all([sandbox?.kill().catch(() => undefined), other?.kill().catch(() => undefined)]);
  await server?.close();
});

/** A file part as a browser's FormData sends it. */
function formWith(content: string, name = 'upload.txt'): FormData {
  const form = new FormData();
  form.append('file', new Blob([content]), name);
  return form;
}

async function refusal(response: Response): Promise<string> {
  const body = (await response.json()) as { code: number; message: string };
  expect(body.code).toBe(response.status);
  return `${response.status} ${body.message}`;
}

describe('E2B signed file URLs', () => {
  it('downloadUrl is a link at the server’s root that a client without the SDK’s headers downloads', async () => {
    const link = new URL(await sandbox.downloadUrl('/home/user/report.bin'));
    expect(link.origin).toBe(new URL(server.url).origin);
    expect(link.pathname).toBe('/files');
    expect([...link.searchParams.keys()]).toEqual(['path', 'signature']);
    expect(link.searchParams.get('path')).toBe('/home/user/report.bin');
    expect(link.searchParams.get('signature')).toMatch(SIGNATURE);

    const response = await fetch(link);
    expect(response.status).toBe(200);
    expect(new Uint8Array(await response.arrayBuffer())).toEqual(bytes);

    const expiring = new URL(await sandbox.downloadUrl('report.bin', { useSignatureExpiration: 60 }));
    const expiration = Number(expiring.searchParams.get('signature_expiration'));
    expect(Math.abs(expiration - (Date.now() / 1000 + 60))).toBeLessThan(5);
    const again = await fetch(expiring);
    expect(again.status).toBe(200);
    expect(new Uint8Array(await again.arrayBuffer())).toEqual(bytes);
  });

  it('uploadUrl takes a plain multipart POST (or raw bytes), and the SDK reads the file back', async () => {
    const link = await sandbox.uploadUrl('/home/user/in/uploaded.txt');
    const response = await fetch(link, { method: 'POST', body: formWith('sent by a plain client') });
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual([{ name: 'uploaded.txt', type: 'file', path: '/home/user/in/uploaded.txt' }]);
    expect(await sandbox.files.read('/home/user/in/uploaded.txt')).toBe('sent by a plain client');

    const raw = await fetch(await sandbox.uploadUrl('raw.txt', { useSignatureExpiration: 60 }), {
      method: 'POST',
      headers: { 'content-type': 'application/octet-stream' },
      body: 'raw bytes',
    });
    expect(raw.status).toBe(200);
    expect(await sandbox.files.read('/home/user/raw.txt')).toBe('raw bytes');
  });

  it('a link opens only its own path and operation, unaltered and unexpired', async () => {
    const download = new URL(await sandbox.downloadUrl('/home/user/report.bin'));
    const notValid = /^401 This link’s signature is not valid/;

    const tampered = new URL(download);
    const signature = tampered.searchParams.get('signature') ?? '';
    tampered.searchParams.set('signature', `${signature.slice(0, -1)}${signature.endsWith('A') ? 'B' : 'A'}`);
    expect(await refusal(await fetch(tampered))).toMatch(notValid);

    const otherPath = new URL(download);
    otherPath.searchParams.set('path', '/home/user/whose.txt');
    expect(await refusal(await fetch(otherPath))).toMatch(notValid);

    const asUser = new URL(download);
    asUser.searchParams.set('username', 'root');
    expect(await refusal(await fetch(asUser))).toMatch(notValid);

    // A download link is no upload link: the file stays as it was.
    const upload = await fetch(download, { method: 'POST', body: formWith('overwritten') });
    expect(await refusal(upload)).toMatch(notValid);
    expect(await sandbox.files.read('/home/user/report.bin', { format: 'bytes' })).toEqual(bytes);

    // An expiration moved later is another signature.
    const extended = new URL(await sandbox.downloadUrl('report.bin', { useSignatureExpiration: 60 }));
    extended.searchParams.set(
      'signature_expiration',
      String(Number(extended.searchParams.get('signature_expiration')) + 3600),
    );
    expect(await refusal(await fetch(extended))).toMatch(notValid);

    const expiring = await sandbox.downloadUrl('report.bin', { useSignatureExpiration: 1 });
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    expect(await refusal(await fetch(expiring))).toMatch(/^401 This link expired at .*useSignatureExpiration/);

    const malformed = new URL(download);
    malformed.searchParams.set('signature', 'v1_short');
    expect((await fetch(malformed)).status).toBe(400);
    const badExpiration = new URL(download);
    badExpiration.searchParams.set('signature_expiration', 'tomorrow');
    expect((await fetch(badExpiration)).status).toBe(400);
  });

  it('an upload link for one path writes that file only', async () => {
    const link = await sandbox.uploadUrl('/home/user/one.txt');
    const form = formWith('first', 'one.txt');
    form.append('file', new Blob(['second']), '/home/user/elsewhere.txt');
    const response = await fetch(link, { method: 'POST', body: form });
    expect(await refusal(response)).toBe('400 An upload link for one path takes one file; this request has 2.');
    expect(await sandbox.files.exists('/home/user/elsewhere.txt')).toBe(false);
    expect(await sandbox.files.exists('/home/user/one.txt')).toBe(false);
  });

  it('a link opens its own sandbox only, whatever sandbox the request names', async () => {
    const mine = await sandbox.downloadUrl('whose.txt');
    const theirs = await other.downloadUrl('whose.txt');
    expect(await (await fetch(mine)).text()).toBe('mine');
    expect(await (await fetch(theirs)).text()).toBe('theirs');
    // The SDK's own headers naming the other sandbox change nothing: the signature chose the sandbox.
    const named = await fetch(mine, { headers: { 'e2b-sandbox-id': other.sandboxId, 'e2b-sandbox-port': '49983' } });
    expect(await named.text()).toBe('mine');
    // Nor does another sandbox's upload link write here.
    const upload = await fetch(await other.uploadUrl('whose.txt'), { method: 'POST', body: formWith('overwritten') });
    expect(upload.status).toBe(200);
    expect(await sandbox.files.read('whose.txt')).toBe('mine');
    expect(await other.files.read('whose.txt')).toBe('overwritten');
  });

  it('uploads through a link are bounded by the server’s upload limit', async () => {
    const link = await sandbox.uploadUrl('/home/user/large.bin');
    const response = await fetch(link, { method: 'POST', body: formWith('x'.repeat(MAX_UPLOAD_BYTES + 1)) });
    expect(await refusal(response)).toMatch(/^413 The request body is larger than this server accepts/);
    expect(await sandbox.files.exists('/home/user/large.bin')).toBe(false);
  });

  it('a page on another site downloads and uploads with a link, and without one is refused', async () => {
    const download = await fetch(await sandbox.downloadUrl('report.bin'), { headers: FROM_ELSEWHERE });
    expect(download.status).toBe(200);
    expect(new Uint8Array(await download.arrayBuffer())).toEqual(bytes);
    const upload = await fetch(await sandbox.uploadUrl('from-page.txt'), {
      method: 'POST',
      headers: FROM_ELSEWHERE,
      body: formWith('from a page'),
    });
    expect(upload.status).toBe(200);
    expect(await sandbox.files.read('from-page.txt')).toBe('from a page');

    // Canary: the same upload without a signature is refused as cross-site.
    const unsigned = await fetch(`${server.url}/files?path=from-page.txt`, {
      method: 'POST',
      headers: FROM_ELSEWHERE,
      body: formWith('planted'),
    });
    expect(unsigned.status).toBe(403);
    expect(await sandbox.files.read('from-page.txt')).toBe('from a page');
  });

  it('without a signature, /files is what it was: no route', async () => {
    expect((await fetch(`${server.url}/files?path=report.bin`)).status).toBe(404);
    expect((await fetch(`${server.url}/files`, { method: 'POST', body: formWith('x') })).status).toBe(404);
  });

  it('a sandbox its client paused is not resumed by its links', async () => {
    const link = await other.downloadUrl('whose.txt');
    await other.pause();
    const response = await fetch(link);
    expect(response.status).toBe(409);
    expect(await response.json()).toMatchObject({ code: 409, sandboxId: other.sandboxId });
  });
});
