/**
 * One execution cannot take the server down with what it sends back: huge
 * result metadata and huge error values come back cut, and the server keeps
 * answering every session. Real server on 127.0.0.1, sessions on bubblewrap,
 * the payload sizes of issue 11 with the default caps.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SandcellServer } from '../src/server/index.js';
import { type Client, client, startTestServer } from './support/server.js';

// biome-ignore lint/suspicious/noExplicitAny: response bodies are read loosely in tests
type Json = Record<string, any>;

const RESULT_BYTES = 32 * 1024 * 1024; // the session default
const OUTPUT_BYTES = 1024 * 1024; // the session default
// Far above what the bounded payloads need, far below what keeping them whole would (gigabytes).
const HEAP_BOUND_BYTES = 1024 * 1024 * 1024;

let server: SandcellServer;
let api: Client;
let hostile: string;
let bystander: string;

beforeAll(async () => {
  server = await startTestServer({ poolSize: 2 });
  api = client(server);
  hostile = (await api.json<Json>('/v1/sessions', { method: 'POST' })).id;
  bystander = (await api.json<Json>('/v1/sessions', { method: 'POST' })).id;
  await execute(hostile, 'kept = "yes"');
});
afterAll(async () => {
  await server?.close();
});

function execute(session: string, code: string): Promise<Json> {
  return api.json<Json>(`/v1/sessions/${session}/executions`, { method: 'POST', json: { code } });
}

/** The server still answers: another session runs code, the hostile one kept its state, the heap stayed bounded. */
async function expectServerStillServing(): Promise<void> {
  expect((await execute(bystander, '6 * 7')).results[0].data['text/plain']).toBe('42');
  const state = await execute(hostile, 'kept');
  expect(state.results[0].data['text/plain']).toBe("'yes'");
  expect(state.stateLost).toBeUndefined();
  expect((await api('/healthz')).status).toBe(200);
  expect(process.memoryUsage().heapUsed).toBeLessThan(HEAP_BOUND_BYTES);
}

describe('what one execution sends back is bounded', () => {
  it('60 displays with 80 MiB of metadata each come back without their metadata, marked cut', async () => {
    const execution = await execute(
      hostile,
      "from IPython.display import display\n[display({'text/plain': 'x'}, metadata={'m': 'M' * (80 << 20)}, raw=True) for _ in range(60)]\nNone",
    );
    expect(execution.status).toBe('ok');
    expect(execution.outputTruncated).toBe(true);
    expect(execution.results).toHaveLength(60);
    expect(execution.results[0]).toEqual({ type: 'display_data', data: { 'text/plain': 'x' }, metadata: {} });
    expect(JSON.stringify(execution.results).length).toBeLessThanOrEqual(RESULT_BYTES);
    await expectServerStillServing();
  });

  it('a ValueError of 40 MiB comes back cut to the output cap, with a note', async () => {
    const execution = await execute(hostile, "raise ValueError('E' * (40 << 20))");
    expect(execution.status).toBe('error');
    expect(execution.outputTruncated).toBe(true);
    expect(execution.error.name).toBe('ValueError');
    expect(execution.error.value).toMatch(/^E+\n\[sandcell cut this error value: 41943040 bytes, the first \d+ kept/);
    expect(Buffer.byteLength(execution.error.value)).toBeLessThanOrEqual(OUTPUT_BYTES);
    expect(Buffer.byteLength(execution.error.traceback.join(''))).toBeLessThanOrEqual(OUTPUT_BYTES);
    await expectServerStillServing();
  });

  it('a single result with 40 MiB of metadata keeps its data, not the metadata', async () => {
    const execution = await execute(
      hostile,
      "from IPython.display import display\ndisplay({'text/plain': 'y'}, metadata={'m': 'M' * (40 << 20)}, raw=True)",
    );
    expect(execution.status).toBe('ok');
    expect(execution.outputTruncated).toBe(true);
    expect(execution.results).toEqual([{ type: 'display_data', data: { 'text/plain': 'y' }, metadata: {} }]);
    await expectServerStillServing();
  });
});
