/**
 * The native REST API's file routes and its answers to bad input, over real
 * HTTP on 127.0.0.1, with kernels answering from a script (their /mnt/data is
 * the scripted backend's file store). The same API on a real sandbox is in
 * test/server-rest.test.ts.
 */
import http from 'node:http';
import { beforeAll, describe, expect, it } from 'vitest';
import { byCode, printed, value } from '../../../test/support/kernel-script.js';
import { useScriptedServer } from '../../../test/support/server.js';

// biome-ignore lint/suspicious/noExplicitAny: response bodies are read loosely in tests
type Json = Record<string, any>;

const SUM_AND_WRITE =
  'import pandas as pd\nprint(pd.read_csv("/mnt/data/inputs/data.csv").b.sum())\nopen("/mnt/data/out.txt","w").write("from python")';

const kernel = byCode({
  // Sums column b of the uploaded file, as the code does: the kernel reads what the upload wrote.
  [SUM_AND_WRITE]: ({ files }) => {
    const [header, ...rows] = files.read('inputs/data.csv').toString().trim().split('\n');
    const column = header!.split(',').indexOf('b');
    const sum = rows.reduce((total, row) => total + Number(row.split(',')[column]), 0);
    files.write('out.txt', 'from python');
    return [printed(`${sum}\n`)];
  },
  '1+1': [value('2')],
});

const fixture = useScriptedServer(kernel, {
  limits: { maxRequestBytes: 256 * 1024, maxUploadBytes: 1024 * 1024 },
});
const { api, newSession } = fixture;

describe('files', () => {
  it('uploads (multipart and raw), lists, downloads and deletes files the code can use', async () => {
    const id = await newSession();
    const form = new FormData();
    form.append('file', new Blob(['a,b\n1,2\n']), 'data.csv');
    form.append('file', new Blob([new Uint8Array([0, 1, 2, 255])]), 'bytes.bin');
    form.append('directory', 'inputs');
    const uploaded = await api(`/v1/sessions/${id}/files`, { method: 'POST', body: form });
    expect(uploaded.status).toBe(201);
    const files = ((await uploaded.json()) as Json).files as Json[];
    expect(files.map((file) => [file.path, file.size])).toEqual([
      ['inputs/data.csv', 8],
      ['inputs/bytes.bin', 4],
    ]);

    const raw = await api(`/v1/sessions/${id}/files/notes/readme.txt`, { method: 'PUT', body: 'raw body' });
    expect(raw.status).toBe(201);
    expect(((await raw.json()) as Json).url).toBe(`/v1/sessions/${id}/files/notes/readme.txt`);

    const run = await api.json<Json>(`/v1/sessions/${id}/executions`, {
      method: 'POST',
      json: { code: SUM_AND_WRITE },
    });
    expect(run.stdout).toBe('2\n');

    const listing = await api.json<Json>(`/v1/sessions/${id}/files?recursive=true`);
    const paths = listing.files.map((file: Json) => file.path);
    expect(paths).toEqual(
      expect.arrayContaining(['inputs', 'inputs/data.csv', 'inputs/bytes.bin', 'notes/readme.txt', 'out.txt']),
    );
    const top = await api.json<Json>(`/v1/sessions/${id}/files`);
    expect(top.files.map((file: Json) => file.path)).not.toContain('inputs/data.csv');

    const download = await api(`/v1/sessions/${id}/files/out.txt`);
    expect(download.headers.get('content-type')).toBe('text/plain; charset=utf-8');
    expect(download.headers.get('x-content-type-options')).toBe('nosniff');
    expect(await download.text()).toBe('from python');
    const bytes = await api(`/v1/sessions/${id}/files/inputs/bytes.bin`);
    expect([...new Uint8Array(await bytes.arrayBuffer())]).toEqual([0, 1, 2, 255]);
    const encoded = await api(`/v1/sessions/${id}/files/${encodeURIComponent('/mnt/data/out.txt')}`);
    expect(await encoded.text()).toBe('from python');

    expect((await api(`/v1/sessions/${id}/files/inputs`, { method: 'DELETE' })).status).toBe(204);
    const missing = await api(`/v1/sessions/${id}/files/inputs/data.csv`);
    expect(missing.status).toBe(404);
    expect(((await missing.json()) as Json).error.code).toBe('file-not-found');
  });
});

