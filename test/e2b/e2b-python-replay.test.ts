/**
 * The Python SDK (`e2b` and `e2b-code-interpreter`), which cannot be installed here, replayed: its
 * requests written down from its source (github.com/e2b-dev/E2B `packages/python-sdk`, and
 * github.com/e2b-dev/code-interpreter `python/e2b_code_interpreter`) — `POST /sandboxes` accepting
 * only 201, `/execute` with JSON nulls for what was not given, `/contexts` without the access
 * token — sent to a real server on bubblewrap, and the answers read as that SDK reads them:
 * httpx's `iter_lines` (str.splitlines' line breaks) and `json.loads` on every line,
 * `data["timestamp"]` on output, `Result(**data)`, `Context.from_json`.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { KEY, startE2bServer, type TestServer } from '../support/e2b.js';

// biome-ignore lint/suspicious/noExplicitAny: answers are read loosely, as Python does
type Json = Record<string, any>;

let server: TestServer;
beforeAll(async () => {
  server = await startE2bServer();
});
afterAll(async () => {
  await server?.close();
});

/** What `e2b.api.metadata.default_headers` and httpx add to every request of the Python SDK. */
const PYTHON_HEADERS = {
  lang: 'python',
  lang_version: '3.12.3',
  package_version: '2.9.0',
  publisher: 'e2b',
  sdk_runtime: 'python',
  system: 'Linux',
  'user-agent': 'python-httpx/0.28.1',
  accept: '*/*',
  'accept-encoding': 'gzip, deflate',
};

/** httpx's LineDecoder splits where str.splitlines does. */
const PYTHON_LINE_BREAKS = new RegExp(
  ['\r\n', '\n', '\r', '\v', '\f', '\x1c', '\x1d', '\x1e', '\x85', '\u2028', '\u2029'].join('|'),
);

/** `models._parse_output` of e2b-code-interpreter: what each line must carry for it not to raise. */
function parseAsPython(body: string) {
  const execution: Json = { results: [], logs: { stdout: [], stderr: [] }, error: undefined, executionCount: 0 };
  const lines = body.split(PYTHON_LINE_BREAKS);
  // The body ends with a newline; iter_lines yields no empty line for it, and json.loads('') would raise.
  expect(lines.pop()).toBe('');
  for (const line of lines) {
    const data = JSON.parse(line) as Json;
    const { type, ...rest } = data;
    if (type === 'result') {
      for (const key of Object.keys(rest)) expect(typeof key).toBe('string');
      execution.results.push(rest);
    } else if (type === 'stdout' || type === 'stderr') {
      expect(typeof rest.text).toBe('string');
      expect(rest.timestamp, 'the Python SDK indexes data["timestamp"]').toBeDefined();
      execution.logs[type].push(rest.text);
    } else if (type === 'error') {
      execution.error = { name: rest.name, value: rest.value, traceback: rest.traceback };
    } else if (type === 'number_of_executions') {
      execution.executionCount = rest.execution_count;
    }
  }
  return execution;
}

it("answers the Python SDK's own requests as it parses them: create (201 only), execute, contexts, kill", async () => {
  const base = `${server.url}/e2b`;
  // sandbox_sync/sandbox_api.py _create_sandbox → post_sandboxes: NewSandbox.to_dict().
  const created = await fetch(`${base}/sandboxes`, {
    method: 'POST',
    headers: { ...PYTHON_HEADERS, 'X-API-KEY': KEY, 'Content-Type': 'application/json' },
    body: JSON.stringify({
      templateID: 'code-interpreter-v1',
      timeout: 300,
      secure: true,
      allow_internet_access: true,
      metadata: {},
      envVars: {},
    }),
  });
  expect(created.status).toBe(201);
  const sandbox = (await created.json()) as Json;
  for (const key of ['sandboxID', 'templateID', 'clientID', 'envdVersion']) expect(typeof sandbox[key]).toBe('string');
  const [major = 0, minor = 0] = String(sandbox.envdVersion).split('.').map(Number);
  expect(major > 0 || minor >= 1, 'below envd 0.1.0 the SDK kills the sandbox').toBe(true);

  const sandboxHeaders = {
    ...PYTHON_HEADERS,
    'Content-Type': 'application/json',
    'E2b-Sandbox-Id': sandbox.sandboxID,
    'E2b-Sandbox-Port': '49999',
  };
  const execute = async (body: Json) => {
    // code_interpreter_sync.py run_code: both tokens, every field present (None → null).
    const response = await fetch(`${base}/execute`, {
      method: 'POST',
      headers: {
        ...sandboxHeaders,
        ...(sandbox.envdAccessToken ? { 'X-Access-Token': sandbox.envdAccessToken } : {}),
        ...(sandbox.trafficAccessToken ? { 'E2B-Traffic-Access-Token': sandbox.trafficAccessToken } : {}),
      },
      body: JSON.stringify({ context_id: null, language: null, env_vars: null, ...body }),
    });
    expect(response.status).toBe(200);
    return parseAsPython(await response.text());
  };

  const first = await execute({
    code: 'import sys\nprint("line\\u2028with a separator")\nprint("warned", file=sys.stderr)\nvalue = 21\nvalue * 2',
  });
  expect(first.logs.stdout).toEqual(['line\u2028with a separator\n']);
  expect(first.logs.stderr).toEqual(['warned\n']);
  expect(first.results).toEqual([{ text: '42', is_main_result: true }]);
  expect(first.executionCount).toBeGreaterThan(0);

  const failed = await execute({ code: 'value / 0' });
  expect(failed.error).toMatchObject({ name: 'ZeroDivisionError', value: 'division by zero' });
  expect(typeof failed.error.traceback).toBe('string');

  // create_code_context: no X-Access-Token, `cwd` only when given.
  const contextResponse = await fetch(`${base}/contexts`, {
    method: 'POST',
    headers: { ...sandboxHeaders, 'E2B-Traffic-Access-Token': sandbox.trafficAccessToken },
    body: JSON.stringify({ language: 'python' }),
  });
  expect(contextResponse.status).toBe(200);
  const context = (await contextResponse.json()) as Json;
  expect(context).toMatchObject({ language: 'python', cwd: '/home/user' });
  expect(typeof context.id).toBe('string');

  const inContext = await execute({
    code: 'import os\nos.environ["TOKEN"]',
    context_id: context.id,
    env_vars: { TOKEN: 'abc' },
  });
  expect(inContext.results).toEqual([{ text: 'abc', is_main_result: true }]);

  const contextCall = (path: string, method: string) =>
    fetch(`${base}${path}`, {
      method,
      headers: { ...sandboxHeaders, 'E2B-Traffic-Access-Token': sandbox.trafficAccessToken },
    });
  expect((await contextCall(`/contexts/${context.id}/restart`, 'POST')).ok).toBe(true);
  const listed = (await (await contextCall('/contexts', 'GET')).json()) as Json[];
  expect(listed.map((entry) => entry.id)).toContain(context.id);
  expect((await contextCall(`/contexts/${context.id}`, 'DELETE')).ok).toBe(true);
  expect((await contextCall(`/contexts/${context.id}`, 'DELETE')).status).toBe(404);

  const killed = await fetch(`${base}/sandboxes/${sandbox.sandboxID}`, {
    method: 'DELETE',
    headers: { ...PYTHON_HEADERS, 'X-API-KEY': KEY },
  });
  expect(killed.status).toBe(204);
});
