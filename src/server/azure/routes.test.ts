/**
 * The Azure dynamic-sessions routes, driven by the exact requests the clients
 * send, with kernels answering from a script (the LlamaIndex case runs on a
 * real sandbox in test/server-azure.test.ts). The clients themselves cannot run here: `@langchain/azure-dynamic-sessions`
 * is not on this machine's npm registry (404), and LangChain's and LlamaIndex's
 * Python tools need PyPI. So each request below replays, field by field, what
 * the client's source builds (URL, query, headers, body), and each assertion
 * reads the response the way that client reads it:
 *
 * - LangChain JS 0.2.x `SessionsPythonREPLTool` (libs/langchain-azure-dynamic-sessions/src/tools.ts):
 *   `${endpoint}/code/execute?identifier=${encodeURIComponent(id)}&api-version=2024-02-02-preview`,
 *   JSON `{properties:{codeInputType:"inline",executionType:"synchronous",code}}`, reads
 *   `properties.{result,stdout,stderr}`; `uploadFile` posts FormData field `file` with the remote
 *   name and reads `value[0].properties`; `downloadFile` GETs `files/content/${name}` (not encoded);
 *   `listFiles` maps `value[].properties`.
 * - LangChain Python `SessionsPythonREPLTool` (langchain_azure_dynamic_sessions/tools/sessions.py):
 *   the same execute body via requests `json=`; uploads with requests `files=[("file", (path, data,
 *   "application/octet-stream"))]`; downloads `files/content/${urllib.parse.quote(path)}`; and
 *   `delete_session()` sends `DELETE ${endpoint}/session?identifier=…&api-version=2025-10-02-preview`.
 * - LlamaIndex `AzureCodeInterpreterToolSpec` (llama_index/tools/azure_code_interpreter/base.py):
 *   code ends with "\n" after its input sanitising; uploads name the file `/mnt/data/<name>`;
 *   downloads strip `/mnt/data/` and GET `files/content/<name>`; reads `properties.result.base64_data`
 *   and `format` for images and `value[].properties.{filename,size}` for files.
 * - The newer API (LangChain Python's 2025-02-02-preview tools): `POST executions`,
 *   `POST files?path=/mnt/data` (multipart), `GET files`, `GET files/{name}/content`.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { assign, byCode, printed, raised, recall, value } from '../../../test/support/kernel-script.js';
import { type LogCapture, startScriptedServer } from '../../../test/support/server.js';
import type { CommandScript } from '../../backends/scripted/script.js';
import type { SandcellServer } from '../index.js';

// biome-ignore lint/suspicious/noExplicitAny: response bodies are read loosely in tests
type Json = Record<string, any>;
const KEY = 'azure-test-key-0123456789';
const OLD = '2024-02-02-preview';

/** `x` as the kernel holds it, for code that reads it. */
const withX =
  (answer: (x: number) => string) =>
  ({ state }: { state: Map<string, unknown> }) =>
    state.has('x') ? [value(answer(Number(state.get('x'))))] : [raised('NameError', "name 'x' is not defined")];

/** `ls` lists /mnt/data; `exit N` fails with N; `sleep` runs until killed. */
const shell: CommandScript = ({ command, files }) => {
  if (command === 'ls')
    return [
      {
        type: 'stdout',
        text: files
          .list()
          .map((file) => `${file.path}\n`)
          .join(''),
      },
    ];
  if (command.startsWith('exit '))
    return [
      { type: 'stderr', text: 'failing\n' },
      { type: 'exit', code: Number(command.slice(5)) },
    ];
  if (command === 'sleep') return [{ type: 'hang' }];
  return [{ type: 'stdout', text: `ran ${command}\n` }];
};

