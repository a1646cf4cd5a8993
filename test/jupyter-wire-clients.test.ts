/**
 * The Jupyter front door as LLM tools reach it: a Python client doing on the
 * wire what Open WebUI's Jupyter engine does (Debian's aiohttp and websockets),
 * and the refusals every client must meet — a wrong token, another key's
 * kernel, a page from another site (a key's session limit, on every backend, is in
 * test/contract/server-contract.ts). Real HTTP and
 * websockets on 127.0.0.1, real kernels on bubblewrap.
 */
import { spawn } from 'node:child_process';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import type { SandcellServer } from '../src/server/index.js';
import { type LogCapture, startTestServer } from './support/server.js';

const ALICE = 'alice-key-0123456789';
const BOB = 'bob-key-0123456789';
const CLIENT = path.join(import.meta.dirname, 'fixtures/open_webui_jupyter_client.py');
let server: SandcellServer & { logs: LogCapture };

beforeAll(async () => {
  server = await startTestServer({ apiKeys: [`alice:${ALICE}`, `bob:${BOB}`] });
});
afterAll(async () => {
  await server?.close();
});

interface OpenWebUiOutcome {
  stdout: string;
  stderr: string;
  result: string[];
  types: string[];
  largest_frame: number;
  delete_status: number;
}

