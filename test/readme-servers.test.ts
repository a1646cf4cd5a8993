/**
 * The server blocks of README.md and docs/server.md, run as written (the
 * marker convention is in test/readme.test.ts): each `sandcell serve` line starts a real server (on a
 * free port, given as SANDCELL_PORT), and the REST and conversation blocks run
 * in bash with curl and jq against one, with a fake OpenAI-compatible model.
 */
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDockerBackend } from '../src/backends/docker/index.js';
import { requiredBackends, unavailableReason } from './support/backends.js';
import { type FakeProvider, startFakeOpenAI } from './support/fake-providers.js';
import {
  commandsOf,
  onPort,
  readmeBlock,
  readmeBlocks,
  runShell,
  scratchClone,
  startServeLine,
} from './support/readme.js';

const _blocks = readmeBlocks();
let clone: string;
beforeAll(() => {
  clone = scratchClone();
});
afterAll(() => rmSync(clone, { recursive: true, force: true }));

const block = readmeBlock;

/** Starts the line, checks that the server answers and serves the web UI (or not), stops it. */
async function serveAndStop(line: string, env: Record<string, string> = {}) {
  const server = await startServeLine(line, { cwd: clone, env: { OPENAI_BASE_URL: '', ...env } });
  try {
    const page = await fetch(`http://localhost:${server.port}/`);
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('<html');
    return await (await fetch(`http://localhost:${server.port}/v1/config`)).json();
  } finally {
    await server.stop();
  }
}

describe('README.md server blocks run as written', () => {
  it('serve: each line starts a server (the Docker one where Docker runs)', async () => {
    const [plain, keyed, docker] = commandsOf(block('serve').code);
    await serveAndStop(plain!);
    const server = await startServeLine(keyed!, { cwd: clone });
    try {
      // Keys came from the line's own `openssl rand`: a request without one is refused.
      expect((await fetch(`http://localhost:${server.port}/v1/sessions`, { method: 'POST' })).status).toBe(401);
    } finally {
      await server.stop();
    }
    const dockerMissing = await unavailableReason(createDockerBackend());
    if (dockerMissing && !requiredBackends().includes('docker')) {
      process.stderr.write(`[skipped] README serve --backend docker: Docker is unavailable — ${dockerMissing}\n`);
      return;
    }
    await serveAndStop(docker!);
  }, 300_000);

  it('snapshots-serve: the idle, pause and retention flags start a server', async () => {
    await serveAndStop(block('snapshots-serve').code.trim());
  }, 120_000);

  it('snapshots-cli: list and a dry-run prune on a state directory', async () => {
    const stateDirectory = mkdtempSync(path.join(os.tmpdir(), 'sandcell-readme-snapshots-cli-'));
    try {
      const [list, prune] = commandsOf(block('snapshots-cli').code);
      const listed = await runShell(list!, { cwd: clone, env: { SANDCELL_STATE_DIR: stateDirectory } });
      expect(listed.code, listed.stderr).toBe(0);
      expect(listed.stdout).toContain('no snapshots');
      const pruned = await runShell(prune!, { cwd: clone, env: { SANDCELL_STATE_DIR: stateDirectory } });
      expect(pruned.code, pruned.stderr).toBe(0);
      expect(pruned.stdout).toContain('would delete 0 snapshot(s)');
    } finally {
      rmSync(stateDirectory, { recursive: true, force: true });
    }
  }, 120_000);

  it('web-ui: with a model named by flags, by a base URL, and without one', async () => {
    const [openai, ollama, bare] = commandsOf(block('web-ui').code);
    expect(await serveAndStop(openai!, { OPENAI_API_KEY: 'sk-readme' })).toMatchObject({
      model: { provider: 'openai', model: 'gpt-4.1' },
    });
    expect(await serveAndStop(ollama!)).toMatchObject({ model: { model: 'llama3.1' } });
    expect(await serveAndStop(bare!)).toMatchObject({ model: null });
  }, 300_000);

  describe('against one server with a fake model', () => {
    let provider: FakeProvider;
    let server: Awaited<ReturnType<typeof startServeLine>>;
    beforeAll(async () => {
      provider = await startFakeOpenAI([{ text: 'Traffic density drives accidents.' }]);
      server = await startServeLine(`npx sandcell serve --base-url ${provider.baseURL} --model readme-model`, {
        cwd: clone,
      });
    }, 120_000);
    afterAll(async () => {
      await server?.stop();
      await provider?.close();
    });

    it('rest-quick: a session, and 42 from its execution', async () => {
      const result = await runShell(onPort(block('rest-quick').code, server.port), { cwd: clone });
      expect(result.code, result.stderr).toBe(0);
      expect(result.stdout).toContain('"status":"ok"');
      expect(result.stdout).toContain('"text/plain":"42"');
    }, 180_000);

    it('rest: sessions, executions (streamed too), uploads, a chart downloaded with curl -f', async () => {
      const result = await runShell(onPort(block('rest').code, server.port), { cwd: clone });
      expect(result.code, result.stderr).toBe(0);
      expect(result.stdout).toContain('"text/plain":"42"');
      expect(result.stdout).toContain('"type":"stdout-delta"');
      expect(result.stdout).toContain('"path":"in/accidents.csv"');
      expect(readFileSync(path.join(clone, 'chart.png')).subarray(1, 4).toString()).toBe('PNG');
    }, 180_000);

    it('publish-outputs: a session that publishes, its file fetched by its link without a key', async () => {
      const result = await runShell(onPort(block('publish-outputs').code, server.port), { cwd: clone });
      expect(result.code, result.stderr).toBe(0);
      expect(result.stdout).toBe('hello');
    }, 180_000);

    it('upload-link: a file PUT by its upload link without a key, its size read by the code', async () => {
      const result = await runShell(onPort(block('upload-link').code, server.port), { cwd: clone });
      expect(result.code, result.stderr).toBe(0);
      const size = statSync(path.join(clone, 'examples', 'traffic_accidents.csv')).size;
      expect(result.stdout.trim()).toBe(JSON.stringify({ 'text/plain': String(size) }));
    }, 180_000);

    it('snapshots-rest: a pause that a request undoes, a checkpoint restored, a fork', async () => {
      const result = await runShell(onPort(block('snapshots-rest').code, server.port), { cwd: clone });
      expect(result.code, result.stderr).toBe(0);
      expect(result.stdout.trim().split('\n')).toEqual([
        '{"state":"paused","pauseReason":"requested"}',
        '{"text/plain":"42"}',
        '["x"]',
        '{"text/plain":"41"}',
      ]);
    }, 180_000);

    it('conversations: an upload, a streamed turn, a notebook cell using df, the history, the notebook', async () => {
      const result = await runShell(onPort(block('conversations').code, server.port), { cwd: clone });
      expect(result.code, result.stderr).toBe(0);
      expect(result.stdout).toContain('"rows":8756');
      expect(result.stdout).toContain('event: turn-end');
      expect(result.stdout).toContain('Traffic density drives accidents.');
      expect(result.stdout).not.toContain('NameError');
      expect(result.stdout).toContain('"status":"ok"');
      const notebook = JSON.parse(readFileSync(path.join(clone, 'analysis.ipynb'), 'utf8'));
      expect(JSON.stringify(notebook.cells)).toContain('df.describe()');
      expect(JSON.stringify(notebook.cells)).toContain('traffic_density');
    }, 180_000);
  });
});
