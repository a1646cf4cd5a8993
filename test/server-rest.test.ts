/** The native REST API over real HTTP on 127.0.0.1, sessions on bubblewrap. */
import http from 'node:http';
import SwaggerParser from '@apidevtools/swagger-parser';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SandcellServer } from '../src/server/index.js';
import { type Client, client, type LogCapture, startTestServer } from './server-helpers.js';

// biome-ignore lint/suspicious/noExplicitAny: response bodies are read loosely in tests
type Json = Record<string, any>;

let server: SandcellServer & { logs: LogCapture };
let api: Client;

beforeAll(async () => {
  server = await startTestServer({ limits: { maxRequestBytes: 256 * 1024, maxUploadBytes: 1024 * 1024 } });
  api = client(server);
});
afterAll(async () => {
  await server?.close();
});

async function newSession(): Promise<string> {
  const session = await api.json<Json>('/v1/sessions', { method: 'POST' });
  return session.id as string;
}

async function readEvents(response: Response): Promise<string> {
  return await response.text();
}

describe('sessions and executions', () => {
  it('creates, lists, gets and deletes a session; state persists between executions', async () => {
    const created = await api('/v1/sessions', { method: 'POST', json: {} });
    expect(created.status).toBe(201);
    const session = (await created.json()) as Json;
    expect(created.headers.get('location')).toBe(`/v1/sessions/${session.id}`);
    expect(session).toMatchObject({ source: 'v1', executions: 0, busy: false });

    const first = await api.json<Json>(`/v1/sessions/${session.id}/executions`, {
      method: 'POST',
      json: { code: 'x = 6 * 7\nprint("hello")' },
    });
    expect(first).toMatchObject({ sessionId: session.id, status: 'ok', stdout: 'hello\n', stderr: '', results: [] });
    const second = await api.json<Json>(`/v1/sessions/${session.id}/executions`, {
      method: 'POST',
      json: { code: 'x' },
    });
    expect(second.results).toEqual([{ type: 'execute_result', data: { 'text/plain': '42' }, metadata: {} }]);
    expect(second.executionCount).toBe(2);

    const listed = await api.json<Json>('/v1/sessions');
    expect(listed.sessions.map((entry: Json) => entry.id)).toContain(session.id);
    expect((await api.json<Json>(`/v1/sessions/${session.id}`)).executions).toBe(2);

    expect((await api(`/v1/sessions/${session.id}`, { method: 'DELETE' })).status).toBe(204);
    const gone = await api(`/v1/sessions/${session.id}`);
    expect(gone.status).toBe(404);
    expect(((await gone.json()) as Json).error.code).toBe('session-not-found');
    const runInGone = await api(`/v1/sessions/${session.id}/executions`, { method: 'POST', json: { code: '1' } });
    expect(runInGone.status).toBe(404);
  });

  it('reports errors in the code as data, and timeouts as status timeout', async () => {
    const id = await newSession();
    const failed = await api.json<Json>(`/v1/sessions/${id}/executions`, { method: 'POST', json: { code: '1/0' } });
    expect(failed.status).toBe('error');
    expect(failed.error).toMatchObject({ name: 'ZeroDivisionError', value: 'division by zero' });
    const slow = await api.json<Json>(`/v1/sessions/${id}/executions`, {
      method: 'POST',
      json: { code: 'import time\ntime.sleep(30)', timeoutMs: 300 },
    });
    expect(slow.status).toBe('timeout');
    expect(slow.error.name).toBe('TimeoutError');
  });

  it('interrupts the code of a client that disconnects, keeping the session usable', async () => {
    const id = await newSession();
    const abort = new AbortController();
    const pending = api(`/v1/sessions/${id}/executions`, {
      method: 'POST',
      json: { code: 'import time\nfor i in range(600):\n    time.sleep(0.1)' },
      signal: abort.signal,
    });
    await new Promise((resolve) => setTimeout(resolve, 400));
    abort.abort();
    await expect(pending).rejects.toThrow();
    const started = Date.now();
    const next = await api.json<Json>(`/v1/sessions/${id}/executions`, { method: 'POST', json: { code: '"free"' } });
    expect(next.results[0].data['text/plain']).toBe("'free'");
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(next.stateLost).toBeUndefined();
  });

  it('streams stdout, results and the end as NDJSON and as Server-Sent Events', async () => {
    const id = await newSession();
    const code = 'import time\nfor i in range(3):\n    print(f"line {i}", flush=True)\n    time.sleep(0.05)\n"end"';
    const ndjson = await api(`/v1/sessions/${id}/executions`, {
      method: 'POST',
      json: { code },
      headers: { accept: 'application/x-ndjson' },
    });
    expect(ndjson.headers.get('content-type')).toBe('application/x-ndjson');
    const events = (await readEvents(ndjson))
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as Json);
    const deltas = events.filter((event) => event.type === 'stdout-delta').map((event) => event.text);
    expect(deltas.join('')).toBe('line 0\nline 1\nline 2\n');
    expect(deltas.length).toBeGreaterThan(1); // streamed as it happened, not in one piece
    expect(events.find((event) => event.type === 'result-ready')?.result.data['text/plain']).toBe("'end'");
    const end = events.at(-1) as Json;
    expect(end.type).toBe('execution-end');
    expect(end.execution).toMatchObject({ status: 'ok', stdout: 'line 0\nline 1\nline 2\n' });

    const sse = await api(`/v1/sessions/${id}/executions?stream=sse`, {
      method: 'POST',
      json: { code: 'print("hi")' },
    });
    expect(sse.headers.get('content-type')).toBe('text/event-stream');
    const text = await readEvents(sse);
    expect(text).toContain('event: stdout-delta\ndata: {"type":"stdout-delta","text":"hi\\n"}\n\n');
    expect(text).toMatch(/event: execution-end\ndata: \{.*"status":"ok"/);
  });

  it('links images by URL (or inlines them on request)', async () => {
    const id = await newSession();
    const code = 'import matplotlib.pyplot as plt\nplt.plot([1, 3, 2])\nplt.show()';
    const execution = await api.json<Json>(`/v1/sessions/${id}/executions`, { method: 'POST', json: { code } });
    const figure = execution.results.find((result: Json) => result.images);
    expect(figure.data['image/png']).toBeUndefined();
    const [image] = figure.images;
    expect(image.url).toMatch(new RegExp(`^/v1/sessions/${id}/images/[a-f0-9]{20}\\.png$`));
    const png = await api(image.url);
    expect(png.status).toBe(200);
    expect(png.headers.get('content-type')).toBe('image/png');
    expect(
      Buffer.from(await png.arrayBuffer())
        .subarray(1, 4)
        .toString(),
    ).toBe('PNG');

    const inline = await api.json<Json>(`/v1/sessions/${id}/executions`, {
      method: 'POST',
      json: { code, images: 'inline' },
    });
    const inlined = inline.results.find((result: Json) => result.data['image/png']);
    expect(Buffer.from(inlined.data['image/png'], 'base64').subarray(1, 4).toString()).toBe('PNG');
  });
});

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
      json: {
        code: 'import pandas as pd\nprint(pd.read_csv("/mnt/data/inputs/data.csv").b.sum())\nopen("/mnt/data/out.txt","w").write("from python")',
      },
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
    const url = new URL(`${server.url}/v1/sessions/${id}/files/big.bin`);
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

