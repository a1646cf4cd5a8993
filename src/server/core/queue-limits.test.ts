/**
 * Executions queued in one session stay bounded, on the server's own logic:
 * real HTTP on 127.0.0.1, kernels answering from a script.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Answer, byCode, printed, value } from '../../../test/support/kernel-script.js';
import { formWithFile, rawRequest, waitFor } from '../../../test/support/raw-http.js';
import { type LogCapture, startScriptedServer } from '../../../test/support/server.js';
import type { SandcellServer } from '../index.js';

type Server = SandcellServer & { logs: LogCapture };
// biome-ignore lint/suspicious/noExplicitAny: response bodies are read loosely in tests
type Json = Record<string, any>;

/** Code that runs until the file /mnt/data/go appears (files are written while code runs). */
const WAIT_FOR_GO =
  'import os, time\nprint("started", flush=True)\nwhile not os.path.exists("/mnt/data/go"):\n    time.sleep(0.05)\nprint("released")';

/** What that code does: prints, waits for the file, prints again. */
const waitForGo: Answer = ({ files }) => [
  printed('started\n'),
  { type: 'wait', until: () => files.list().some((entry) => entry.path === 'go') },
  printed('released\n'),
];

const kernel = byCode({
  [WAIT_FOR_GO]: waitForGo,
  'print("second")': [printed('second\n')],
  '"x" * 3': [value("'xxx'")],
  'print("after")': [printed('after\n')],
  '1': [value('1')],
  '2': [value('2')],
});

async function running(server: Server): Promise<number> {
  return ((await rawRequest(server.port, '/healthz')).json as Json).sessions.running as number;
}

describe('executions queued in one session', () => {
  let server: Server;

  beforeAll(async () => {
    server = await startScriptedServer(kernel, { limits: { maxQueuedExecutions: 2 } });
  });
  afterAll(async () => {
    await server?.close();
  });

  const execute = (path: string, code: string, headers: Record<string, string> = {}) =>
    rawRequest(server.port, path, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: JSON.stringify({ code }),
    });

  it('accepts as many as the limit behind a running one, then answers 429 queue-full with Retry-After', async () => {
    const session = (await rawRequest(server.port, '/v1/sessions', { method: 'POST' })).json as Json;
    const path = `/v1/sessions/${session.id}/executions`;
    const blocker = execute(path, WAIT_FOR_GO);
    await waitFor('the first execution to run', async () => (await running(server)) === 1);
    const queued = [execute(path, 'print("second")'), execute(path, '"x" * 3')];
    await waitFor('two executions to queue', async () => (await running(server)) === 3);

    const refused = await execute(path, 'print("one too many")');
    expect(refused.status).toBe(429);
    expect(refused.json.error.code).toBe('queue-full');
    expect(refused.json.error.message).toContain('--max-queued-executions');
    expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
    // A streamed execution is refused with the HTTP status too, before any event.
    const streamed = await execute(path, 'print(1)', { accept: 'application/x-ndjson' });
    expect(streamed.status).toBe(429);
    expect(streamed.json.error.code).toBe('queue-full');

    // Nothing accepted is lost: releasing the first lets every queued one run, and frees the queue.
    const go = await rawRequest(server.port, `/v1/sessions/${session.id}/files/go`, { method: 'PUT', body: 'go' });
    expect(go.status).toBeLessThan(300);
    expect((await blocker).json).toMatchObject({ status: 'ok', stdout: 'started\nreleased\n' });
    const [second, third] = await Promise.all(queued);
    expect(second?.json).toMatchObject({ status: 'ok', stdout: 'second\n' });
    expect(third?.json.results[0].data['text/plain']).toBe("'xxx'");
    expect((await execute(path, 'print("after")')).json).toMatchObject({ status: 'ok', stdout: 'after\n' });
  });

  it('bounds the queue of an Azure identifier the same way (the limit is in the registry)', async () => {
    const identifier = `queue-${server.port}`;
    const path = `/azure/code/execute?identifier=${identifier}&api-version=2024-02-02-preview`;
    const run = (code: string) =>
      rawRequest(server.port, path, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ properties: { codeInputType: 'inline', executionType: 'synchronous', code } }),
      });
    const blocker = run(WAIT_FOR_GO);
    await waitFor('the Azure execution to run', async () => (await running(server)) === 1);
    const queued = [run('1'), run('2')];
    await waitFor('two Azure executions to queue', async () => (await running(server)) === 3);
    const refused = await run('3');
    expect(refused.status).toBe(429);
    expect(refused.json.error.code).toBe('queue-full');

    const form = formWithFile('go', 'go');
    const upload = `/azure/files/upload?identifier=${identifier}&api-version=2024-02-02-preview`;
    await rawRequest(server.port, upload, {
      method: 'POST',
      headers: { 'content-type': form.contentType },
      body: form.body,
    });
    expect((await blocker).json.properties.status).toBe('Success');
    expect((await Promise.all(queued)).map((response) => response.json.properties.result)).toEqual([1, 2]);
  });
});
