/**
 * The browser for web UI suites: Debian's chromium driven by playwright-core,
 * tabs that record what must never happen (script errors, dialogs, CSP
 * violations, pages opened), and screenshots written to test-output/ (not
 * tracked: a test run leaves `git status` clean).
 */
import { existsSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { type Browser, type BrowserContext, chromium, type Locator, type Page } from 'playwright-core';

export const ROOT = path.resolve(import.meta.dirname, '..', '..');
export const WEB_ROOT = path.join(ROOT, 'dist', 'web');
export const SCREENSHOT_DIR = path.join(ROOT, 'test-output', 'screenshots');
const CHROMIUM = process.env.SANDCELL_CHROMIUM ?? '/usr/bin/chromium';

export const PHONE = { width: 390, height: 844 };
export const DESKTOP = { width: 1280, height: 900 };

export async function launchBrowser(): Promise<Browser> {
  // Both are required: a missing one fails the run instead of skipping it.
  if (!existsSync(CHROMIUM)) {
    throw new Error(`chromium is missing at ${CHROMIUM}: run \`npm run setup\` (apt-get install chromium).`);
  }
  if (!existsSync(path.join(WEB_ROOT, 'index.html'))) {
    throw new Error('The web UI is not built (dist/web/index.html): run `npm run build`.');
  }
  return chromium.launch({
    executablePath: CHROMIUM,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
  });
}

export interface Tab {
  context: BrowserContext;
  page: Page;
  /** Script errors and CSP violations in the page. */
  problems: string[];
  dialogs: string[];
  /** Pages the app opened (a blob: URL in a new tab would be one). */
  popups: string[];
}

export async function openTab(
  browser: Browser,
  url: string,
  options: { viewport?: { width: number; height: number }; timeoutMs: number },
): Promise<Tab> {
  const context = await browser.newContext({
    viewport: options.viewport ?? DESKTOP,
    acceptDownloads: true,
    // A phone viewport is a phone: touch, and the device pixel ratio of one.
    ...(options.viewport && options.viewport.width < 500
      ? { isMobile: true, hasTouch: true, deviceScaleFactor: 2 }
      : {}),
  });
  const page = await context.newPage();
  page.setDefaultTimeout(options.timeoutMs);
  const tab: Tab = { context, page, problems: [], dialogs: [], popups: [] };
  page.on('pageerror', (error) => tab.problems.push(`page error: ${error.message}`));
  page.on('console', (message) => {
    if (/Content Security Policy|Refused to/i.test(message.text())) tab.problems.push(`CSP: ${message.text()}`);
  });
  page.on('dialog', async (dialog) => {
    tab.dialogs.push(dialog.message());
    await dialog.dismiss();
  });
  context.on('page', (opened) => {
    if (opened !== page) tab.popups.push(opened.url());
  });
  await page.goto(url);
  return tab;
}

/** Saves a screenshot of the page (or one element) under test-output/screenshots, for a person to look at. */
export async function screenshot(page: Page, name: string): Promise<string> {
  await mkdir(SCREENSHOT_DIR, { recursive: true });
  const file = path.join(SCREENSHOT_DIR, `${name}.png`);
  await page.screenshot({ path: file });
  return file;
}

/** Whether the element is wholly within the part of the conversation's transcript that is on screen. */
export async function inTranscriptView(page: Page, locator: Locator): Promise<boolean> {
  const [element, transcript] = await Promise.all([locator.boundingBox(), page.locator('.transcript').boundingBox()]);
  if (!element || !transcript) return false;
  return element.y >= transcript.y - 1 && element.y + element.height <= transcript.y + transcript.height + 1;
}

/** Signs in through the app's key dialog, once it has gone. */
export async function signIn(page: Page, key: string): Promise<void> {
  const dialog = page.getByRole('dialog', { name: 'Sign in to sandcell' });
  await dialog.getByLabel('API key').fill(key);
  await dialog.getByRole('button', { name: 'Sign in' }).click();
  await dialog.waitFor({ state: 'detached' });
}