function openWebUi(code: string, token = ALICE, mode: 'token' | 'password' = 'token'): Promise<OpenWebUiOutcome> {
  // aiohttp's cookie jar refuses cookies from an IP address, so the password mode goes by name.
  const base = mode === 'password' ? server.url.replace('127.0.0.1', 'localhost') : server.url;
  const modeArguments = mode === 'password' ? ['--password'] : [];
  return new Promise((resolve, reject) => {
    const child = spawn('/usr/bin/python3', [CLIENT, `${base}/jupyter/`, token, ...modeArguments], {
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (chunk) => {
      out += chunk;
    });
    child.stderr.on('data', (chunk) => {
      err += chunk;
    });
    child.on('close', (code) =>
      code === 0 ? resolve(JSON.parse(out)) : reject(new Error(`client exited ${code}: ${err}`)),
    );
    child.stdin.end(code);
  });
}

const jupyter = (route: string, token?: string, init: RequestInit = {}) =>
  fetch(`${server.url}/jupyter/${route}`, {
    ...init,
    headers: { ...(token ? { authorization: `token ${token}` } : {}), ...(init.headers as Record<string, string>) },
  });

/** Opens a channels socket; resolves with the HTTP status it was refused with, or 101. */
function connect(kernelId: string, query: string, headers: Record<string, string> = {}): Promise<number> {
  return new Promise((resolve, reject) => {
    const socket = new WebSocket(
      `${server.url.replace('http', 'ws')}/jupyter/api/kernels/${kernelId}/channels${query}`,
      {
        headers,
      },
    );
    socket.on('open', () => {
      socket.close();
      resolve(101);
    });
    socket.on('unexpected-response', (_request, response) => resolve(response.statusCode ?? 0));
    socket.on('error', reject);
  });
}

describe('an Open WebUI-style client', () => {
  it('runs code in a fresh kernel, reads its output up to idle, and deletes the kernel', async () => {
    const outcome = await openWebUi('import sys\nprint("hello")\nprint("warn", file=sys.stderr)\n6 * 7');
    expect(outcome.stdout).toBe('hello\n');
    expect(outcome.stderr).toBe('warn\n');
    expect(outcome.result).toEqual(['42']);
    expect(outcome.types).toEqual([
      'status',
      'execute_input',
      'stream',
      'stream',
      'execute_result',
      'execute_reply',
      'status',
    ]);
    expect(outcome.delete_status).toBe(204);
    const left = (await (await jupyter('api/kernels', ALICE)).json()) as unknown[];
    expect(left).toEqual([]);
  });

  it('logs in with the key as password (the _xsrf cookie, then the login cookie) and runs code the same way', async () => {
    const outcome = await openWebUi('print(6 * 7)', ALICE, 'password');
    expect(outcome.stdout).toBe('42\n');
    expect(outcome.delete_status).toBe(204);
  });

  it('gets an error as its traceback, and a chart as an image', async () => {
    const failed = await openWebUi('1/0');
    expect(failed.stderr).toContain('ZeroDivisionError');
    const chart = await openWebUi('import matplotlib.pyplot as plt\nplt.plot([3, 1, 2])\nplt.show()');
    expect(chart.result).toEqual(['image/png']);
  });

  it('keeps every frame under 1 MiB: a bigger figure comes as a note, and the run still reaches idle', async () => {
    const outcome = await openWebUi(
      'import numpy as np, matplotlib.pyplot as plt\n' +
        'plt.figure(figsize=(20, 20), dpi=100)\nplt.imshow(np.random.default_rng(0).random((800, 800)))\nplt.show()\nprint("after")',
    );
    expect(outcome.largest_frame).toBeLessThanOrEqual(1024 * 1024);
    expect(outcome.result.join('')).toContain('over the 1 MiB');
    expect(outcome.stdout).toBe('after\n');
  });
});

describe('refusals', () => {
  it('answers a missing or wrong token with 403, on REST and on the websocket', async () => {
    expect((await jupyter('api')).status).toBe(200);
    expect((await jupyter('api/kernels')).status).toBe(403);
    expect((await jupyter('api/kernels', 'not-a-key')).status).toBe(403);
    const refused = await jupyter('api/kernels?token=not-a-key', undefined, { method: 'POST' });
    expect(refused.status).toBe(403);
    expect(await refused.json()).toMatchObject({ message: expect.stringContaining('Forbidden'), reason: null });

    const created = await jupyter(`api/kernels?token=${ALICE}`, undefined, { method: 'POST' });
    expect(created.status).toBe(201);
    const kernel = (await created.json()) as { id: string };
    expect(await connect(kernel.id, '?token=not-a-key')).toBe(403);
    expect(await connect(kernel.id, '')).toBe(403);
    expect(await connect(kernel.id, `?token=${ALICE}`)).toBe(101);
    expect(await connect(kernel.id, '', { authorization: `token ${ALICE}` })).toBe(101);
    expect((await jupyter(`api/kernels/${kernel.id}`, ALICE, { method: 'DELETE' })).status).toBe(204);
  });

  it('refuses a wrong password, a login without its _xsrf cookie, and a cookie request without X-XSRFToken', async () => {
    const page = await jupyter('login');
    const xsrf = /_xsrf=([^;]+)/.exec(page.headers.get('set-cookie') ?? '')?.[1] ?? '';
    expect(xsrf).not.toBe('');
    const logIn = (password: string, cookie: string) =>
      jupyter('login', undefined, {
        method: 'POST',
        redirect: 'manual',
        headers: { 'content-type': 'application/x-www-form-urlencoded', cookie },
        body: new URLSearchParams({ _xsrf: xsrf, password }).toString(),
      });
    expect((await logIn('not-a-key', `_xsrf=${xsrf}`)).status).toBe(403);
    expect((await logIn(ALICE, '')).status).toBe(403);
    const loggedIn = await logIn(ALICE, `_xsrf=${xsrf}`);
    expect(loggedIn.status).toBe(302);
    const login = /sandcell-jupyter-login=([^;]+)/.exec(loggedIn.headers.get('set-cookie') ?? '')?.[1];
    const cookie = `_xsrf=${xsrf}; sandcell-jupyter-login=${login}`;
    expect((await jupyter('api/kernels', undefined, { headers: { cookie } })).status).toBe(200);
    expect((await jupyter('api/kernels', undefined, { method: 'POST', headers: { cookie } })).status).toBe(403);
  });

  it("keeps one key's kernels from another: not listed, not found, no socket", async () => {
    const kernel = (await (
      await jupyter('api/kernels', ALICE, { method: 'POST', body: '{"name":"python3"}' })
    ).json()) as {
      id: string;
    };
    expect(((await (await jupyter('api/kernels', BOB)).json()) as unknown[]).length).toBe(0);
    expect((await jupyter(`api/kernels/${kernel.id}`, BOB)).status).toBe(404);
    expect((await jupyter(`api/kernels/${kernel.id}/interrupt`, BOB, { method: 'POST' })).status).toBe(404);
    expect((await jupyter(`api/kernels/${kernel.id}`, BOB, { method: 'DELETE' })).status).toBe(404);
    expect(await connect(kernel.id, `?token=${BOB}`)).toBe(404);
    expect((await jupyter(`api/kernels/${kernel.id}`, ALICE)).status).toBe(200);
    expect((await jupyter(`api/kernels/${kernel.id}`, ALICE, { method: 'DELETE' })).status).toBe(204);
  });

  it('refuses a page from another site, even with the token in its query', async () => {
    const created = await jupyter(`api/kernels?token=${ALICE}`, undefined, { method: 'POST' });
    const kernel = (await created.json()) as { id: string };
    const fromPage = await jupyter(`api/kernels?token=${ALICE}`, undefined, {
      method: 'POST',
      headers: { origin: 'http://evil.example' },
    });
    expect(fromPage.status).toBe(403);
    expect(await connect(kernel.id, `?token=${ALICE}`, { origin: 'http://evil.example' })).toBe(403);
    await jupyter(`api/kernels/${kernel.id}`, ALICE, { method: 'DELETE' });
  });
});
