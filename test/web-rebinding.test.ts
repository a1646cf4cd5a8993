/**
 * DNS rebinding and cross-site requests as a real browser makes them: Debian's chromium
 * (playwright-core) resolves `rebind.attacker.example` to 127.0.0.1 (`--host-resolver-rules`),
 * as a rebinding attacker's DNS does once the victim has the page. The sandcell server runs
 * without keys, on the scripted backend (no code runs here).
 *
 * - Rebinding: the page at http://rebind.attacker.example:PORT is then served by the sandcell
 *   server itself, and its script is same-origin with it. The server must serve nothing to that
 *   name: the page load answers 421 and so does every fetch the page makes. The canary: the same
 *   page and fetches at http://127.0.0.1:PORT work.
 * - Cross-site: a page on another origin (served by a small server of the test, on another port)
 *   sends what needs no preflight: `fetch` in no-cors mode, an image, a form with a file. The
 *   server's request log proves each request reached it (chromium's own Local Network Access
 *   checks do not stop a loopback page, so they are not what refuses them here).
 */
import { existsSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { type Browser, type BrowserContext, chromium, type Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { SandcellServer } from '../src/server/index.js';
import { rawRequest } from './support/raw-http.js';
import { type LogCapture, startScriptedServer } from './support/server.js';

const CHROMIUM = process.env.SANDCELL_CHROMIUM ?? '/usr/bin/chromium';
const ATTACKER_NAME = 'rebind.attacker.example';
const ATTACKER_PAGE = '<!doctype html><title>attacker</title><p>nothing to see here</p>';

let browser: Browser;
let server: SandcellServer & { logs: LogCapture };
/** The attacker's own web server: serves the attacker's page, on another port of this machine. */
let attacker: http.Server;
let attackerPort: number;
const contexts: BrowserContext[] = [];

beforeAll(async () => {
  if (!existsSync(CHROMIUM)) {
    throw new Error(`chromium is missing at ${CHROMIUM}: run \`npm run setup\` (apt-get install chromium).`);
  }
  // Debug logs name every request with its status: they show what reached the server.
  // No code runs: the sessions the canary creates are the scripted backend's.
  server = await startScriptedServer(undefined, { limits: { maxSessions: 8 }, logLevel: 'debug' });
  attacker = http.createServer((_request, response) => {
    response.writeHead(200, { 'content-type': 'text/html' });
    response.end(ATTACKER_PAGE);
  });
  await new Promise<void>((resolve) => attacker.listen(0, '127.0.0.1', resolve));
  attackerPort = (attacker.address() as AddressInfo).port;
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-dev-shm-usage',
      '--disable-background-networking',
      '--disable-component-update',
      '--no-first-run',
      `--host-resolver-rules=MAP ${ATTACKER_NAME} 127.0.0.1`,
    ],
  });
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await server?.close();
  attacker?.closeAllConnections();
  await new Promise((resolve) => attacker?.close(resolve));
});

afterEach(async () => {
  for (const context of contexts.splice(0)) await context.close();
});

/** A tab that opened `url`, with the status its document was answered with. */
async function open(url: string): Promise<{ page: Page; status: number | undefined }> {
  const context = await browser.newContext();
  contexts.push(context);
  const page = await context.newPage();
  const response = await page.goto(url);
  return { page, status: response?.status() };
}

interface Answer {
  status: number;
  body: string;
}

/** `fetch` from inside the page, as the attacker's script would; a network failure is status 0. */
function fetchFromPage(page: Page, url: string, method = 'GET'): Promise<Answer> {
  return page.evaluate(
    async ({ url, method }) => {
      try {
        const response = await fetch(url, { method });
        return { status: response.status, body: await response.text() };
      } catch (error) {
        return { status: 0, body: String(error) };
      }
    },
    { url, method },
  );
}

async function liveSessions(): Promise<number> {
  return ((await rawRequest(server.port, '/v1/sessions')).json.sessions as unknown[]).length;
}

/** `METHOD /path STATUS` of each request the server answered since log line `from`. */
function answered(from: number): string[] {
  return server.logs.lines
    .slice(from)
    .filter((line) => line.msg === 'request')
    .map((line) => `${line.method} ${line.path} ${line.status}`);
}

