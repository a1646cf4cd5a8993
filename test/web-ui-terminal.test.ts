/**
 * The terminal in the web UI, in Debian's chromium against a real server with a key and a real
 * bubblewrap session: the Terminal button opens a shell of the conversation's session beside the
 * chat, typing runs in it (it sees the cell's files), the pane's size reaches the shell, a reload
 * reattaches to the same shell with its recent output, and the page's Content-Security-Policy
 * refused nothing on the way.
 */
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer } from './support/server.js';
import { launchBrowser, openTab, screenshot, signIn, type Tab, WEB_ROOT } from './support/web-browser.js';

const UI_TIMEOUT = 90_000;
const KEY = 'web-ui-terminal-key-77a3';

let browser: Browser;
let server: Awaited<ReturnType<typeof startTestServer>>;
const tabs: Tab[] = [];

beforeAll(async () => {
  browser = await launchBrowser();
  server = await startTestServer({ apiKeys: [KEY], logLevel: 'warn', webRoot: WEB_ROOT });
}, 60_000);
afterAll(async () => {
  for (const tab of tabs) await tab.context.close();
  await browser?.close();
  await server?.close();
});

describe('the terminal in the web UI', { timeout: 180_000 }, () => {
  it('opens a shell of the session beside the notebook, sized to its pane, and reattaches after a reload', async () => {
    const tab = await openTab(browser, `http://localhost:${server.port}`, { timeoutMs: UI_TIMEOUT });
    tabs.push(tab);
    const { page } = tab;
    const refused: string[] = [];
    page.on('console', (message) => {
      if (/Content.Security.Policy|Refused to/i.test(message.text())) refused.push(message.text());
    });
    await signIn(page, KEY);
    await page.getByRole('tab', { name: 'Notebook' }).click();
    const editor = page.getByLabel('Python cell (Ctrl+Enter runs it)');
    await editor.fill("open('/mnt/data/from-cell.txt', 'w').write('written by the cell')\nprint('saved')");
    await editor.press('Control+Enter');
    await page.locator('.turn-cell .stdout', { hasText: 'saved' }).waitFor();

    await page.getByRole('button', { name: 'Terminal' }).click();
    const panel = page.getByRole('complementary', { name: 'Terminal' });
    await panel.waitFor();
    const screen = panel.locator('.xterm-rows');
    await screen.waitFor();
    await panel.locator('.xterm').click();
    await page.keyboard.type('cat /mnt/data/from-cell.txt; echo; echo "sum=$((20+22))"; stty size\n');
    await screen.getByText('sum=42').waitFor({ timeout: 15_000 });
    await expect(screen.textContent()).resolves.toContain('written by the cell');
    // The size the shell sees is the pane's, as xterm measured it: as many rows as it shows.
    const lines = await panel.locator('.xterm-rows > div').allTextContents();
    const sum = lines.findIndex((line) => line.includes('sum=42'));
    const [rows, cols] = (lines[sum + 1] ?? '').trim().split(' ').map(Number);
    expect(rows).toBe(lines.length);
    expect(cols).toBeGreaterThan(20);
    await page.keyboard.type('export MARK=kept-$((6*7)); echo "$MARK"\n');
    await screen.getByText('kept-42').first().waitFor();
    await screenshot(page, 'web-ui-terminal');

    // A reload reattaches to the same shell: its recent output is there, and its variables.
    await page.reload();
    await page.getByRole('button', { name: 'Terminal' }).click();
    const again = page.getByRole('complementary', { name: 'Terminal' }).locator('.xterm-rows');
    await again.getByText('kept-42').first().waitFor({ timeout: 15_000 });
    await page.getByRole('complementary', { name: 'Terminal' }).locator('.xterm').click();
    await page.keyboard.type('echo "again $MARK"\n');
    await again.getByText('again kept-42').waitFor({ timeout: 15_000 });
    expect(refused).toEqual([]);
  });
});