describe('bad input gets a 4xx JSON error and the server keeps serving', () => {
  let id: string;
  beforeAll(async () => {
    id = await newSession();
  });

  const cases: [string, () => Promise<Response>, number, string][] = [
    [
      'malformed JSON',
      () =>
        api(`/v1/sessions/${id}/executions`, {
          method: 'POST',
          body: '{"code": "1',
          headers: { 'content-type': 'application/json' },
        }),
      400,
      'invalid-json',
    ],
    [
      'wrong content type',
      () =>
        api(`/v1/sessions/${id}/executions`, {
          method: 'POST',
          body: 'print(1)',
          headers: { 'content-type': 'text/plain' },
        }),
      415,
      'unsupported-media-type',
    ],
    [
      'a body that is not an object with code',
      () => api(`/v1/sessions/${id}/executions`, { method: 'POST', json: { code: 5 } }),
      400,
      'invalid-request',
    ],
    [
      'an unknown field',
      () => api(`/v1/sessions/${id}/executions`, { method: 'POST', json: { code: '1', extra: true } }),
      400,
      'invalid-request',
    ],
    [
      'an oversized body',
      () => api(`/v1/sessions/${id}/executions`, { method: 'POST', json: { code: `# ${'x'.repeat(300 * 1024)}` } }),
      413,
      'body-too-large',
    ],
    [
      'an oversized upload',
      () => api(`/v1/sessions/${id}/files/big.bin`, { method: 'PUT', body: new Uint8Array(1024 * 1024 + 1) }),
      413,
      'body-too-large',
    ],
    [
      'a traversal file name in the path',
      () => api(`/v1/sessions/${id}/files/${encodeURIComponent('../../etc/passwd')}`),
      400,
      'invalid-path',
    ],
    [
      'an absolute path outside /mnt/data',
      () => api(`/v1/sessions/${id}/files/${encodeURIComponent('/etc/passwd')}`),
      400,
      'invalid-path',
    ],
    [
      'a NUL byte in a name',
      () => api(`/v1/sessions/${id}/files/a%00b.txt`, { method: 'PUT', body: 'x' }),
      400,
      'invalid-path',
    ],
    [
      'a traversal name in a multipart upload',
      () => {
        const form = new FormData();
        form.append('file', new Blob(['root:x:0:0']), '../../etc/passwd');
        return api(`/v1/sessions/${id}/files`, { method: 'POST', body: form });
      },
      400,
      'invalid-path',
    ],
    [
      'a multipart upload without a file',
      () => {
        const form = new FormData();
        form.append('directory', 'x');
        return api(`/v1/sessions/${id}/files`, { method: 'POST', body: form });
      },
      400,
      'no-file',
    ],
    [
      'an unknown session',
      () => api('/v1/sessions/nosuchsession/executions', { method: 'POST', json: { code: '1' } }),
      404,
      'session-not-found',
    ],
    ['a malformed session id', () => api('/v1/sessions/bad%20id'), 400, 'invalid-request'],
    ['an unknown route', () => api('/v2/anything'), 404, 'route-not-found'],
    ['a wrong method', () => api('/v1/sessions', { method: 'PUT' }), 404, 'route-not-found'],
    ['an unknown image', () => api(`/v1/sessions/${id}/images/0123456789abcdef0123.png`), 404, 'not-found'],
  ];

  it.each(cases)('%s', async (_name, request, status, code) => {
    const response = await request();
    expect(response.status).toBe(status);
    expect(response.headers.get('content-type')).toMatch(/^application\/json/);
    expect(((await response.json()) as Json).error.code).toBe(code);
  });

  it('an oversized chunked upload (no Content-Length) is cut at the limit with 413', async () => {
    // node:http rather than fetch: fetch gives up on the response once the server stops reading the body.
    const url = new URL(`${fixture.server.url}/v1/sessions/${id}/files/big.bin`);
    const answer = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const request = http.request(url, { method: 'PUT', headers: { 'transfer-encoding': 'chunked' } }, (response) => {
        let body = '';
        response.on('data', (chunk) => {
          body += chunk;
        });
        response.on('end', () => resolve({ status: response.statusCode ?? 0, body }));
      });
      request.on('error', reject);
      let sent = 0;
      const pump = () => {
        while (sent < 20 && request.write(Buffer.alloc(64 * 1024))) sent++;
        if (sent >= 20) request.end();
        else request.once('drain', pump);
      };
      pump();
    });
    expect(answer.status).toBe(413);
    expect(JSON.parse(answer.body).error.code).toBe('body-too-large');
  });

  it('still serves, and the traversal wrote nothing anywhere', async () => {
    const files = await api.json<Json>(`/v1/sessions/${id}/files?recursive=true`);
    expect(files.files).toEqual([]);
    const execution = await api.json<Json>(`/v1/sessions/${id}/executions`, { method: 'POST', json: { code: '1+1' } });
    expect(execution.results[0].data['text/plain']).toBe('2');
  });
});