const kernel = byCode({
  'import math\nx = 40\nprint("hi")\nx + 2': assign('x', '40', printed('hi\n'), value('42')),
  '"x is %d" % x': withX((x) => `'x is ${x}'`),
  'x > 1': withX((x) => (x > 1 ? 'True' : 'False')),
  '[x, math.pi]': withX((x) => `[${x}, 3.141592653589793]`),
  'def f():\n    raise ValueError("bad value")\nf()': [
    raised('ValueError', 'bad value', [
      'Traceback (most recent call last):',
      '  Cell In[5], line 3',
      '    f()',
      '  Cell In[5], line 2, in f',
      '    raise ValueError("bad value")',
    ]),
  ],
  // Sums the column of the uploaded file: the kernel reads what the upload wrote.
  'import pandas as pd\nint(pd.read_csv("/mnt/data/numbers.csv").col.sum())': ({ files }) => {
    const [, ...rows] = files.read('numbers.csv').toString().trim().split('\n');
    return [value(String(rows.reduce((total, row) => total + Number(row), 0)))];
  },
  'y = 7\ny': assign('y', '7', value('7')),
  y: recall('y'),
  'print(6*7)\n6*7': [printed('42\n'), value('42')],
  'raise KeyError("k")': [raised('KeyError', "'k'")],
  'import time\ntime.sleep(10)': [{ type: 'sleep', ms: 10_000 }],
  '1': [value('1')],
});

let server: SandcellServer & { logs: LogCapture };
let endpoint: string;

beforeAll(async () => {
  server = await startScriptedServer(kernel, { apiKeys: [KEY] }, { command: shell });
  endpoint = `${server.url}/azure`;
});
afterAll(async () => {
  await server?.close();
});

/** The token provider each client is given: here it returns a sandcell key. */
const tokenProvider = async () => KEY;

/** Builds URLs as all three clients do: endpoint + "/" + path + "?identifier=…&api-version=…". */
function url(path: string, identifier: string, apiVersion = OLD): string {
  const base = endpoint.endsWith('/') ? endpoint : `${endpoint}/`;
  return `${base}${path}?identifier=${encodeURIComponent(identifier)}&api-version=${apiVersion}`;
}

/** A multipart body exactly as Python's requests encodes `files=[("file", (name, data, type))]`. */
function requestsMultipart(filename: string, data: Buffer): { body: Buffer; contentType: string } {
  const boundary = randomUUID().replace(/-/g, '');
  const body = Buffer.concat([
    Buffer.from(
      `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${filename}"\r\nContent-Type: application/octet-stream\r\n\r\n`,
    ),
    data,
    Buffer.from(`\r\n--${boundary}--\r\n`),
  ]);
  return { body, contentType: `multipart/form-data; boundary=${boundary}` };
}

