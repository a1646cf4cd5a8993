/**
 * Client mistakes with files answer 4xx with a JSON error on every file route
 * (/v1, Azure, conversation uploads), over real HTTP on real sandboxes: a name
 * over the file system's 255-byte limit is refused before anything is written,
 * and a FIFO or socket the code made in /mnt/data is refused at once — the
 * kernel never waits on it, so the session keeps answering.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Client, client, startTestServer } from './support/server.js';

type Server = Awaited<ReturnType<typeof startTestServer>>;
const LONG_NAME = `${'n'.repeat(300)}.csv`;
const AZURE_VERSION = 'api-version=2024-02-02-preview';

function form(name: string, content = 'a,b\n1,2\n'): FormData {
  const body = new FormData();
  body.append('file', new Blob([content]), name);
  return body;
}

async function expectClientError(response: Response, status: number, code: RegExp | string): Promise<void> {
  const text = await response.text();
  expect(response.status, text).toBe(status);
  expect(response.headers.get('content-type')).toMatch(/^application\/json/);
  const body = JSON.parse(text) as { error: { code: string; message: string } };
  expect(body.error.code).toMatch(code);
  expect(body.error.message).not.toBe('');
}

let server: Server;
let api: Client;

beforeAll(async () => {
  server = await startTestServer();
  api = client(server);
});
afterAll(async () => {
  await server?.close();
});

/** Makes a FIFO (with a reader holding it open, so a blocking open would succeed) and a socket. */
const MAKE_SPECIAL_FILES = [
  'import os, socket',
  "os.mkfifo('/mnt/data/f')",
  "reader = os.open('/mnt/data/f', os.O_RDONLY | os.O_NONBLOCK)",
  "os.mkfifo('/mnt/data/lonely')",
  "listener = socket.socket(socket.AF_UNIX); listener.bind('/mnt/data/s')",
].join('\n');

describe('/v1 file routes', () => {
  let id: string;
  beforeAll(async () => {
    id = (await api.json<{ id: string }>('/v1/sessions', { method: 'POST' })).id;
  });

  it('refuse a name over 255 bytes with 400, before writing anything', async () => {
    // Canary: the same route writes a normal name.
    expect((await api(`/v1/sessions/${id}/files/ok.csv`, { method: 'PUT', body: 'x' })).status).toBe(201);
    await expectClientError(
      await api(`/v1/sessions/${id}/files/${LONG_NAME}`, { method: 'PUT', body: 'x' }),
      400,
      'invalid-path',
    );
    await expectClientError(
      await api(`/v1/sessions/${id}/files/dir/${LONG_NAME}/x.csv`, { method: 'PUT', body: 'x' }),
      400,
      'invalid-path',
    );
    await expectClientError(
      await api(`/v1/sessions/${id}/files`, { method: 'POST', body: form(LONG_NAME) }),
      400,
      'invalid-path',
    );
    await expectClientError(await api(`/v1/sessions/${id}/files/${LONG_NAME}`), 400, 'invalid-path');
    const listing = await api.json<{ files: { path: string }[] }>(`/v1/sessions/${id}/files`);
    expect(listing.files.map((file) => file.path)).toEqual(['ok.csv']);
  });

  it('refuse writing or reading a FIFO or socket the code made, with 400; the session keeps working', async () => {
    const made = await api.json<{ status: string }>(`/v1/sessions/${id}/executions`, {
      method: 'POST',
      json: { code: MAKE_SPECIAL_FILES },
    });
    expect(made.status).toBe('ok');
    for (const name of ['f', 'lonely', 's']) {
      await expectClientError(
        await api(`/v1/sessions/${id}/files/${name}`, { method: 'PUT', body: 'x' }),
        400,
        'file-not-a-file',
      );
      await expectClientError(
        await api(`/v1/sessions/${id}/files`, { method: 'POST', body: form(name) }),
        400,
        'file-not-a-file',
      );
      await expectClientError(await api(`/v1/sessions/${id}/files/${name}`), 400, 'file-not-a-file');
    }
    // Nothing reached the FIFO's reader, and the kernel answers both code and file requests.
    const after = await api.json<{ results: { data: Record<string, string> }[] }>(`/v1/sessions/${id}/executions`, {
      method: 'POST',
      json: { code: 'os.read(reader, 10)' },
    });
    expect(after.results[0]?.data['text/plain']).toBe("b''");
    expect(await (await api(`/v1/sessions/${id}/files/ok.csv`)).text()).toBe('x');
  });
});

describe('Azure file routes', () => {
  const identifier = 'file-errors';
  const azure = (path: string, init?: RequestInit) =>
    api(`/azure/${path}${path.includes('?') ? '&' : '?'}identifier=${identifier}&${AZURE_VERSION}`, init);

  it('refuse a name over 255 bytes with 400, before writing anything', async () => {
    expect((await azure('files/upload', { method: 'POST', body: form('ok.csv') })).status).toBe(200);
    await expectClientError(
      await azure('files/upload', { method: 'POST', body: form(LONG_NAME) }),
      400,
      'invalid-path',
    );
    await expectClientError(
      await azure('files/upload', { method: 'POST', body: form(`/mnt/data/${LONG_NAME}`) }),
      400,
      'invalid-path',
    );
    await expectClientError(await azure(`files/content/${LONG_NAME}`), 400, 'invalid-path');
  });

  it('refuse writing or reading a FIFO or socket the code made, with 400; the session keeps working', async () => {
    const made = await azure('code/execute', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        properties: { codeInputType: 'inline', executionType: 'synchronous', code: MAKE_SPECIAL_FILES },
      }),
    });
    expect(((await made.json()) as { properties: { status: string } }).properties.status).toBe('Success');
    for (const name of ['f', 'lonely', 's']) {
      await expectClientError(
        await azure('files/upload', { method: 'POST', body: form(name) }),
        400,
        'file-not-a-file',
      );
      await expectClientError(await azure(`files/content/${name}`), 400, 'file-not-a-file');
    }
    const download = await azure('files/content/ok.csv');
    expect(await download.text()).toBe('a,b\n1,2\n');
  });
});

describe('conversation uploads', () => {
  it('refuse a name over 255 bytes with 400, and a FIFO with 400; the conversation goes on', async () => {
    const conversation = await api.json<{ id: string }>('/v1/conversations', { method: 'POST', json: {} });
    const files = `/v1/conversations/${conversation.id}/files`;
    expect((await api(files, { method: 'POST', body: form('ok.csv') })).status).toBe(201);
    await expectClientError(await api(files, { method: 'POST', body: form(LONG_NAME) }), 400, 'invalid-path');
    const cell = await api.json<{ status: string }>(`/v1/conversations/${conversation.id}/cells`, {
      method: 'POST',
      json: { code: MAKE_SPECIAL_FILES },
    });
    expect(cell.status).toBe('done');
    await expectClientError(await api(files, { method: 'POST', body: form('f') }), 400, 'file-not-a-file');
    const next = await api.json<{ steps: { stdout: string }[] }>(`/v1/conversations/${conversation.id}/cells`, {
      method: 'POST',
      json: { code: "print(open('/mnt/data/ok.csv').read(), end='')" },
    });
    expect(next.steps[0]?.stdout).toBe('a,b\n1,2\n');
  });
});
