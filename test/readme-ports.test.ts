/**
 * docs/ports.md's blocks, run as written from the repository's root, with the one change every
 * README test makes: port 8080 is a free one. The E2B block runs after the README's e2b-serve
 * block, as the page says, with the environment it left; the /v1 block with `$SESSION` a session
 * of the server it talks to. Then each URL they gave is fetched, as a browser on this machine
 * would fetch it (the name in `Host`, the connection to 127.0.0.1).
 */
import { rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { portRequest } from './support/port-request.js';
import { runProcess } from './support/process.js';
import {
  e2bServeThen,
  freePort,
  onPort,
  readmeBlock,
  root,
  runShell,
  scratchClone,
  startServeLine,
} from './support/readme.js';

const script = path.join(root, `.readme-ports-${process.pid}.mjs`);
afterAll(() => rmSync(script, { force: true }));

it('runs the E2B block of docs/ports.md: getHost(port) names the app’s URL, which serves it', async () => {
  const port = await freePort();
  // The block, and then the test's own check that its app answers at that name before it is killed.
  const js = readmeBlock('ports-e2b')
    .code.replaceAll('8080', String(port))
    .replace(
      'await sandbox.kill();',
      [
        'for (let attempt = 0; attempt < 200; attempt++) {',
        '  const answer = await fetch(`http://127.0.0.1:' +
          port +
          '/`, { headers: { "E2b-Sandbox-Id": sandbox.sandboxId, "E2b-Sandbox-Port": "8000" } });',
        '  if (answer.status === 200) { console.log(await answer.text()); break; }',
        '  await new Promise((resolve) => setTimeout(resolve, 100));',
        '}',
        'await sandbox.kill();',
      ].join('\n'),
    );
  writeFileSync(script, js);
  const finished = await runProcess('bash', ['-c', e2bServeThen(port, script)], {
    cwd: root,
    env: { SANDCELL_LOG_LEVEL: 'warn' },
  });
  expect(finished.code, finished.stderr).toBe(0);
  expect(finished.stdout).toBe('true\n<h1>Sales report</h1>\n');
}, 120_000);

it('runs the /v1 block of docs/ports.md: a server’s port waited for, listed with its URL, and a preview link', async () => {
  const clone = scratchClone();
  const server = await startServeLine('npx sandcell serve --pool-size 0', { cwd: clone });
  try {
    const created = await fetch(`http://127.0.0.1:${server.port}/v1/sessions`, {
      method: 'POST',
      body: '{}',
      headers: { 'content-type': 'application/json' },
    });
    const { id } = (await created.json()) as { id: string };
    await fetch(`http://127.0.0.1:${server.port}/v1/sessions/${id}/files/index.html`, {
      method: 'PUT',
      body: '<h1>Sales report</h1>',
    });
    const block = readmeBlock('ports-v1').code;
    const ran = await runShell(onPort(block, server.port), { cwd: clone, env: { SESSION: id } });
    expect(ran.code, ran.stderr).toBe(0);
    const [waited, preview] = ran.stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line));
    const host = `8000-${id}.localhost:${server.port}`;
    expect(waited).toEqual({ port: 8000, address: '0.0.0.0', url: `http://${host}/` });
    const link = new URL(preview.url);
    expect(link.host).toBe(host);
    // The link's token becomes a cookie of that host, which then reaches the app, as a frame's requests do.
    const opened = await portRequest(server.port, host, `/index.html${link.search}`, {
      headers: { 'sec-fetch-site': 'cross-site' },
    });
    expect(opened.status).toBe(303);
    const cookie = String(opened.headers['set-cookie']).split(';')[0] as string;
    const page = await portRequest(server.port, host, '/index.html', {
      headers: { cookie, 'sec-fetch-site': 'cross-site' },
    });
    expect(page.body.toString()).toBe('<h1>Sales report</h1>');
  } finally {
    await server.stop();
    rmSync(clone, { recursive: true, force: true });
  }
}, 120_000);
