/**
 * The E2B code interpreter's own logic on the scripted backend (no sandbox): the NDJSON lines of
 * an execution in order, the environment runs queued around the code (and none without
 * variables), refusals answered before the stream starts, and a client that leaves interrupting
 * its code. The real SDK against real sandboxes is in test/e2b/e2b-interpreter.test.ts.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { printed, raised, value } from '../../../test/support/kernel-script.js';
import { type LogCapture, startScriptedServer } from '../../../test/support/server.js';
import type { ScriptedRun } from '../../backends/scripted/script.js';
import type { SandcellServer } from '../index.js';

const KEY = 'e2b_00112233445566778899aabbccddeeff';
const ran: { code: string; context: string }[] = [];

const kernel: ScriptedRun = (context) => {
  ran.push({ code: context.code, context: context.contextId });
  if (context.code === 'work') {
    return [
      printed('step\n'),
      { type: 'display', data: { 'image/png': 'iVBORw0KGgo=' } },
      value("'done'", { 'text/html': '<b>done</b>' }),
      raised('ValueError', 'late'),
    ];
  }
  if (context.code === 'hang') return [{ type: 'hang' }];
  return [];
};

let server: SandcellServer & { logs: LogCapture };

beforeAll(async () => {
  server = await startScriptedServer(kernel, {
    apiKeys: [KEY],
    sessionOptions: { maxCodeBytes: 1024 },
  });
});
afterAll(async () => {
  await server?.close();
});

async function createSandbox(envVars: Record<string, string> = {}) {
  const response = await fetch(`${server.url}/e2b/sandboxes`, {
    method: 'POST',
    headers: { 'x-api-key': KEY, 'content-type': 'application/json' },
    body: JSON.stringify({ templateID: 'code-interpreter-v1', envVars }),
  });
  expect(response.status).toBe(201);
  return (await response.json()) as { sandboxID: string; trafficAccessToken: string; envdAccessToken: string };
}

function execute(sandbox: Awaited<ReturnType<typeof createSandbox>>, body: unknown, signal?: AbortSignal) {
  return fetch(`${server.url}/e2b/execute`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'e2b-sandbox-id': sandbox.sandboxID,
      'e2b-sandbox-port': '49999',
      'e2b-traffic-access-token': sandbox.trafficAccessToken,
      'x-access-token': sandbox.envdAccessToken,
    },
    body: JSON.stringify(body),
    signal,
  });
}

const linesOf = async (response: Response) =>
  (await response.text())
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as Record<string, unknown>);

it('streams output and results as they come, then the count, the error and the end', async () => {
  const sandbox = await createSandbox();
  const response = await execute(sandbox, { code: 'work' });
  expect(response.headers.get('content-type')).toBe('application/x-ndjson');
  const lines = await linesOf(response);
  expect(lines.map((line) => line.type)).toEqual([
    'stdout',
    'result',
    'result',
    'number_of_executions',
    'error',
    'end_of_execution',
  ]);
  expect(lines[1]).toEqual({ type: 'result', png: 'iVBORw0KGgo=', is_main_result: false });
  expect(lines[2]).toEqual({ type: 'result', text: 'done', html: '<b>done</b>', is_main_result: true });
  expect(lines[4]).toMatchObject({ name: 'ValueError', value: 'late', traceback: 'ValueError: late' });
});

it('queues the environment runs around the code in its context, and none without variables', async () => {
  const sandbox = await createSandbox({ REGION: 'north' });
  ran.length = 0;
  await linesOf(await execute(sandbox, { code: 'plain', language: 'bash', env_vars: { TIER: 'gold' } }));
  expect(ran.map((run) => run.context)).toEqual(['bash', 'bash', 'bash', 'bash']);
  // The default context's first run moves it to /home/user, once.
  expect(ran[0]?.code).toBe('cd /home/user');
  expect(ran[1]?.code).toContain("export REGION='north'");
  expect(ran[1]?.code).toContain("export TIER='gold'");
  expect(ran[2]?.code).toBe('plain');
  expect(ran[3]?.code).toContain('unset REGION TIER');

  const bare = await createSandbox();
  ran.length = 0;
  await linesOf(await execute(bare, { code: 'plain', context_id: null, language: null, env_vars: null }));
  await linesOf(await execute(bare, { code: 'plain' }));
  expect(ran.map((run) => run.code)).toEqual(['__import__(\'os\').chdir("/home/user")', 'plain', 'plain']);
});

it('refuses before streaming: too much code, bad variables, context and language together, unknown contexts', async () => {
  const sandbox = await createSandbox();
  ran.length = 0;
  const tooLarge = await execute(sandbox, { code: 'x'.repeat(2048) });
  expect(tooLarge.status).toBe(413);
  expect(await tooLarge.json()).toMatchObject({ code: 413, message: expect.stringContaining('sandbox.files.write()') });
  expect((await execute(sandbox, { code: '1', env_vars: { 'NOT A NAME': 'x' } })).status).toBe(400);
  expect((await execute(sandbox, { code: '1', env_vars: ['x'] })).status).toBe(400);
  expect((await execute(sandbox, { code: '1', context_id: 'python', language: 'python' })).status).toBe(400);
  expect((await execute(sandbox, { code: '1', language: 'cobol' })).status).toBe(400);
  expect((await execute(sandbox, { code: '1', context_id: 'python-000000' })).status).toBe(404);
  expect(ran).toEqual([]);
});

it('interrupts the code of a client that goes away, and the next execution runs', async () => {
  const sandbox = await createSandbox();
  const abort = new AbortController();
  const response = await execute(sandbox, { code: 'hang' }, abort.signal);
  expect(response.status).toBe(200);
  abort.abort();
  await expect(response.text()).rejects.toThrow();
  // The hang ends only when interrupted: an answer to the next run proves the interrupt was sent.
  const next = await linesOf(await execute(sandbox, { code: 'plain' }));
  expect(next.at(-1)).toEqual({ type: 'end_of_execution' });
});
