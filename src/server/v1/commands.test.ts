/**
 * Shell commands and contexts through /v1, over real HTTP on 127.0.0.1, on the
 * scripted backend: results as data, streaming, background commands (list,
 * stdin, kill), the bounds, another key's session, a client that disconnects,
 * and language/context on executions. The same routes on a real sandbox are in
 * test/server-rest.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { useScriptedServer } from '../../../test/support/server.js';
import { toyShell } from '../../../test/support/toy-shell.js';
import type { ExecuteScript } from '../../backends/scripted/script.js';

// biome-ignore lint/suspicious/noExplicitAny: response bodies are read loosely in tests
type Json = Record<string, any>;

const ALICE = 'alice-secret-0001';
const BOB = 'bob-secret-00002';

/** Each run answers with its context's language and id, so a test sees where it ran. */
const whereItRan: ExecuteScript = ({ language, contextId }) => [
  { type: 'result', data: { 'text/plain': `${language}:${contextId}` } },
];

const { api, clientWith, newSession } = useScriptedServer(
  whereItRan,
  {
    apiKeys: [ALICE, BOB],
    limits: { maxRequestBytes: 64 * 1024, maxExecutionMs: 60_000 },
    sessionOptions: { maxCodeBytes: 1000, maxCommands: 2, maxContexts: 3 },
  },
  { command: toyShell },
);
const bob = clientWith(BOB);

const run = (id: string, json: Json, init: RequestInit = {}) =>
  api(`/v1/sessions/${id}/commands`, { method: 'POST', json, ...init });