describe('LangChain JS SessionsPythonREPLTool (request shapes of 0.2.x)', () => {
  const sessionId = randomUUID();
  const headers = async () => ({
    Authorization: `Bearer ${await tokenProvider()}`,
    'User-Agent': `langchainjs-azure-dynamic-sessions (Language=JavaScript; node.js/${process.version}; linux; x64)`,
  });
  const call = async (pythonCode: string) => {
    const response = await fetch(url('code/execute', sessionId), {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', ...(await headers()) },
      body: JSON.stringify({ properties: { codeInputType: 'inline', executionType: 'synchronous', code: pythonCode } }),
    });
    expect(response.ok).toBe(true);
    const { properties } = (await response.json()) as Json;
    return { result: properties.result, stdout: properties.stdout, stderr: properties.stderr, properties };
  };

  it('runs code with state kept between calls; the result is the last value as JSON', async () => {
    const first = await call('import math\nx = 40\nprint("hi")\nx + 2');
    expect(first).toMatchObject({ result: 42, stdout: 'hi\n', stderr: '' });
    expect(first.properties).toMatchObject({ $id: '2', status: 'Success' });
    expect(first.properties.executionTimeInMilliseconds).toEqual(expect.any(Number));
    expect((await call('"x is %d" % x')).result).toBe('x is 40');
    expect((await call('x > 1')).result).toBe(true);
    expect((await call('[x, math.pi]')).result).toBe('[40, 3.141592653589793]');
  });

  it('shows a Python exception with its traceback', async () => {
    const failed = await call('def f():\n    raise ValueError("bad value")\nf()');
    expect(failed.properties.status).toBe('Failure');
    expect(failed.stderr).toContain('Traceback');
    expect(failed.stderr).toContain('ValueError: bad value');
  });

  it('uploads with FormData, lists and downloads', async () => {
    const form = new FormData();
    form.append('file', new Blob(['col\n1\n2\n']), 'numbers.csv');
    const uploaded = await fetch(url('files/upload', sessionId), {
      method: 'POST',
      headers: await headers(),
      body: form,
    });
    expect(uploaded.ok).toBe(true);
    const remote = ((await uploaded.json()) as Json).value[0].properties;
    expect(remote).toMatchObject({ filename: 'numbers.csv', size: 8 });
    expect(new Date(remote.lastModifiedTime).getTime()).toBeGreaterThan(0);

    expect((await call('import pandas as pd\nint(pd.read_csv("/mnt/data/numbers.csv").col.sum())')).result).toBe(3);

    const listed = await fetch(url('files', sessionId), { headers: await headers() });
    const files = ((await listed.json()) as Json).value.map((entry: Json) => entry.properties);
    expect(files.map((file: Json) => file.filename)).toEqual(['numbers.csv']);

    const download = await fetch(url('files/content/numbers.csv', sessionId), { headers: await headers() });
    expect(await (await download.blob()).text()).toBe('col\n1\n2\n');
  });
});

describe('LangChain Python SessionsPythonREPLTool (request shapes)', () => {
  const sessionId = randomUUID();
  const headers = {
    Authorization: `Bearer ${KEY}`,
    'User-Agent': 'langchain-azure-dynamic-sessions/0.2.0 (Language=Python)',
  };

  it('executes, uploads a nested path, downloads it URL-quoted, and deletes the session', async () => {
    const execute = async (code: string) => {
      const response = await fetch(url('code/execute', sessionId), {
        method: 'POST',
        headers: { ...headers, 'Content-Type': 'application/json' },
        // Python's json.dumps separators
        body: `{"properties": {"codeInputType": "inline", "executionType": "synchronous", "code": ${JSON.stringify(code)}}}`,
      });
      expect(response.status).toBe(200);
      return ((await response.json()) as Json).properties;
    };
    expect((await execute('y = 7\ny')).result).toBe(7);

    const { body, contentType } = requestsMultipart('reports/q1.txt', Buffer.from('quarter one'));
    const upload = await fetch(url('files/upload', sessionId), {
      method: 'POST',
      headers: { ...headers, 'Content-Type': contentType },
      body,
    });
    expect(upload.status).toBe(200);
    expect(((await upload.json()) as Json).value[0].properties).toMatchObject({ filename: 'reports/q1.txt', size: 11 });

    // urllib.parse.quote keeps "/" by default.
    const download = await fetch(url('files/content/reports/q1.txt', sessionId), { headers });
    expect(await download.text()).toBe('quarter one');

    const deleted = await fetch(url('session', sessionId, '2025-10-02-preview'), { method: 'DELETE', headers });
    expect(deleted.status).toBe(204);
    // The identifier starts fresh: no variables, no files.
    const fresh = await execute('y');
    expect(fresh.status).toBe('Failure');
    expect(fresh.stderr).toContain("NameError: name 'y' is not defined");
    const files = await fetch(url('files', sessionId), { headers });
    expect(((await files.json()) as Json).value).toEqual([]);
    // Deleting again is harmless.
    expect(
      (await fetch(url('session', randomUUID(), '2025-10-02-preview'), { method: 'DELETE', headers })).status,
    ).toBe(204);
  });
});

