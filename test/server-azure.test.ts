/**
 * The Azure dynamic-sessions routes end to end, on a real sandbox: LlamaIndex's
 * requests (replayed field by field, as src/server/azure/routes.test.ts
 * explains for every client) upload a CSV, plot it with pandas and matplotlib,
 * and download the chart. The routes' own logic for every client runs on the
 * scripted backend in src/server/azure/routes.test.ts.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SandcellServer } from '../src/server/index.js';
import { type LogCapture, startTestServer } from './support/server.js';

// biome-ignore lint/suspicious/noExplicitAny: response bodies are read loosely in tests
type Json = Record<string, any>;
const KEY = 'azure-test-key-0123456789';
const OLD = '2024-02-02-preview';

let server: SandcellServer & { logs: LogCapture };
let endpoint: string;

beforeAll(async () => {
  server = await startTestServer({ apiKeys: [KEY] });
  endpoint = `${server.url}/azure`;
});
afterAll(async () => {
  await server?.close();
});

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

describe('LlamaIndex AzureCodeInterpreterToolSpec (request shapes)', () => {
  const sessionId = randomUUID();
  const headers = { Authorization: `Bearer ${KEY}` };

  it('uploads to /mnt/data/<name>, runs sanitised code, gets a figure as base64 and downloads by name', async () => {
    const { body, contentType } = requestsMultipart('/mnt/data/sales.csv', Buffer.from('month,total\n1,10\n2,30\n'));
    const upload = await fetch(url('files/upload', sessionId), {
      method: 'POST',
      headers: { ...headers, 'Content-Type': contentType },
      body,
    });
    const metadata = ((await upload.json()) as Json).value.map((entry: Json) => entry.properties);
    expect(metadata).toEqual([expect.objectContaining({ filename: 'sales.csv', size: 22 })]);

    const code =
      'import pandas as pd\nimport matplotlib.pyplot as plt\ndf = pd.read_csv("/mnt/data/sales.csv")\n' +
      'df.plot(x="month", y="total")\nplt.savefig("/mnt/data/sales.png")\nplt.show()\n';
    const response = await fetch(url('code/execute', sessionId), {
      method: 'POST',
      headers: {
        ...headers,
        'Content-Type': 'application/json',
        'User-Agent': 'llamaindex-azure-code-interpreter/0.0.0 (Language=Python)',
      },
      body: JSON.stringify({ properties: { codeInputType: 'inline', executionType: 'synchronous', code } }),
    });
    const { properties } = (await response.json()) as Json;
    expect(properties.status).toBe('Success');
    expect(properties.result).toMatchObject({ type: 'image', format: 'png' });
    expect(Buffer.from(properties.result.base64_data, 'base64').subarray(1, 4).toString()).toBe('PNG');

    const listed = await fetch(url('files', sessionId), { headers });
    const names = ((await listed.json()) as Json).value.map((entry: Json) => entry.properties.filename);
    expect(names.sort()).toEqual(['sales.csv', 'sales.png']);

    // download_file_to_local("/mnt/data/sales.png") strips the prefix.
    const png = await fetch(url(`files/content/${'/mnt/data/sales.png'.replace('/mnt/data/', '')}`, sessionId), {
      headers,
    });
    expect(png.headers.get('content-type')).toBe('image/png');
    expect(
      Buffer.from(await png.arrayBuffer())
        .subarray(1, 4)
        .toString(),
    ).toBe('PNG');
    // …and a client that keeps it, encoded or not, gets the same file.
    for (const name of ['%2Fmnt%2Fdata%2Fsales.csv', '/mnt/data/sales.csv']) {
      const csv = await fetch(url(`files/content/${name}`, sessionId), { headers });
      expect(await csv.text()).toBe('month,total\n1,10\n2,30\n');
    }
  });
});

describe('a shell command (codeInputType "shellCommand")', () => {
  const sessionId = randomUUID();
  const headers = { Authorization: `Bearer ${KEY}`, 'Content-Type': 'application/json' };

  it('runs in the same sandbox as the code, answering exit code, stdout and stderr in the execution shape', async () => {
    const code = await fetch(url('code/execute', sessionId), {
      method: 'POST',
      headers,
      body: JSON.stringify({
        properties: {
          codeInputType: 'inline',
          executionType: 'synchronous',
          code: 'open("/mnt/data/a.txt","w").write("1\\n2\\n")',
        },
      }),
    });
    expect(((await code.json()) as Json).properties.status).toBe('Success');
    const response = await fetch(url('executions', sessionId, '2025-02-02-preview'), {
      method: 'POST',
      headers,
      body: JSON.stringify({
        codeInputType: 'shellCommand',
        executionType: 'synchronous',
        shellCommand: 'wc -l < a.txt; echo warned >&2; exit 5',
      }),
    });
    expect((await response.json()) as Json).toMatchObject({
      identifier: sessionId,
      status: 'Failed',
      result: { stdout: '2\n', stderr: 'warned\n', executionResult: '', exitCode: 5 },
    });
  });
});