describe('POST /v1/sessions/{id}/commands', () => {
  it('answers exit code and output as data, with cwd and env passed to the command', async () => {
    const id = await newSession();
    const ok = await api.json<Json>(`/v1/sessions/${id}/commands`, { method: 'POST', json: { command: 'echo hi' } });
    expect(ok).toEqual({
      exitCode: 0,
      stdout: 'hi\n',
      stderr: '',
      durationMs: expect.any(Number),
      timedOut: false,
      outputTruncated: false,
    });
    const failed = await run(id, { command: 'fail 3' });
    expect(failed.status).toBe(200); // a non-zero exit is data, not an HTTP error
    expect(await failed.json()).toMatchObject({ exitCode: 3, stderr: 'failing\n' });
    const where = await api.json<Json>(`/v1/sessions/${id}/commands`, {
      method: 'POST',
      json: { command: 'where', cwd: 'project', env: { GREETING: 'hello' } },
    });
    expect(where.stdout).toBe('/mnt/data/project hello');
    const fed = await api.json<Json>(`/v1/sessions/${id}/commands`, {
      method: 'POST',
      json: { command: 'cat', stdin: 'fed in' },
    });
    expect(fed.stdout).toBe('fed in');
  });

  it('kills a command past its timeout and says so', async () => {
    const id = await newSession();
    const slow = await api.json<Json>(`/v1/sessions/${id}/commands`, {
      method: 'POST',
      json: { command: 'sleep', timeoutMs: 200 },
    });
    expect(slow).toMatchObject({ timedOut: true, stdout: 'started\n', signal: 'SIGKILL' });
    expect((await api.json<Json>(`/v1/sessions/${id}/commands`)).commands).toEqual([]);
  });

  it('streams stdout, stderr and the end as NDJSON and as Server-Sent Events', async () => {
    const id = await newSession();
    const ndjson = await run(id, { command: 'lines' }, { headers: { accept: 'application/x-ndjson' } });
    expect(ndjson.headers.get('content-type')).toBe('application/x-ndjson');
    const events = (await ndjson.text())
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as Json);
    expect(events.map((event) => event.type)).toEqual(['stdout-delta', 'stderr-delta', 'stdout-delta', 'command-end']);
    expect(events[1]).toEqual({ type: 'stderr-delta', text: 'two\n' });
    expect(events[3]?.command).toMatchObject({ exitCode: 0, stdout: 'one\nthree\n', stderr: 'two\n' });

    const sse = await api(`/v1/sessions/${id}/commands?stream=sse`, { method: 'POST', json: { command: 'fail 2' } });
    expect(sse.headers.get('content-type')).toBe('text/event-stream');
    const text = await sse.text();
    expect(text).toContain('event: stderr-delta\ndata: {"type":"stderr-delta","text":"failing\\n"}\n\n');
    expect(text).toMatch(/event: command-end\ndata: \{"type":"command-end","command":\{"exitCode":2,/);
  });

  it('kills the command of a client that disconnects', async () => {
    const id = await newSession();
    const abort = new AbortController();
    const pending = run(id, { command: 'sleep' }, { signal: abort.signal });
    await expect.poll(async () => (await api.json<Json>(`/v1/sessions/${id}/commands`)).commands.length).toBe(1);
    abort.abort();
    await expect(pending).rejects.toThrow();
    await expect.poll(async () => (await api.json<Json>(`/v1/sessions/${id}/commands`)).commands.length).toBe(0);

    // The same for a streamed command: the client reads its first output, then goes away.
    const streamAbort = new AbortController();
    const streamed = await run(
      id,
      { command: 'sleep' },
      { signal: streamAbort.signal, headers: { accept: 'application/x-ndjson' } },
    );
    const reader = (streamed.body as ReadableStream<Uint8Array>).getReader();
    expect(new TextDecoder().decode((await reader.read()).value)).toContain('started');
    expect((await api.json<Json>(`/v1/sessions/${id}/commands`)).commands).toHaveLength(1);
    streamAbort.abort();
    await expect.poll(async () => (await api.json<Json>(`/v1/sessions/${id}/commands`)).commands.length).toBe(0);
  });

  it('starts a background command: 202 with its pid, listed, fed through stdin, killed by pid', async () => {
    const id = await newSession();
    const started = await run(id, { command: 'cat', background: true });
    expect(started.status).toBe(202);
    // Nobody waits for it, but it runs: the session is active, so it is not closed for idling.
    expect(await api.json<Json>(`/v1/sessions/${id}`)).toMatchObject({ busy: false, active: true });
    const { pid, id: commandId } = (await started.json()) as Json;
    expect(pid).toEqual(expect.any(Number));
    const listed = (await api.json<Json>(`/v1/sessions/${id}/commands`)).commands;
    expect(listed).toEqual([{ id: commandId, pid, command: 'cat', cwd: '/mnt/data', startedAt: expect.any(String) }]);
    const written = await api(`/v1/sessions/${id}/commands/${pid}/stdin`, { method: 'POST', json: { text: 'more' } });
    expect(written.status).toBe(204);
    const closed = await api(`/v1/sessions/${id}/commands/${pid}/stdin`, { method: 'POST', json: { close: true } });
    expect(closed.status).toBe(204);
    // Its stdin closed, `cat` ends on its own: the list empties without a kill, and /metrics counts it.
    await expect.poll(async () => (await api.json<Json>(`/v1/sessions/${id}/commands`)).commands.length).toBe(0);
    expect((await api.json<Json>(`/v1/sessions/${id}`)).active).toBe(false);
    await expect
      .poll(async () => (await api('/metrics')).text())
      .toMatch(/^sandcell_commands_total\{kind="background",status="ok"\} [1-9]/m);
    const noLonger = await api(`/v1/sessions/${id}/commands/${pid}/stdin`, { method: 'POST', json: { text: 'x' } });
    expect(noLonger.status).toBe(404);
    expect(((await noLonger.json()) as Json).error.code).toBe('command-not-found');

    const sleeper = (await (await run(id, { command: 'sleep', background: true })).json()) as Json;
    expect((await api(`/v1/sessions/${id}/commands/${sleeper.pid}`, { method: 'DELETE' })).status).toBe(204);
    expect((await api.json<Json>(`/v1/sessions/${id}/commands`)).commands).toEqual([]);
    const again = await api(`/v1/sessions/${id}/commands/${sleeper.pid}`, { method: 'DELETE' });
    expect(again.status).toBe(404);
    expect(((await again.json()) as Json).error.code).toBe('command-not-found');
  });

  it('refuses what is over its bounds with a typed JSON error', async () => {
    const id = await newSession();
    const refusals: [Json, number, string][] = [
      [{ command: 'x'.repeat(2000) }, 413, 'code-too-large'],
      [{ command: '' }, 400, 'invalid-request'],
      [{ command: 'echo', cwd: 'd'.repeat(5000) }, 400, 'invalid-request'],
      [
        { command: 'echo', env: Object.fromEntries(Array.from({ length: 65 }, (_, i) => [`V${i}`, 'x'])) },
        400,
        'invalid-request',
      ],
      [{ command: 'echo', env: { 'not a name': 'x' } }, 400, 'invalid-input'],
      [{ command: 'echo', timeoutMs: -1 }, 400, 'invalid-request'],
      [{ command: 'echo', stdin: 'y'.repeat(2000) }, 400, 'invalid-input'],
      [{ command: 'echo', shell: 'zsh' }, 400, 'invalid-request'],
    ];
    for (const [json, status, code] of refusals) {
      const response = await run(id, json);
      expect({ json: Object.keys(json), status: response.status }).toEqual({ json: Object.keys(json), status });
      expect(((await response.json()) as Json).error.code).toBe(code);
    }
    const badPid = await api(`/v1/sessions/${id}/commands/abc`, { method: 'DELETE' });
    expect(badPid.status).toBe(400);

    // The session runs at most 2 commands at once (maxCommands): the third is 429.
    await run(id, { command: 'sleep', background: true });
    await run(id, { command: 'sleep', background: true });
    const third = await run(id, { command: 'echo no room' });
    expect(third.status).toBe(429);
    expect(((await third.json()) as Json).error).toMatchObject({ code: 'too-many-commands' });
    // Streamed, the answer has begun when the session refuses: the refusal is the stream's one event.
    const streamed = await run(id, { command: 'echo no room' }, { headers: { accept: 'application/x-ndjson' } });
    expect(streamed.status).toBe(200);
    expect(JSON.parse(await streamed.text())).toEqual({
      type: 'error',
      error: { code: 'too-many-commands', message: expect.any(String) },
    });
    const document = await api.json<Json>('/openapi.json');
    expect(document.paths['/v1/sessions/{id}/commands'].post.description).toContain('`error` event');
  });

  it("another key's session is not found, for every command route", async () => {
    const id = await newSession();
    const started = (await (await run(id, { command: 'sleep', background: true })).json()) as Json;
    const attempts = [
      bob(`/v1/sessions/${id}/commands`, { method: 'POST', json: { command: 'echo stolen' } }),
      bob(`/v1/sessions/${id}/commands`),
      bob(`/v1/sessions/${id}/commands/${started.pid}`, { method: 'DELETE' }),
      bob(`/v1/sessions/${id}/commands/${started.pid}/stdin`, { method: 'POST', json: { text: 'x' } }),
      bob(`/v1/sessions/${id}/contexts`),
      bob(`/v1/sessions/${id}/contexts`, { method: 'POST', json: { language: 'bash' } }),
      bob(`/v1/sessions/${id}/contexts/python/restart`, { method: 'POST' }),
      bob(`/v1/sessions/${id}/contexts/python`, { method: 'DELETE' }),
    ];
    for (const response of await Promise.all(attempts)) {
      expect(response.status).toBe(404);
      expect(((await response.json()) as Json).error.code).toBe('session-not-found');
    }
    expect((await api.json<Json>(`/v1/sessions/${id}/commands`)).commands).toHaveLength(1);
  });
});

describe('contexts and languages', () => {
  it('runs in a language’s default context, or a created one, and lists, restarts and removes them', async () => {
    const id = await newSession();
    const execute = (json: Json) => api.json<Json>(`/v1/sessions/${id}/executions`, { method: 'POST', json });
    expect((await execute({ code: '1' })).results[0].data['text/plain']).toBe('python:python');
    expect((await execute({ code: '1', language: 'javascript' })).results[0].data['text/plain']).toBe(
      'javascript:javascript',
    );
    const created = await api(`/v1/sessions/${id}/contexts`, {
      method: 'POST',
      json: { language: 'bash', cwd: 'work' },
    });
    expect(created.status).toBe(201);
    const context = (await created.json()) as Json;
    expect(context).toMatchObject({ language: 'bash', cwd: '/mnt/data/work', executionCount: 0 });
    const inIt = await execute({ code: 'pwd', context: context.id });
    expect(inIt.results[0].data['text/plain']).toBe(`bash:${context.id}`);
    expect(inIt.executionCount).toBe(1);

    const listed = (await api.json<Json>(`/v1/sessions/${id}/contexts`)).contexts;
    expect(listed.map((entry: Json) => entry.language)).toEqual(['python', 'javascript', 'bash']);
    const restarted = await api.json<Json>(`/v1/sessions/${id}/contexts/${context.id}/restart`, { method: 'POST' });
    expect(restarted).toMatchObject({ id: context.id, executionCount: 0 });
    expect((await api(`/v1/sessions/${id}/contexts/${context.id}`, { method: 'DELETE' })).status).toBe(204);
    const gone = await api(`/v1/sessions/${id}/executions`, {
      method: 'POST',
      json: { code: '1', context: context.id },
    });
    expect(gone.status).toBe(404);
    expect(((await gone.json()) as Json).error.code).toBe('context-not-found');
  });

  it('refuses an unknown language, a context that contradicts it, and contexts past the session’s cap', async () => {
    const id = await newSession();
    const execute = (json: Json) => api(`/v1/sessions/${id}/executions`, { method: 'POST', json });
    const cobol = await execute({ code: '1', language: 'cobol' });
    expect(cobol.status).toBe(400);
    expect(((await cobol.json()) as Json).error.message).toContain('language');
    const contradiction = await execute({ code: '1', context: 'python', language: 'r' });
    expect(contradiction.status).toBe(400);
    const badId = await execute({ code: '1', context: '../x' });
    expect(badId.status).toBe(400);
    const missing = await api(`/v1/sessions/${id}/contexts/nope/restart`, { method: 'POST' });
    expect(missing.status).toBe(404);
    expect(((await missing.json()) as Json).error.code).toBe('context-not-found');

    // python is one; at most 3 (maxContexts).
    for (const language of ['r', 'typescript']) {
      const made = await api(`/v1/sessions/${id}/contexts`, { method: 'POST', json: { language } });
      expect(made.status).toBe(201);
    }
    const full = await api(`/v1/sessions/${id}/contexts`, { method: 'POST', json: { language: 'bash' } });
    expect(full.status).toBe(429);
    expect(((await full.json()) as Json).error.code).toBe('too-many-contexts');
  });

  it('describes the routes in /openapi.json', async () => {
    const document = await api.json<Json>('/openapi.json');
    expect(Object.keys(document.paths)).toEqual(
      expect.arrayContaining([
        '/v1/sessions/{id}/commands',
        '/v1/sessions/{id}/commands/{pid}',
        '/v1/sessions/{id}/commands/{pid}/stdin',
        '/v1/sessions/{id}/contexts',
        '/v1/sessions/{id}/contexts/{contextId}/restart',
        '/v1/sessions/{id}/contexts/{contextId}',
      ]),
    );
    const execute = document.paths['/v1/sessions/{id}/executions'].post.requestBody.content['application/json'].schema;
    expect(execute.properties.language.enum).toEqual(['python', 'javascript', 'typescript', 'bash', 'r']);
    const command = document.paths['/v1/sessions/{id}/commands'].post;
    expect(Object.keys(command.responses)).toEqual(expect.arrayContaining(['200', '202', '413', '429']));
  });
});
