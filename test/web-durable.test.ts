/**
 * The web UI after a restart: Debian's chromium (playwright-core) on the built
 * app, a real server with a state directory and real bubblewrap sessions. A
 * conversation whose session the stopping server paused goes on where it was:
 * its next cell sees its variables, and the turn says what did not come back.
 * One whose session is gone (here: its paused session deleted) opens
 * read-only, says why, shows its history, and "Continue in a new session"
 * opens a new conversation that says what it continues and runs code again.
 * Needs `npm run build` and chromium.
 */
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { type Browser, chromium } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Conversation, Turn } from '../src/protocol/index.js';
import { client, startTestServer } from './support/server.js';
import { screenshot } from './support/web-browser.js';

const ROOT = path.resolve(import.meta.dirname, '..');
const CHROMIUM = process.env.SANDCELL_CHROMIUM ?? '/usr/bin/chromium';
const WEB_ROOT = path.join(ROOT, 'dist', 'web');
const UI_TIMEOUT = 90_000;

let browser: Browser;
let stateDirectory: string;

beforeAll(async () => {
  if (!existsSync(CHROMIUM)) throw new Error(`chromium is missing at ${CHROMIUM}: run \`npm run setup\`.`);
  if (!existsSync(path.join(WEB_ROOT, 'index.html'))) throw new Error('The web UI is not built: run `npm run build`.');
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
  });
  stateDirectory = await mkdtemp(path.join(os.tmpdir(), 'sandcell-web-state-'));
}, 60_000);
afterAll(async () => {
  await browser?.close();
  await rm(stateDirectory, { recursive: true, force: true });
});

describe('web UI after a restart', { timeout: 240_000 }, () => {
  it('resumes a paused conversation; opens one whose session is gone read-only and continues it', async () => {
    const options = { logLevel: 'warn', preloadModules: [], webRoot: WEB_ROOT, stateDirectory };
    const before = await startTestServer(options);
    let id: string;
    try {
      const api = client(before);
      id = (await api.json<Conversation>('/v1/conversations', { method: 'POST', json: {} })).id;
      const turn = await api.json<Turn>(`/v1/conversations/${id}/cells`, {
        method: 'POST',
        json: { code: "greeting = 'hi'\ngen = (i for i in range(3))\nprint('before the restart')" },
      });
      expect(turn.status).toBe('done');
    } finally {
      await before.close();
    }

    // The stopping server paused the session: the conversation goes on where it was.
    const resumed = await startTestServer(options);
    const first = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    try {
      const problems: string[] = [];
      const page = await first.newPage();
      page.setDefaultTimeout(UI_TIMEOUT);
      page.on('pageerror', (error) => problems.push(error.message));
      await page.goto(`${resumed.url}/#/c/${id}`);
      await page.locator('.turn-cell .stdout').first().waitFor();
      expect(await page.locator('.banner-warning').count()).toBe(0);
      const editor = page.getByLabel('Python cell (Ctrl+Enter runs it)');
      expect(await editor.isDisabled()).toBe(false);
      await editor.fill('print(greeting)');
      await editor.press('Control+Enter');
      await expect.poll(() => page.locator('.turn-cell .stdout').nth(1).textContent()).toBe('hi\n');
      const note = page.locator('.turn-cell .resumed-note');
      expect(await note.textContent()).toContain('1 variable could not be restored: gen (generator).');
      await screenshot(page, 'restart-resumed');
      expect(problems).toEqual([]);
    } finally {
      await first.close();
      await resumed.close();
    }
    // Its paused session deleted (the records are what a pause leaves), the session is gone.
    await rm(path.join(stateDirectory, 'store', 'paused'), { recursive: true, force: true });

    const server = await startTestServer(options);
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    try {
      const problems: string[] = [];
      const page = await context.newPage();
      page.setDefaultTimeout(UI_TIMEOUT);
      page.on('pageerror', (error) => problems.push(error.message));
      await page.goto(`${server.url}/#/c/${id}`);
      const banner = page.locator('.banner-warning');
      await banner.waitFor();
      expect(await banner.textContent()).toContain('ended when the server restarted');
      expect(await page.locator('.turn-cell .stdout').first().textContent()).toBe('before the restart\n');
      const editor = page.getByLabel('Python cell (Ctrl+Enter runs it)');
      expect(await editor.isDisabled()).toBe(true);
      await screenshot(page, 'restart-read-only');

      await banner.getByRole('button', { name: 'Continue in a new session' }).click();
      const note = page.locator('.banner-info', { hasText: 'Continued from' });
      await note.waitFor();
      expect(await note.textContent()).toContain('nothing from it was re-run');
      await banner.waitFor({ state: 'detached' });
      expect(await editor.isDisabled()).toBe(false);
      // The new session starts empty: the old variable is not there, and nothing ran on its own.
      expect(await page.locator('.turn-cell').count()).toBe(0);
      await editor.fill("print('greeting' in globals())");
      await editor.press('Control+Enter');
      await expect.poll(() => page.locator('.turn-cell .stdout').first().textContent()).toBe('False\n');
      await screenshot(page, 'restart-continued');
      expect(problems).toEqual([]);
    } finally {
      await context.close();
      await server.close();
    }
  });
});