describe('the newer executions API (2024-10-02-preview and later)', () => {
  const sessionId = `exec-${randomUUID()}`;
  const version = '2025-02-02-preview';
  const headers = { Authorization: `Bearer ${KEY}` };

  it('executes, uploads with ?path=, lists, reads metadata and content, deletes a file', async () => {
    const execute = async (body: Json) => {
      const response = await fetch(url('executions', sessionId, version), {
        method: 'POST',
        headers: { ...headers, 'Content-Type': 'application/json' },
        body: JSON.stringify(body),
      });
      return { status: response.status, body: (await response.json()) as Json };
    };
    const ok = await execute({
      codeInputType: 'Inline',
      executionType: 'Synchronous',
      code: 'print(6*7)\n6*7',
      timeoutInSeconds: 60,
    });
    expect(ok.body).toMatchObject({
      identifier: sessionId,
      executionType: 'Synchronous',
      status: 'Succeeded',
      result: { stdout: '42\n', stderr: '', executionResult: 42 },
    });
    expect(ok.body.id).toMatch(/^[0-9a-f-]{36}$/);
    const failed = await execute({ code: 'raise KeyError("k")' });
    expect(failed.body.status).toBe('Failed');
    expect(failed.body.result.stderr).toContain('KeyError');
    const timeout = await execute({ code: 'import time\ntime.sleep(10)', timeoutInSeconds: 0.3 });
    expect(timeout.body.status).toBe('Failed');
    expect(timeout.body.result.stderr).toContain('time limit');
    // A shell command: `codeInputType: "shellCommand"` with the command in `shellCommand` or in `code`.
    const listed = await execute({ codeInputType: 'ShellCommand', executionType: 'Synchronous', shellCommand: 'ls' });
    expect(listed.body).toMatchObject({
      status: 'Succeeded',
      result: { stdout: '', stderr: '', executionResult: '', exitCode: 0 },
    });
    const failing = await execute({ codeInputType: 'shellCommand', code: 'exit 3' });
    expect(failing.body).toMatchObject({ status: 'Failed', result: { stderr: 'failing\n', exitCode: 3 } });
    const killed = await execute({ shellCommand: 'sleep', timeoutInSeconds: 0.2 });
    expect(killed.body.status).toBe('Failed');
    expect(killed.body.result.stderr).toContain('killed at its time limit');
    // Through the server's one command path: counted in /metrics like every door's commands.
    const metrics = await (await fetch(`${server.url}/metrics`, { headers })).text();
    expect(metrics).toMatch(/^sandcell_commands_total\{kind="foreground",status="timeout"\} [1-9]/m);
    expect(metrics).toMatch(/^sandcell_commands_total\{kind="foreground",status="error"\} [1-9]/m);
    const nothing = await execute({ codeInputType: 'shellCommand' });
    expect(nothing.status).toBe(400);
    expect(nothing.body.error.message).toContain('shellCommand');
    const other = await execute({ codeInputType: 'javaScript', code: '1' });
    expect(other.status).toBe(400);

    const { body, contentType } = requestsMultipart('notes.txt', Buffer.from('some notes'));
    const upload = await fetch(`${url('files', sessionId, version)}&path=/mnt/data`, {
      method: 'POST',
      headers: { ...headers, 'Content-Type': contentType },
      body,
    });
    expect((await upload.json()) as Json).toMatchObject({ name: 'notes.txt', sizeInBytes: 10, type: 'file' });

    const list = (await (await fetch(url('files', sessionId, version), { headers })).json()) as Json;
    expect(list.value.map((file: Json) => [file.name, file.sizeInBytes])).toEqual([['notes.txt', 10]]);
    const meta = (await (await fetch(url('files/notes.txt', sessionId, version), { headers })).json()) as Json;
    expect(meta).toMatchObject({ name: 'notes.txt', sizeInBytes: 10 });
    const content = await fetch(url('files/notes.txt/content', sessionId, version), { headers });
    expect(await content.text()).toBe('some notes');
    expect((await fetch(url('files/notes.txt', sessionId, version), { method: 'DELETE', headers })).status).toBe(204);
    expect((await fetch(url('files/notes.txt/content', sessionId, version), { headers })).status).toBe(404);
  });
});

