/**
 * sandcell as the kernel gateway of a stock Jupyter Server: Debian's
 * jupyter_server 1.23 with the classic Notebook UI (nbclassic 0.3) started
 * with `--gateway-url` pointing at /jupyter, and the notebook page driven in
 * Debian's chromium (playwright-core). Every kernel the notebook uses runs in
 * a sandcell sandbox; the screenshot goes to sandcell-output/ (untracked).
 * The server's key and the notebook server's gateway options are the README's.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { type Browser, chromium } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SandcellServer } from '../src/server/index.js';
import { readmeBlock } from './support/readme.js';
import { type LogCapture, startTestServer } from './support/server.js';

const CHROMIUM = process.env.SANDCELL_CHROMIUM ?? '/usr/bin/chromium';
const NBCLASSIC = '/usr/bin/jupyter-nbclassic';

/** The README's Jupyter block: the key `sandcell serve` is given, and the jupyter-nbclassic line's arguments. */
function gatewayBlock(): { key: string; notebookArguments: string[] } {
  const block = readmeBlock('jupyter-gateway').code;
  const key = block.match(/npx sandcell serve --api-key [\w-]+:(\S+)/)?.[1];
  const line = block.split('\n').find((candidate) => candidate.startsWith('jupyter-nbclassic '));
  if (!key || !line) throw new Error("README.md's Jupyter block lost its serve or jupyter-nbclassic line");
  return { key, notebookArguments: line.split(/\s+/).slice(1) };
}

const { key: KEY, notebookArguments } = gatewayBlock();
const NOTEBOOK_TOKEN = 'notebook-token-0123456789';
const SCREENSHOT_DIR = path.join(import.meta.dirname, '..', 'sandcell-output');

let server: SandcellServer & { logs: LogCapture };
let notebookServer: ChildProcess;
let notebookUrl: string;
let rootDir: string;
let browser: Browser;
let notebookLog = '';

async function waitForNotebookServer(url: string): Promise<void> {
  for (let attempt = 0; attempt < 240; attempt++) {
    if (notebookServer.exitCode !== null) throw new Error(`jupyter-nbclassic exited: ${notebookLog}`);
    const response = await fetch(`${url}/api/status?token=${NOTEBOOK_TOKEN}`).catch(() => undefined);
    if (response?.ok) return;
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  throw new Error(`jupyter-nbclassic did not start: ${notebookLog}`);
}

beforeAll(async () => {
  for (const needed of [CHROMIUM, NBCLASSIC]) {
    if (!existsSync(needed))
      throw new Error(`${needed} is missing: run \`npm run setup\` (Debian packages chromium, python3-nbclassic).`);
  }
  server = await startTestServer({ apiKeys: [`gateway:${KEY}`] });
  rootDir = mkdtempSync(path.join(tmpdir(), 'sandcell-notebook-'));
  writeFileSync(
    path.join(rootDir, 'sandboxed.ipynb'),
    JSON.stringify({
      cells: [{ cell_type: 'code', execution_count: null, metadata: {}, outputs: [], source: [] }],
      metadata: { kernelspec: { name: 'python3', display_name: 'Python 3 (sandcell)', language: 'python' } },
      nbformat: 4,
      nbformat_minor: 5,
    }),
  );
  const port = 20_000 + Math.floor(Math.random() * 20_000);
  notebookUrl = `http://127.0.0.1:${port}`;
  notebookServer = spawn(
    '/usr/bin/python3',
    [
      NBCLASSIC,
      '--no-browser',
      '--allow-root',
      `--port=${port}`,
      '--port-retries=0',
      '--ip=127.0.0.1',
      `--ServerApp.token=${NOTEBOOK_TOKEN}`,
      `--ServerApp.root_dir=${rootDir}`,
      // The README's own line, pointed at this test's server.
      ...notebookArguments.map((argument) => argument.replace('http://127.0.0.1:8080', server.url)),
    ],
    {
      cwd: rootDir,
      env: { ...process.env, JUPYTER_RUNTIME_DIR: path.join(rootDir, '.runtime') },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  notebookServer.stdout?.on('data', (chunk) => {
    notebookLog += chunk;
  });
  notebookServer.stderr?.on('data', (chunk) => {
    notebookLog += chunk;
  });
  await waitForNotebookServer(notebookUrl);
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
  });
}, 120_000);

afterAll(async () => {
  await browser?.close();
  notebookServer?.kill('SIGTERM');
  if (notebookServer && notebookServer.exitCode === null) {
    await new Promise((resolve) => notebookServer.once('exit', resolve));
  }
  await server?.close();
  if (rootDir) rmSync(rootDir, { recursive: true, force: true });
});

describe('jupyter_server with --gateway-url and the classic Notebook', () => {
  it('lists sandcell kernelspecs through the gateway', async () => {
    const response = await fetch(`${notebookUrl}/api/kernelspecs?token=${NOTEBOOK_TOKEN}`);
    const specs = (await response.json()) as { default: string; kernelspecs: Record<string, unknown> };
    expect(specs.default).toBe('python3');
    expect(Object.keys(specs.kernelspecs)).toContain('bash');
  });

  it('opens a notebook, runs a cell in a sandcell kernel and shows its output', async () => {
    const page = await browser.newPage({ viewport: { width: 1100, height: 600 } });
    try {
      await page.goto(`${notebookUrl}/notebooks/sandboxed.ipynb?token=${NOTEBOOK_TOKEN}`);
      await page.locator('#kernel_indicator_icon.kernel_idle_icon').waitFor({ timeout: 60_000 });
      const cell = page.locator('.cell.code_cell').first();
      await cell.locator('.CodeMirror').click();
      await page.keyboard.type('import getpass, os\nprint(getpass.getuser(), 6 * 7, os.getcwd())');
      await page.keyboard.press('Shift+Enter');
      const output = cell.locator('.output_subarea.output_stdout');
      await output.waitFor({ timeout: 60_000 });
      // The sandbox's account and working directory: the cell ran in sandcell, not on the notebook's host.
      expect((await output.textContent())?.trim()).toBe('sandbox 42 /mnt/data');
      mkdirSync(SCREENSHOT_DIR, { recursive: true });
      await page.screenshot({ path: path.join(SCREENSHOT_DIR, 'jupyter-notebook-gateway.png') });
      const kernels = (await (
        await fetch(`${server.url}/jupyter/api/kernels`, { headers: { authorization: `token ${KEY}` } })
      ).json()) as unknown[];
      expect(kernels).toHaveLength(1);
    } finally {
      await page.close();
    }
  });
});
