/**
 * The native REST API end to end: real HTTP on 127.0.0.1, real Python on
 * bubblewrap. The API's own logic (streams, interrupts, images, files, bad
 * input, metrics) runs on the scripted backend in src/server/v1/.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SandcellServer } from '../src/server/index.js';
import { type Client, client, type LogCapture, startTestServer } from './support/server.js';

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

describe('commands and languages', () => {
  it('runs a shell command beside the code, sharing its files: exit code and output as data', async () => {
    const session = await api.json<Json>('/v1/sessions', { method: 'POST', json: {} });
    const base = `/v1/sessions/${session.id}`;
    await api.json<Json>(`${base}/executions`, {
      method: 'POST',
      json: { code: 'open("/mnt/data/rows.csv", "w").write("a\\nb\\nc\\n")' },
    });
    const counted = await api.json<Json>(`${base}/commands`, {
      method: 'POST',
      json: { command: 'wc -l < rows.csv; echo "$GREETING" >&2; exit 3', env: { GREETING: 'hello' } },
    });
    expect(counted).toMatchObject({ exitCode: 3, stdout: '3\n', stderr: 'hello\n', timedOut: false });

    const streamed = await api(`${base}/commands`, {
      method: 'POST',
      json: { command: 'echo one; sleep 0.2; echo two' },
      headers: { accept: 'application/x-ndjson' },
    });
    const events = (await streamed.text())
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as Json);
    expect(events.filter((event) => event.type === 'stdout-delta').map((event) => event.text)).toEqual([
      'one\n',
      'two\n',
    ]);
    expect(events.at(-1)).toMatchObject({ type: 'command-end', command: { exitCode: 0, stdout: 'one\ntwo\n' } });

    const background = await api(`${base}/commands`, {
      method: 'POST',
      json: { command: 'sleep 600', background: true },
    });
    expect(background.status).toBe(202);
    const { pid } = (await background.json()) as Json;
    expect((await api.json<Json>(`${base}/commands`)).commands.map((command: Json) => command.pid)).toEqual([pid]);
    expect((await api(`${base}/commands/${pid}`, { method: 'DELETE' })).status).toBe(204);
    expect((await api.json<Json>(`${base}/commands`)).commands).toEqual([]);
    await api(base, { method: 'DELETE' });
  });

  it('runs JavaScript and bash in their own contexts, each keeping its state beside python', async () => {
    const session = await api.json<Json>('/v1/sessions', { method: 'POST', json: {} });
    const base = `/v1/sessions/${session.id}`;
    const execute = (json: Json) => api.json<Json>(`${base}/executions`, { method: 'POST', json });
    await execute({ code: 'const total = [1, 2, 3].reduce((a, b) => a + b, 0)', language: 'javascript' });
    const js = await execute({ code: 'console.log("sum", total); total * 7', language: 'javascript' });
    expect(js).toMatchObject({ status: 'ok', stdout: 'sum 6\n' });
    expect(js.results[0].data['text/plain']).toBe('42');

    const created = await api.json<Json>(`${base}/contexts`, { method: 'POST', json: { language: 'bash' } });
    await execute({ code: 'cd /tmp && GREETING=hi', context: created.id });
    const bash = await execute({ code: 'echo "$GREETING from $PWD"', context: created.id });
    expect(bash).toMatchObject({ status: 'ok', stdout: 'hi from /tmp\n' });

    const contexts = (await api.json<Json>(`${base}/contexts`)).contexts;
    expect(contexts.map((context: Json) => context.language)).toEqual(['python', 'javascript', 'bash']);
    await api(base, { method: 'DELETE' });
  });
});

describe("the code's own exit", () => {
  it('sys.exit(n), exit() and quit() end the code, never the session: the state is kept, the status told', async () => {
    const session = await api.json<Json>('/v1/sessions', { method: 'POST', json: {} });
    const base = `/v1/sessions/${session.id}`;
    const execute = (code: string) => api.json<Json>(`${base}/executions`, { method: 'POST', json: { code } });
    await execute('import sys\nx = 1');
    // As Jupyter shows it, without IPython's advice to use Ctrl-D.
    const failed = await execute('print("before")\nsys.exit(3)\nprint("after")');
    expect(failed).toMatchObject({ status: 'error', stdout: 'before\n', stderr: '', exitStatus: 3 });
    expect(failed.error).toMatchObject({ name: 'SystemExit', value: '3' });
    // Status 0 is a success: no error, the rest of the code skipped.
    expect(await execute('x += 1\nexit()\nx = 100')).toMatchObject({ status: 'ok', stderr: '', exitStatus: 0 });
    const quitted = await execute('quit()');
    expect(quitted).toMatchObject({ status: 'ok', exitStatus: 0 });
    expect(quitted.error).toBeUndefined();
    const after = await execute('x');
    expect(after).toMatchObject({ status: 'ok', executionCount: 5 });
    expect(after.results[0].data['text/plain']).toBe('2');
    expect(after).not.toHaveProperty('exitStatus');
    await api(base, { method: 'DELETE' });
  });
});
