/**
 * The apps a session serves, in the web UI, in Debian's chromium against a real server with a key
 * and real bubblewrap sessions: a notebook cell starts a web server, the conversation shows
 * "App on port 8000", Preview shows the app in a frame beside the chat (through a preview link, on
 * the app's own host name), and the app in the frame can reach nothing of the page: not its
 * document, not the key in its storage, not the API with the user's key.
 */
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { portRequest } from './support/port-request.js';
import { startTestServer } from './support/server.js';
import { launchBrowser, openTab, screenshot, signIn, type Tab, WEB_ROOT } from './support/web-browser.js';

const UI_TIMEOUT = 90_000;
const KEY = 'web-ui-ports-key-5d1c';

/** The app: a page that says what it could reach of the page that frames it, and of the API. */
const APP_PAGE = (
  api: string,
) => `<!doctype html><title>Sales dashboard</title><h1>Sales dashboard</h1><pre id="probe">probing</pre>
<script>
const seen = [];
try { seen.push('parent: ' + window.parent.document.title); } catch (error) { seen.push('parent: ' + error.name); }
for (const name of ['sessionStorage', 'localStorage']) {
  try { seen.push(name + ': ' + (window[name].getItem('sandcell.apiKey') ?? 'no key')); } catch (error) { seen.push(name + ': ' + error.name); }
}
fetch(${JSON.stringify(api)} + '/v1/sessions', { credentials: 'include' })
  .then((answer) => seen.push('api: ' + answer.status), (error) => seen.push('api: ' + error.name))
  .finally(() => { document.getElementById('probe').textContent = seen.join('\\n'); });
</script>`;

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

describe('apps on ports in the web UI', { timeout: 180_000 }, () => {
  it('a cell’s server shows as an app, previews beside the chat, and can reach nothing of the page', async () => {
    // The page on localhost, as `sandcell serve` says to open it; the app on PORT-ID.localhost.
    const ui = `http://localhost:${server.port}`;
    const tab = await openTab(browser, ui, { timeoutMs: UI_TIMEOUT });
    tabs.push(tab);
    const { page } = tab;
    await signIn(page, KEY);
    await page.getByRole('tab', { name: 'Notebook' }).click();
    const editor = page.getByLabel('Python cell (Ctrl+Enter runs it)');
    await editor.fill(
      [
        'import pathlib, subprocess',
        "site = pathlib.Path('/mnt/data/site'); site.mkdir(exist_ok=True)",
        `(site / 'index.html').write_text(${JSON.stringify(APP_PAGE(ui))})`,
        "server = subprocess.Popen(['python3', '-m', 'http.server', '8000', '--directory', str(site)])",
        "print('serving')",
      ].join('\n'),
    );
    await editor.press('Control+Enter');
    await page.locator('.turn-cell .stdout', { hasText: 'serving' }).waitFor();

    const chip = page.locator('.app-chip', { hasText: 'App on port 8000' });
    await chip.waitFor();
    await chip.getByRole('button', { name: 'Preview' }).click();
    const panel = page.getByRole('complementary', { name: 'App on port 8000' });
    await panel.waitFor();
    const frame = page.frameLocator('iframe.preview-frame');
    await frame.getByRole('heading', { name: 'Sales dashboard' }).waitFor();
    const frameUrl = new URL((await page.locator('iframe.preview-frame').getAttribute('src')) as string);
    expect(frameUrl.hostname).toMatch(/^8000-[a-z0-9-]+\.localhost$/);
    // The app ran its probe: the page's document and the key are out of its reach, and so is the API.
    const probe = frame.locator('#probe');
    await expect.poll(() => probe.textContent(), { timeout: UI_TIMEOUT }).toContain('api:');
    const lines = ((await probe.textContent()) as string).split('\n');
    expect(lines[0]).toBe('parent: SecurityError');
    // Its own storage holds no key (or is denied it outright, a frame of another site).
    expect(lines[1]).toMatch(/^sessionStorage: (no key|SecurityError)$/);
    expect(lines[2]).toMatch(/^localStorage: (no key|SecurityError)$/);
    expect(lines[3]).toMatch(/^api: (401|403|TypeError)$/);
    // The page still holds its key, and the app's URL without the link's token is refused to anyone else.
    expect(
      await page.evaluate(() =>
        (globalThis as unknown as { sessionStorage: Storage }).sessionStorage.getItem('sandcell.apiKey'),
      ),
    ).toBe(KEY);
    expect((await portRequest(server.port, frameUrl.host, '/')).status).toBe(404);
    await screenshot(page, 'app-preview');
    // The chip's "Open in a tab": the app in a tab of its own, with no way back to the page.
    const [opened] = await Promise.all([
      tab.context.waitForEvent('page'),
      chip.getByRole('button', { name: 'Open in a tab' }).click(),
    ]);
    await opened.getByRole('heading', { name: 'Sales dashboard' }).waitFor();
    expect(new URL(opened.url()).host).toBe(frameUrl.host);
    expect(await opened.evaluate(() => (globalThis as unknown as { opener: unknown }).opener)).toBeNull();
    await opened.close();
  });
});

interface Storage {
  getItem(key: string): string | null;
}