describe('a shell command through the older code/execute route', () => {
  it('answers in the shape LangChain reads (properties.{status,stdout,stderr,result}) plus exitCode', async () => {
    const response = await fetch(url('code/execute', `shell-${randomUUID()}`), {
      method: 'POST',
      headers: { Authorization: `Bearer ${KEY}`, 'Content-Type': 'application/json' },
      body: JSON.stringify({
        properties: { codeInputType: 'shellCommand', executionType: 'synchronous', code: 'exit 2' },
      }),
    });
    expect(((await response.json()) as Json).properties).toMatchObject({
      status: 'Failure',
      stdout: '',
      stderr: 'failing\n',
      result: '',
      exitCode: 2,
    });
  });
});

describe('Azure routes refuse bad input with a JSON error', () => {
  const headers = { Authorization: `Bearer ${KEY}`, 'Content-Type': 'application/json' };
  const body = JSON.stringify({ properties: { codeInputType: 'inline', executionType: 'synchronous', code: '1' } });

  it.each([
    ['a too-short identifier', `/code/execute?identifier=abc&api-version=${OLD}`, 400],
    ['a too-long identifier', `/code/execute?identifier=${'a'.repeat(129)}&api-version=${OLD}`, 400],
    ['an identifier with a slash', `/code/execute?identifier=ab%2Fcd&api-version=${OLD}`, 400],
    ['no identifier', `/code/execute?api-version=${OLD}`, 400],
    ['no api-version', `/code/execute?identifier=abcd`, 400],
  ])('%s', async (_name, target, status) => {
    const response = await fetch(`${endpoint}${target}`, { method: 'POST', headers, body });
    expect(response.status).toBe(status);
    expect(((await response.json()) as Json).error.code).toBe('invalid-request');
  });

  it('accepts identifiers with the characters Azure allows', async () => {
    const response = await fetch(url('code/execute', 'a|b-{c}[d];(e)<f>'), { method: 'POST', headers, body });
    expect(((await response.json()) as Json).properties.result).toBe(1);
  });

  it('refuses traversal in download and upload names', async () => {
    for (const name of ['..%2F..%2Fetc%2Fpasswd', '%2Fetc%2Fpasswd', 'a%00b']) {
      const response = await fetch(url(`files/content/${name}`, 'traversal-check'), { headers });
      expect(response.status).toBe(400);
      expect(((await response.json()) as Json).error.code).toBe('invalid-path');
    }
    const { body: multipart, contentType } = requestsMultipart('../../etc/cron.d/x', Buffer.from('x'));
    const upload = await fetch(url('files/upload', 'traversal-check'), {
      method: 'POST',
      headers: { Authorization: `Bearer ${KEY}`, 'Content-Type': contentType },
      body: multipart,
    });
    expect(upload.status).toBe(400);
  });

  it("refuses a session past the key's limit in Azure's words: DELETE session frees one, /v1 is not named", async () => {
    const limited = await startScriptedServer(kernel, { apiKeys: [KEY], limits: { maxSessions: 1 } });
    try {
      const run = (identifier: string) =>
        fetch(`${limited.url}/azure/code/execute?identifier=${identifier}&api-version=${OLD}`, {
          method: 'POST',
          headers,
          body,
        });
      expect((await run('first')).status).toBe(200);
      const refused = await run('second');
      expect(refused.status).toBe(429);
      const { error } = (await refused.json()) as Json;
      expect(error.code).toBe('too-many-sessions');
      expect(error.message).toContain('DELETE /azure/session?identifier=');
      expect(error.message).not.toContain('/v1');
    } finally {
      await limited.close();
    }
  });

  it('needs the key', async () => {
    const response = await fetch(url('code/execute', 'no-key-here'), {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Authorization: 'Bearer wrong-key-123456' },
      body,
    });
    expect(response.status).toBe(401);
    expect(response.headers.get('www-authenticate')).toContain('Bearer');
  });
});
