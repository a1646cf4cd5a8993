/**
 * The native REST API end to end: real HTTP on 127.0.0.1, real Python on
 * bubblewrap. The API's own logic (streams, interrupts, images, files, bad
 * input, metrics) runs on the scripted backend in src/server/v1/.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SandcellServer } from '../src/server/index.js';
import { type Client, client, type LogCapture, startTestServer } from './server-helpers.js';

// biome-ignore lint/suspicious/noExplicitAny: response bodies are read loosely in tests
type Json = Record<string, any>;

let server: SandcellServer & { logs: LogCapture };
let api: Client;

beforeAll(async () => {
  server = await startTestServer();
  api = client(server);
});
afterAll(async () => {
  await server?.close();
});

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
});