describe('health, metrics and the OpenAPI document', () => {
  it('/healthz answers with pool numbers', async () => {
    const health = await api.json<Json>('/healthz');
    expect(health.status).toBe('ok');
    expect(health.sessions).toEqual(expect.objectContaining({ live: expect.any(Number), warm: expect.any(Number) }));
  });

  it('/metrics speaks the Prometheus text format and counts what happened', async () => {
    const response = await api('/metrics');
    expect(response.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
    const text = await response.text();
    expect(text).toContain('# TYPE sandcell_executions_total counter');
    expect(text).toMatch(/^sandcell_executions_total\{status="ok"\} [1-9]\d*$/m);
    expect(text).toMatch(/^sandcell_executions_total\{status="timeout"\} 1$/m);
    expect(text).toMatch(/^sandcell_sessions_live\{api="v1"\} \d+$/m);
    expect(text).toMatch(/^sandcell_sessions_pooled \d+$/m);
    expect(text).toMatch(/^sandcell_execution_duration_seconds_bucket\{le="\+Inf"\} \d+$/m);
    expect(text).toMatch(/^sandcell_requests_rejected_total\{reason="request-too-large"\} \d+$/m);
    for (const line of text.trim().split('\n')) {
      expect(line).toMatch(/^(# (HELP|TYPE) \w+ .+|\w+(\{(\w+="([^"\\]|\\.)*",?)+\})? (-?[\d.e+-]+|\+Inf))$/);
    }
  });

  it('/openapi.json is valid OpenAPI 3.1, generated from the schemas that validate requests', async () => {
    const document = await api.json<Json>('/openapi.json');
    expect(document.openapi).toBe('3.1.0');
    await SwaggerParser.validate(structuredClone(document) as never);
    const execute = document.paths['/v1/sessions/{id}/executions'].post;
    const body = execute.requestBody.content['application/json'].schema;
    expect(body.required).toEqual(['code']);
    expect(body.additionalProperties).toBe(false); // the same strictness that answered 400 to `extra` above
    expect(body.properties.images.enum).toEqual(['url', 'inline']);
    expect(execute.responses['200'].content['application/x-ndjson']).toBeDefined();
    expect(document.paths['/azure/code/execute'].post.parameters.map((parameter: Json) => parameter.name)).toEqual([
      'identifier',
      'api-version',
    ]);
    expect(Object.keys(document.paths)).toEqual(
      expect.arrayContaining([
        '/v1/sessions/{id}/files/{path}',
        '/azure/files/content/{name}',
        '/azure/session',
        '/mcp',
      ]),
    );
  });
});
