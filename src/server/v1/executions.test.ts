/**
 * The native REST API's executions, health, metrics and OpenAPI document,
 * over real HTTP on 127.0.0.1, with kernels answering from a script. The same
 * API on a real sandbox is in test/server-rest.test.ts.
 */
import SwaggerParser from '@apidevtools/swagger-parser';
import { describe, expect, it } from 'vitest';
import { byCode, figure, printed, raised, value } from '../../../test/support/kernel-script.js';
import { useScriptedServer } from '../../../test/support/server.js';

// biome-ignore lint/suspicious/noExplicitAny: response bodies are read loosely in tests
type Json = Record<string, any>;

const PLOT = 'import matplotlib.pyplot as plt\nplt.plot([1, 3, 2])\nplt.show()';
const STREAMED = 'import time\nfor i in range(3):\n    print(f"line {i}", flush=True)\n    time.sleep(0.05)\n"end"';

const kernel = byCode({
  '1/0': [raised('ZeroDivisionError', 'division by zero')],
  'import time\ntime.sleep(30)': [{ type: 'sleep', ms: 30_000 }],
  'import time\nfor i in range(600):\n    time.sleep(0.1)': [{ type: 'hang' }],
  '"free"': [value("'free'")],
  [STREAMED]: [0, 1, 2]
    .flatMap((index) => [printed(`line ${index}\n`), { type: 'sleep', ms: 50 } as const])
    .concat([value("'end'")]),
  'print("hi")': [printed('hi\n')],
  [PLOT]: [figure()],
});

const { api, newSession } = useScriptedServer(kernel, {
  limits: { maxRequestBytes: 256 * 1024, maxUploadBytes: 1024 * 1024 },
});

describe('executions', () => {
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
    await expect.poll(async () => (await api.json<Json>(`/v1/sessions/${id}`)).busy).toBe(true);
    abort.abort();
    await expect(pending).rejects.toThrow();
    // The hung run ends only when interrupted: an answer to the next one proves the interrupt was sent.
    const next = await api.json<Json>(`/v1/sessions/${id}/executions`, { method: 'POST', json: { code: '"free"' } });
    expect(next.results[0].data['text/plain']).toBe("'free'");
    expect(next.stateLost).toBeUndefined();
  });

  it('streams stdout, results and the end as NDJSON and as Server-Sent Events', async () => {
    const id = await newSession();
    const ndjson = await api(`/v1/sessions/${id}/executions`, {
      method: 'POST',
      json: { code: STREAMED },
      headers: { accept: 'application/x-ndjson' },
    });
    expect(ndjson.headers.get('content-type')).toBe('application/x-ndjson');
    const events = (await ndjson.text())
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
    const text = await sse.text();
    expect(text).toContain('event: stdout-delta\ndata: {"type":"stdout-delta","text":"hi\\n"}\n\n');
    expect(text).toMatch(/event: execution-end\ndata: \{.*"status":"ok"/);
  });

  it('links images by URL (or inlines them on request)', async () => {
    const id = await newSession();
    const execution = await api.json<Json>(`/v1/sessions/${id}/executions`, { method: 'POST', json: { code: PLOT } });
    const figureResult = execution.results.find((result: Json) => result.images);
    expect(figureResult.data['image/png']).toBeUndefined();
    const [image] = figureResult.images;
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
      json: { code: PLOT, images: 'inline' },
    });
    const inlined = inline.results.find((result: Json) => result.data['image/png']);
    expect(Buffer.from(inlined.data['image/png'], 'base64').subarray(1, 4).toString()).toBe('PNG');
  });
});

describe('health, metrics and the OpenAPI document', () => {
  it('/healthz answers with pool numbers', async () => {
    const health = await api.json<Json>('/healthz');
    expect(health.status).toBe('ok');
    expect(health.sessions).toEqual(expect.objectContaining({ live: expect.any(Number), warm: expect.any(Number) }));
  });

  it('/metrics speaks the Prometheus text format and counts what happened', async () => {
    const id = await newSession();
    const oversized = await api(`/v1/sessions/${id}/executions`, {
      method: 'POST',
      json: { code: `# ${'x'.repeat(300 * 1024)}` },
    });
    expect(oversized.status).toBe(413);
    const response = await api('/metrics');
    expect(response.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
    const text = await response.text();
    expect(text).toContain('# TYPE sandcell_executions_total counter');
    expect(text).toMatch(/^sandcell_executions_total\{status="ok"\} [1-9]\d*$/m);
    expect(text).toMatch(/^sandcell_executions_total\{status="timeout"\} 1$/m);
    expect(text).toMatch(/^sandcell_sessions_live\{api="v1"\} \d+$/m);
    expect(text).toMatch(/^sandcell_sessions_pooled \d+$/m);
    expect(text).toMatch(/^sandcell_execution_duration_seconds_bucket\{le="\+Inf"\} \d+$/m);
    expect(text).toMatch(/^sandcell_requests_rejected_total\{reason="request-too-large"\} [1-9]\d*$/m);
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
    expect(body.additionalProperties).toBe(false); // the same strictness that answers 400 to an unknown field
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
