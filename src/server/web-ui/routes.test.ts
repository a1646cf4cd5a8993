/** The web UI's static serving at / (with its strict CSP), over real HTTP on 127.0.0.1; no code runs. */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client, startScriptedServer } from '../../../test/support/server.js';
import { WEB_CSP, webCsp } from './routes.js';

type Server = Awaited<ReturnType<typeof startScriptedServer>>;

describe('the web UI is served at / with a strict CSP', () => {
  let server: Server;
  let root: string;

  beforeAll(async () => {
    root = await mkdtemp(path.join(os.tmpdir(), 'sandcell-web-'));
    await mkdir(path.join(root, 'assets'));
    await writeFile(path.join(root, 'index.html'), '<!doctype html><title>sandcell</title><div id="app"></div>');
    await writeFile(path.join(root, 'assets', 'app-1234.js'), 'console.log(1)');
    server = await startScriptedServer(undefined, { webRoot: root });
  });
  afterAll(async () => {
    await server?.close();
    await rm(root, { recursive: true, force: true });
  });

  it('serves the app and its assets, with the CSP and without letting paths escape', async () => {
    const api = client(server);
    const page = await api('/');
    expect(page.status).toBe(200);
    expect(await page.text()).toMatch(/<div id="app">/);
    // The page frames only the apps sessions serve: every PORT-ID under the server's localhost domain.
    expect(page.headers.get('content-security-policy')).toBe(webCsp(`http://*.localhost:${server.port}`));
    expect(page.headers.get('content-security-policy')).toContain(`frame-src http://*.localhost:${server.port};`);
    expect(WEB_CSP).toMatch(/script-src 'self'(;|$)/);
    expect(WEB_CSP).not.toMatch(/unsafe-inline|unsafe-eval/);
    expect(page.headers.get('x-frame-options')).toBe('DENY');
    const deep = await api('/conversations/some-id', { headers: { accept: 'text/html,*/*;q=0.8' } });
    expect(await deep.text()).toMatch(/<div id="app">/);
    expect((await api('/conversations/some-id')).status).toBe(404); // an API client gets JSON, not the page
    const asset = await api('/assets/app-1234.js');
    expect(asset.headers.get('content-type')).toMatch(/^text\/javascript/);
    expect(asset.headers.get('cache-control')).toMatch(/immutable/);
    expect(asset.headers.get('content-encoding')).toBe('gzip'); // fetch asked for gzip and decoded it
    expect(await asset.text()).toBe('console.log(1)');
    expect((await api('/assets/missing.js')).status).toBe(404);
    for (const outside of ['/%2e%2e/%2e%2e/etc/passwd', '/assets/..%2f..%2f..%2f..%2f..%2fetc%2fpasswd']) {
      const response = await api(outside);
      expect(await response.text()).not.toMatch(/root:x:0:0/);
    }
    const apiMiss = await api('/v1/nothing-here');
    expect(apiMiss.status).toBe(404);
    expect(((await apiMiss.json()) as { error: { code: string } }).error.code).toBe('route-not-found');
  });

  it('says how to build the UI when it is not built', async () => {
    const unbuilt = await startScriptedServer(undefined, { webRoot: path.join(root, 'nothing'), poolSize: 0 });
    try {
      const page = await client(unbuilt)('/');
      expect(page.status).toBe(503);
      expect(await page.text()).toMatch(/npm run build/);
    } finally {
      await unbuilt.close();
    }
  });
});