describe('a page in the browser', () => {
  it('on the server’s own origin drives it (the canary)', async () => {
    const { page, status } = await open(`http://127.0.0.1:${server.port}/`);
    expect(status).toBe(200);
    const created = await fetchFromPage(page, '/v1/sessions', 'POST');
    expect(created.status).toBe(201);
    const id = JSON.parse(created.body).id as string;
    const listed = await fetchFromPage(page, '/v1/sessions');
    expect(JSON.parse(listed.body).sessions.map((session: { id: string }) => session.id)).toContain(id);
    expect((await fetchFromPage(page, `/v1/sessions/${id}`, 'DELETE')).status).toBe(204);
  });

  it('on a name rebound to 127.0.0.1 gets nothing from the server: the page and its fetches answer 421', async () => {
    const before = await liveSessions();
    const { page, status } = await open(`http://${ATTACKER_NAME}:${server.port}/`);
    expect(status).toBe(421);
    for (const [path, method] of [
      ['/v1/sessions', 'POST'],
      ['/v1/conversations', 'POST'],
      ['/v1/conversations', 'GET'],
      ['/v1/sessions', 'GET'],
      ['/mcp', 'POST'],
    ] as const) {
      const answer = await fetchFromPage(page, path, method);
      expect(answer.status, `${method} ${path}`).toBe(421);
      // The server's own refusal: the request did reach it through the rebound name.
      expect(JSON.parse(answer.body).error.code).toBe('host-not-allowed');
    }
    expect(await liveSessions()).toBe(before);
  });

  it('on another site cannot create sessions or plant files with requests that need no preflight', async () => {
    const before = await liveSessions();
    const logged = server.logs.lines.length;
    const { page, status } = await open(`http://${ATTACKER_NAME}:${attackerPort}/attack.html`);
    expect(status).toBe(200);
    const target = `http://127.0.0.1:${server.port}`;
    await page.evaluate(
      async ({ target }) => {
        const doc = (globalThis as unknown as { document: PageDocument }).document;
        // fetch without custom headers in no-cors mode: sent without asking the server first.
        await fetch(`${target}/v1/sessions`, { method: 'POST', mode: 'no-cors' }).catch(() => undefined);
        await fetch(`${target}/v1/conversations`, { method: 'POST', mode: 'no-cors' }).catch(() => undefined);
        // An image.
        await new Promise((resolve) => {
          const image = doc.createElement('img');
          image.onload = image.onerror = resolve;
          image.src = `${target}/azure/files?identifier=from-an-image&api-version=2024-02-02-preview`;
          doc.body.appendChild(image);
        });
      },
      { target },
    );
    // A form posting a file, into a frame so the page stays.
    await page.evaluate(
      ({ target }) => {
        const scope = globalThis as unknown as PageFileScope & { document: PageDocument };
        const doc = scope.document;
        const frame = doc.createElement('iframe');
        frame.name = 'sink';
        doc.body.appendChild(frame);
        const form = doc.createElement('form');
        form.method = 'POST';
        form.enctype = 'multipart/form-data';
        form.target = 'sink';
        form.action = `${target}/azure/files/upload?identifier=from-a-form&api-version=2024-02-02-preview`;
        const field = doc.createElement('input');
        field.type = 'file';
        field.name = 'file';
        const files = new scope.DataTransfer();
        files.items.add(new scope.File(['planted by a page elsewhere'], 'planted.txt', { type: 'text/plain' }));
        field.files = files.files;
        form.appendChild(field);
        doc.body.appendChild(form);
        form.submit();
      },
      { target },
    );
    // Each of the four reached the server and was refused there.
    await expect.poll(() => answered(logged).length, { timeout: 20_000 }).toBeGreaterThanOrEqual(4);
    expect(answered(logged).sort()).toEqual([
      'GET /azure/files 403',
      'POST /azure/files/upload 403',
      'POST /v1/conversations 403',
      'POST /v1/sessions 403',
    ]);
    expect(await liveSessions()).toBe(before);
  });
});

// The page's DOM, typed just enough for the functions evaluated in it (this tsconfig has no DOM library).
interface PageElement {
  [property: string]: unknown;
  appendChild(child: PageElement): void;
  submit(): void;
}
interface PageDocument {
  body: PageElement;
  createElement(name: string): PageElement;
}
interface PageFileScope {
  DataTransfer: new () => { items: { add(file: unknown): void }; files: unknown };
  File: new (parts: string[], name: string, options: { type: string }) => unknown;
}
