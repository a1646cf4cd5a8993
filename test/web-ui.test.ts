/**
 * One file (over 500 lines): its three suites share one chromium, launched once; a split would launch another.
 *
 * The web UI end to end: Debian's chromium, driven by playwright-core, uses
 * the built app (dist/web) as served by a real sandcell server on 127.0.0.1
 * under its real CSP. Code runs in real bubblewrap sessions; the model is the
 * scripted model (sandcell/testing).
 * Needs `npm run build` (npm test runs it) and chromium (`npm run setup`).
 */
import { existsSync } from 'node:fs';
import { mkdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import {
  type Browser,
  type BrowserContext,
  chromium,
  type Download,
  type Locator,
  type Page,
  type Route,
} from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ScriptedChatModel } from '../src/agents/scripted-chat-model.js';
import type { Conversation } from '../src/protocol/index.js';
import { client, startTestServer } from './support/server.js';
import { inTranscriptView } from './support/web-browser.js';

const ROOT = path.resolve(import.meta.dirname, '..');
const CHROMIUM = process.env.SANDCELL_CHROMIUM ?? '/usr/bin/chromium';
const WEB_ROOT = path.join(ROOT, 'dist', 'web');
const TRAFFIC_CSV = path.join(ROOT, 'examples', 'traffic-accidents', 'traffic_accidents.csv');
// Screenshots go to the untracked test-output/; SANDCELL_UPDATE_SCREENSHOT=1 refreshes the README's too.
const SCREENSHOT_DIR = path.join(ROOT, 'test-output', 'screenshots');
const README_SCREENSHOT = path.join(ROOT, 'docs', 'screenshot.png');
const API_KEY = 'web-ui-test-key-7f3a';
// Generous: other work on the machine can slow sandboxes down; a passing run takes a few seconds per test.
const UI_TIMEOUT = 90_000;
const TEST_TIMEOUT = 180_000;

type Server = Awaited<ReturnType<typeof startTestServer>>;

// The page's globals, typed just enough for the functions evaluated in it (this tsconfig has no DOM library).
interface PageStorage {
  getItem(key: string): string | null;
}
interface PageGlobals {
  __xss?: unknown;
  document: { activeElement: { textContent: string | null } | null };
  sessionStorage: PageStorage;
  localStorage: PageStorage;
}
interface PageDropScope {
  DataTransfer: new () => { items: { add(file: unknown): void } };
  File: new (parts: string[], name: string, options: { type: string }) => unknown;
}
interface PageImage {
  complete: boolean;
  naturalWidth: number;
  naturalHeight: number;
}

let browser: Browser;

beforeAll(async () => {
  // Both are required: a missing one fails the run instead of skipping it.
  if (!existsSync(CHROMIUM)) {
    throw new Error(`chromium is missing at ${CHROMIUM}: run \`npm run setup\` (apt-get install chromium).`);
  }
  if (!existsSync(path.join(WEB_ROOT, 'index.html'))) {
    throw new Error('The web UI is not built (dist/web/index.html): run `npm run build`.');
  }
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
  });
}, 60_000);

afterAll(async () => {
  await browser?.close();
});

const run = (code: string) => ({ name: 'execute_python_code', arguments: { code } });

/** A page in a fresh browser context that records what must never happen: script errors, dialogs, CSP violations. */
interface Tab {
  context: BrowserContext;
  page: Page;
  problems: string[];
  dialogs: string[];
}

const openTabs: Tab[] = [];

async function openTab(url: string, viewport = { width: 1280, height: 900 }): Promise<Tab> {
  const context = await browser.newContext({ viewport, acceptDownloads: true });
  const page = await context.newPage();
  page.setDefaultTimeout(UI_TIMEOUT);
  const tab: Tab = { context, page, problems: [], dialogs: [] };
  page.on('pageerror', (error) => tab.problems.push(`page error: ${error.message}`));
  page.on('console', (message) => {
    const text = message.text();
    // The app must live within its CSP: any violation is a defect. (A 401 the app handles is expected.)
    if (/Content Security Policy|Refused to/i.test(text)) tab.problems.push(`CSP: ${text}`);
  });
  page.on('dialog', async (dialog) => {
    tab.dialogs.push(dialog.message());
    await dialog.dismiss();
  });
  await page.goto(url);
  openTabs.push(tab);
  return tab;
}

afterEach(async () => {
  const tabs = openTabs.splice(0);
  for (const tab of tabs) await tab.context.close();
  for (const tab of tabs) {
    expect(tab.problems, 'no script errors or CSP violations in the page').toEqual([]);
    expect(tab.dialogs, 'no dialogs').toEqual([]);
  }
});

/** Fills the chat box and sends with Enter, once the box offers Send (not Stop), as a person would wait for. */
async function ask(page: Page, question: string): Promise<void> {
  const box = page.getByLabel('Your question');
  await box.fill(question);
  // XXWAIT
  await box.press('Enter');
}

/** Types code into the notebook's cell (in `language`, picked in the cell's menu) and runs it with Ctrl+Enter; resolves when the new cell has finished. */
async function runCell(page: Page, code: string, language = 'Python'): Promise<Locator> {
  const cells = page.locator('.turn-cell');
  const before = await cells.count();
  await page.getByLabel('Cell language').selectOption({ label: language });
  const editor = page.getByLabel(`${language} cell (Ctrl+Enter runs it)`);
  await editor.fill(code);
  await editor.press('Control+Enter');
  const cell = cells.nth(before);
  await expect.poll(() => cell.locator('.code-step').getAttribute('aria-busy'), { timeout: UI_TIMEOUT }).toBe('false');
  await cell.locator('.status-badge:not(:has(.spinner))').waitFor();
  return cell;
}

async function textOf(page: Page, selector: string): Promise<string> {
  return (await page.locator(selector).allInnerTexts()).join('\n');
}

async function downloadText(download: Download): Promise<string> {
  const file = await download.path();
  return readFile(file, 'utf8');
}

/** An exported .ipynb, typed just enough for what the tests read. */
interface ExportedNotebook {
  nbformat: number;
  cells: {
    cell_type: string;
    source: string | string[];
    outputs?: { output_type: string; data?: Record<string, unknown>; text?: string | string[] }[];
  }[];
}

async function exportNotebook(page: Page): Promise<{ download: Download; notebook: ExportedNotebook }> {
  const [download] = await Promise.all([
    page.waitForEvent('download'),
    page.getByRole('button', { name: 'Export .ipynb' }).click(),
  ]);
  return { download, notebook: JSON.parse(await downloadText(download)) as ExportedNotebook };
}

const cellSource = (cell: { source: string | string[] }) =>
  Array.isArray(cell.source) ? cell.source.join('') : cell.source;

describe('web UI with a scripted model', { timeout: TEST_TIMEOUT }, () => {
  let server: Server;
  let model: ScriptedChatModel;
  let analysis: Tab | undefined;

  beforeAll(async () => {
    model = new ScriptedChatModel();
    server = await startTestServer({
      model,
      logLevel: 'warn',
      preloadModules: ['pandas', 'matplotlib'],
      webRoot: WEB_ROOT,
    });
  }, TEST_TIMEOUT);

  /** A test that failed halfway leaves its scripted answers queued: say so instead of failing strangely later. */
  const expectNoLeftoverScript = () =>
    expect(model.remaining, 'scripted responses left over from an earlier test that failed').toBe(0);

  afterAll(async () => {
    await analysis?.context.close();
    await server?.close();
  });

  it('upload, question, highlighted code, DataFrame table, chart image and the streamed answer (screenshot)', async () => {
    // This tab stays open for the export test that follows.
    // Tall enough for the README's screenshot to hold the question, the code, its outputs and the answer.
    const context = await browser.newContext({ viewport: { width: 1280, height: 1000 }, acceptDownloads: true });
    const page = await context.newPage();
    page.setDefaultTimeout(UI_TIMEOUT);
    const problems: string[] = [];
    page.on('pageerror', (error) => problems.push(error.message));
    page.on('console', (message) => {
      if (/Content Security Policy|Refused to/i.test(message.text())) problems.push(message.text());
    });
    analysis = { context, page, problems, dialogs: [] };
    await page.goto(server.url);

    // The page is served under the strict CSP.
    const response = await page.request.get(server.url);
    expect(response.headers()['content-security-policy']).toContain("script-src 'self'");
    // …and the built page has nothing inline for it to block.
    const html = await response.text();
    expect(html).toMatch(/<script type="module" crossorigin src="\/assets\/[^"]+\.js"><\/script>/);
    expect(html).not.toMatch(/<script(?![^>]*\ssrc=)[^>]*>/);
    expect(html).not.toMatch(/<style|\sstyle=|\son[a-z]+=/i);

    await page.getByTestId('upload-input').first().setInputFiles(TRAFFIC_CSV);
    const preview = page.locator('.file-preview');
    await expect.poll(() => preview.locator('.file-name').textContent()).toBe('traffic_accidents.csv');
    expect(await preview.locator('.file-facts').textContent()).toMatch(/CSV · .* · 8,756 rows × 10 columns/);
    expect(await preview.locator('.column-name').allTextContents()).toContain('traffic_fine_amount');
    expect(await preview.locator('thead th').allTextContents()).toContain('accidents');
    expect(await preview.locator('tbody tr').count()).toBeGreaterThan(0);
    expect(await preview.locator('tbody tr').first().locator('td').first().textContent()).toBe('20');

    const code = [
      'import pandas as pd',
      'import matplotlib.pyplot as plt',
      "df = pd.read_csv('/mnt/data/traffic_accidents.csv')",
      'print(df.shape)',
      "corr = df.corr()['accidents'].drop('accidents').sort_values()",
      "corr.plot.barh(figsize=(6.4, 2.6), color='#4f46e5', title='Correlation with accidents')",
      'plt.tight_layout(); plt.show()',
      "corr.abs().sort_values(ascending=False).head(3).round(3).to_frame('|r|')",
    ].join('\n');
    const answer =
      'Higher fines go with **markedly fewer** accidents (r = -0.745); every other factor is weak (|r| < 0.15).';
    model.enqueue(
      { text: 'Let me look at how each factor relates to accidents.', toolCalls: [run(code)] },
      { text: answer },
    );
    await ask(page, 'What drives the number of accidents?');

    const finalAnswer = page.locator('.final-answer');
    await finalAnswer.waitFor().catch(async (error: unknown) => {
      // CI has seen this wait run out with the model never asked: say what the page and the server showed.
      const shown = await page
        .locator('body')
        .textContent({ timeout: 5_000 })
        .catch(() => '(unreadable)');
      const logged = server.logs.lines.map((line) => JSON.stringify(line)).join('\n');
      throw new Error(
        `no final answer; scripted responses still queued: ${model.remaining}\n--- the page:\n${(shown ?? '').slice(0, 4000)}\n--- the server's log:\n${logged.slice(-8000)}`,
        { cause: error },
      );
    });
    expect(await finalAnswer.textContent()).toContain('Higher fines go with markedly fewer accidents');
    expect(await finalAnswer.locator('strong').textContent()).toBe('markedly fewer');
    expect(await page.locator('.question-bubble').textContent()).toBe('What drives the number of accidents?');

    const step = page.locator('.turn-message .code-step');
    expect(await step.getAttribute('class')).toContain('status-ok');
    // Highlighted: keywords and strings are spans of their own.
    expect(await step.locator('.code-block .hljs-keyword').allTextContents()).toContain('import');
    expect(await step.locator('.code-block .hljs-string').first().textContent()).toMatch(/traffic_accidents\.csv/);
    expect(await step.locator('.stdout').textContent()).toBe('(8756, 10)\n');

    // The DataFrame as a real table.
    const table = step.locator('.html-output table');
    expect(await table.locator('thead th').allTextContents()).toContain('|r|');
    expect(await table.locator('tbody th').first().textContent()).toBe('traffic_fine_amount');
    expect(await table.locator('tbody td').first().textContent()).toBe('0.745');

    // The chart: a blob: image that actually decoded.
    const image = step.locator('img.output-image');
    await image.waitFor();
    expect(await image.getAttribute('alt')).toBe('Chart 1 from step 1');
    expect(await image.getAttribute('src')).toMatch(/^blob:/);
    await expect
      .poll(() =>
        image.evaluate(
          (element) => (element as unknown as PageImage).complete && (element as unknown as PageImage).naturalWidth,
        ),
      )
      .toBeGreaterThan(100);
    expect(await image.evaluate((element) => (element as unknown as PageImage).naturalHeight)).toBeGreaterThan(100);
    // The view followed the answer down, past the chart that loaded after it.
    await expect.poll(() => inTranscriptView(page, finalAnswer)).toBe(true);

    // The conversation is in the sidebar and the header under the question's title.
    await expect
      .poll(() => page.locator('.conversation-heading').textContent())
      .toBe('What drives the number of accidents?');
    expect(await page.locator('.conversation-title').allTextContents()).toContain(
      'What drives the number of accidents?',
    );

    await mkdir(SCREENSHOT_DIR, { recursive: true });
    // The whole analysis, from the question down to the answer.
    await page.locator('.turn-message').evaluate((element) => element.scrollIntoView({ block: 'start' }));
    await page.screenshot({ path: path.join(SCREENSHOT_DIR, 'analysis.png') });
    if (process.env.SANDCELL_UPDATE_SCREENSHOT === '1') await page.screenshot({ path: README_SCREENSHOT });
    expect(problems).toEqual([]);
  });

  it('exports the analysis as a notebook with the question, code, outputs and the chart', async () => {
    if (!analysis) throw new Error('the analysis test did not run');
    const { page } = analysis;
    const { download, notebook } = await exportNotebook(page);
    expect(download.suggestedFilename()).toMatch(/\.ipynb$/);
    expect(notebook.nbformat).toBe(4);
    const source = cellSource;
    const markdown = notebook.cells.filter((cell) => cell.cell_type === 'markdown').map(source);
    expect(markdown.some((text) => text.includes('What drives the number of accidents?'))).toBe(true);
    expect(markdown.some((text) => text.includes('Higher fines go with'))).toBe(true);
    const codeCell = notebook.cells.find((cell) => cell.cell_type === 'code' && source(cell).includes('pd.read_csv'));
    expect(codeCell).toBeDefined();
    const outputs = codeCell?.outputs ?? [];
    const stream = outputs.find((output) => output.output_type === 'stream');
    expect([stream?.text].flat().join('')).toContain('(8756, 10)');
    const picture = outputs.find((output) => output.output_type === 'display_data' && output.data?.['image/png']);
    const png = Buffer.from(String(picture?.data?.['image/png']).replace(/\s/g, ''), 'base64');
    expect(png.subarray(0, 8).toString('hex')).toBe('89504e470d0a1a0a');
    expect(outputs.some((output) => output.output_type === 'execute_result' && output.data?.['text/html'])).toBe(true);
  });

  it('approval mode: Run (keyboard), Skip, and Edit then run the edited code', async () => {
    expectNoLeftoverScript();
    const { page } = await openTab(server.url);
    const toggle = page.getByRole('switch', { name: 'Approve code' });
    expect(await toggle.isChecked()).toBe(false); // the server's default is auto
    await toggle.check();
    model.enqueue(
      { toolCalls: [run('print(6 * 7)')] },
      { toolCalls: [run("print('this must not run')")] },
      { toolCalls: [run("print('original')")] },
      { text: 'All three pieces handled.' },
    );
    await ask(page, 'Run three things, asking me first.');
    const steps = page.locator('.turn-message .code-step');

    // 1: Run, by keyboard — the Run button has the focus as soon as the approval is asked for.
    await steps.nth(0).locator('.approval').waitFor();
    expect(await steps.nth(0).getAttribute('class')).toContain('status-awaiting-approval');
    await expect
      .poll(() => page.evaluate(() => (globalThis as unknown as PageGlobals).document.activeElement?.textContent))
      .toBe('Run');
    await page.keyboard.press('Enter');
    await steps.nth(0).locator('.stdout').waitFor();
    expect(await steps.nth(0).locator('.stdout').textContent()).toBe('42\n');

    // 2: Skip.
    await steps.nth(1).locator('.approval').waitFor();
    await steps.nth(1).getByRole('button', { name: 'Skip' }).click();
    await steps.nth(1).locator('.skipped-note').waitFor();
    expect(await steps.nth(1).locator('.skipped-note').textContent()).toContain('you chose not to run it');
    expect(await steps.nth(1).locator('.stdout').count()).toBe(0);

    // 3: Edit, change the code, run the edited code.
    await steps.nth(2).locator('.approval').waitFor();
    await steps.nth(2).getByRole('button', { name: 'Edit' }).click();
    const editor = steps.nth(2).getByLabel('Edit the code before it runs');
    expect(await editor.inputValue()).toBe("print('original')");
    await editor.fill("print('edited', 6 * 7)");
    await steps.nth(2).getByRole('button', { name: 'Run edited' }).click();
    await steps.nth(2).locator('.stdout').waitFor();
    expect(await steps.nth(2).locator('.stdout').textContent()).toBe('edited 42\n');
    expect(await steps.nth(2).locator('.edited-badge').textContent()).toBe('edited before running');
    expect(await steps.nth(2).locator('.code-details > .code-block').textContent()).toBe("print('edited', 6 * 7)");

    await page.locator('.final-answer').waitFor();
    expect(await page.locator('.final-answer').textContent()).toContain('All three pieces handled.');
    expect(await textOf(page, '.stdout')).not.toContain('this must not run');
  });

  it('a shell command from the model shows as $ command, asks "Run this command?", and runs once approved', async () => {
    expectNoLeftoverScript();
    const { page } = await openTab(server.url);
    await page.getByRole('switch', { name: 'Approve code' }).check();
    model.enqueue(
      { toolCalls: [{ name: 'run_shell_command', arguments: { command: 'echo "files: $(ls | wc -l)" && pwd' } }] },
      { text: 'Listed.' },
    );
    await ask(page, 'How many files are there?');
    const step = page.locator('.turn-message .code-step').last();
    await step.locator('.approval').waitFor();
    expect(await step.locator('.approval-question').textContent()).toBe('Run this command?');
    expect(await step.locator('.code-label').textContent()).toBe('Shell');
    expect(await step.locator('.code-details > .code-block').textContent()).toBe(
      '$ echo "files: $(ls | wc -l)" && pwd',
    );
    await step.getByRole('button', { name: 'Run' }).click();
    await step.locator('.stdout').waitFor();
    expect(await step.locator('.stdout').textContent()).toMatch(/^files: \d+\n\/mnt\/data\n$/);
    await page.locator('.final-answer').waitFor();
    expect(await page.locator('.final-answer').textContent()).toContain('Listed.');
  });

  it('keyboard: Enter sends, Shift+Enter inserts a newline', async () => {
    expectNoLeftoverScript();
    const { page } = await openTab(server.url);
    model.enqueue({ text: 'Got both lines.' });
    const box = page.getByLabel('Your question');
    await box.focus();
    await page.keyboard.type('first line');
    await page.keyboard.press('Shift+Enter');
    await page.keyboard.type('second line');
    expect(await box.inputValue()).toBe('first line\nsecond line');
    expect(await page.locator('.turn').count()).toBe(0); // nothing sent yet
    await page.keyboard.press('Enter');
    await page.locator('.final-answer').waitFor();
    expect(await page.locator('.question-bubble').textContent()).toBe('first line\nsecond line');
    expect((await page.locator('.final-answer').textContent())?.trim()).toBe('Got both lines.');
    expect(await box.inputValue()).toBe('');
    // The question the model got is the one typed, newline included.
    const sent = JSON.stringify(model.calls[model.calls.length - 1]?.messages ?? []);
    expect(sent).toContain('first line\\nsecond line');

    // Reopening another conversation from the sidebar shows its history, chart included.
    await page.locator('.conversation-select', { hasText: 'What drives the number of accidents?' }).click();
    await expect
      .poll(() => page.locator('.question-bubble').first().textContent())
      .toBe('What drives the number of accidents?');
    expect(await page.locator('.file-preview .file-name').textContent()).toBe('traffic_accidents.csv');
    const image = page.locator('img.output-image');
    await expect
      .poll(() => image.evaluate((element) => (element as unknown as PageImage).naturalWidth))
      .toBeGreaterThan(100);
    // …and opens at its latest message, below the chart.
    await expect.poll(() => inTranscriptView(page, page.locator('.final-answer'))).toBe(true);
  });

  it('an Enter that comes before the page has rendered the last keystroke still sends the whole question', async () => {
    expectNoLeftoverScript();
    const { page } = await openTab(server.url);
    model.enqueue({ text: 'Sent in one go.' });
    // Input and Enter in one task, as a fast typist on a busy machine (or a test's fill) can deliver them.
    await page.getByLabel('Your question').evaluate((element) => {
      const box = element as unknown as { value: string; dispatchEvent(event: unknown): boolean };
      const events = globalThis as unknown as {
        InputEvent: new (type: string, init: object) => unknown;
        KeyboardEvent: new (type: string, init: object) => unknown;
      };
      box.value = 'typed and sent at once';
      box.dispatchEvent(new events.InputEvent('input', { bubbles: true }));
      box.dispatchEvent(new events.KeyboardEvent('keydown', { key: 'Enter', bubbles: true, cancelable: true }));
    });
    await page.locator('.final-answer').waitFor();
    expect(await page.locator('.question-bubble').textContent()).toBe('typed and sent at once');
  });

  it("XSS: the model's markdown and HTML its code displays cannot run script in the page", async () => {
    expectNoLeftoverScript();
    const { page, dialogs } = await openTab(server.url);
    const code = [
      'from IPython.display import HTML, display',
      'display(HTML(\'<script>window.__xss=1</script><img src=x onerror="window.__xss=2;alert(2)"><b>bold from html</b>\'))',
    ].join('\n');
    model.enqueue(
      { text: 'Showing <img src=x onerror="window.__xss=5;alert(5)"> some HTML.', toolCalls: [run(code)] },
      { text: 'Done <script>window.__xss=6</script><a href="javascript:window.__xss=7">click</a> **safe**.' },
    );
    await ask(page, 'Show me some HTML.');
    await page.locator('.final-answer').waitFor();
    const output = page.locator('.turn-message .code-step .html-output');
    expect(await output.locator('b').textContent()).toBe('bold from html');
    expect(await page.locator('.transcript script').count()).toBe(0);
    expect(await page.locator('.transcript [onerror]').count()).toBe(0);
    expect(await page.locator('.final-answer strong').textContent()).toBe('safe');
    expect(await page.locator('.final-answer a').getAttribute('href')).toBeNull();
    await page.locator('.final-answer a').click();
    await page.waitForTimeout(300); // give any handler that slipped through the time to run
    expect(await page.evaluate(() => (globalThis as unknown as PageGlobals).__xss)).toBeUndefined();
    expect(dialogs).toEqual([]);
  });

  it('after an upload opens a conversation, the box sends at once, whatever a fetch made during the upload said', async () => {
    expectNoLeftoverScript();
    const { page } = await openTab(server.url);
    const api = client(server);
    // The page fetches the conversation it opened as it starts uploading. Here that fetch is answered while the
    // upload runs (the conversation busy) and delivered after the upload's own answer: the order a busy
    // machine can give. Before, the page kept that copy and offered Stop, not Send, dropping an Enter.
    const uploaded = page.waitForResponse(
      (response) => response.request().method() === 'POST' && /\/v1\/conversations\/[^/]+\/files$/.test(response.url()),
    );
    let stale: Promise<void> | undefined;
    // Its later fetches (the poll that would correct a stale copy within a second) wait until the box is looked at.
    const held: Route[] = [];
    let holding = true;
    await page.route(/\/v1\/conversations\/[^/?]+$/, async (route) => {
      if (route.request().method() !== 'GET') return route.continue();
      if (stale) return holding ? void held.push(route) : route.continue();
      const id = new URL(route.request().url()).pathname.split('/').pop();
      stale = (async () => {
        await expect
          .poll(async () => (await api.json<{ busy: boolean }>(`/v1/conversations/${id}`)).busy, {
            interval: 5,
            timeout: UI_TIMEOUT,
          })
          .toBe(true);
        const response = await route.fetch();
        expect((await response.json()).busy).toBe(true);
        await uploaded;
        await route.fulfill({ response });
      })();
      await stale;
    });
    // Large enough that its upload (read into the session, previewed there) outlasts the polling above.
    const rows = Array.from({ length: 150_000 }, (_, index) => `${index},${index % 7},${(index * 0.37).toFixed(2)}`);
    await page
      .getByTestId('upload-input')
      .first()
      .setInputFiles({
        name: 'many-rows.csv',
        mimeType: 'text/csv',
        buffer: Buffer.from(`id,weekday,amount\n${rows.join('\n')}\n`),
      });
    await page.locator('.file-preview .file-name').waitFor();
    await stale;
    await page.waitForTimeout(300); // the page's handling of that late copy
    expect(await page.getByRole('button', { name: 'Stop the running answer' }).isVisible()).toBe(false);
    expect(await page.getByRole('button', { name: 'Send', exact: true }).isVisible()).toBe(true);
    holding = false;
    for (const route of held.splice(0)) await route.continue();
    model.enqueue({ text: 'It has 150,000 rows.' });
    const box = page.getByLabel('Your question');
    await box.fill('How many rows?');
    await box.press('Enter');
    await expect.poll(() => page.locator('.final-answer').textContent()).toContain('150,000 rows');
  });
});

describe('web UI without a model (notebook)', { timeout: TEST_TIMEOUT }, () => {
  let server: Server;

  beforeAll(async () => {
    server = await startTestServer({ logLevel: 'warn', preloadModules: ['pandas'], webRoot: WEB_ROOT });
  }, TEST_TIMEOUT);
  afterAll(async () => server?.close());

  it('shows the no-model banner, disables chat, and runs cells with Ctrl+Enter keeping state', async () => {
    const { page } = await openTab(server.url);
    const banner = page.locator('.banner-info');
    await banner.waitFor();
    expect(await banner.textContent()).toContain('No model is configured');
    await banner.getByText('How to configure a model').click();
    await banner.locator('code', { hasText: 'sandcell serve --provider openai --model' }).first().waitFor();
    expect(await page.getByRole('tab', { name: 'Notebook' }).getAttribute('aria-selected')).toBe('true');
    const empty = page.locator('.empty-state');
    expect(await empty.textContent()).toContain('Ctrl+Enter');

    // The chat tab says what works without a model (not how to run a cell it does not have), and leads there.
    await page.getByRole('tab', { name: 'Chat' }).click();
    expect(await page.getByLabel('Your question').isDisabled()).toBe(true);
    expect(await empty.textContent()).toContain('No model to chat with');
    expect(await empty.textContent()).not.toMatch(/Ctrl|cell below/);
    expect(await banner.textContent()).not.toMatch(/below/);
    await mkdir(SCREENSHOT_DIR, { recursive: true });
    await page.screenshot({ path: path.join(SCREENSHOT_DIR, 'no-model-chat.png') });
    await empty.getByRole('button', { name: 'Run code in the notebook' }).click();
    expect(await page.getByRole('tab', { name: 'Notebook' }).getAttribute('aria-selected')).toBe('true');
    expect(await empty.textContent()).toContain('Ctrl+Enter');

    const first = await runCell(page, 'x = 21\nprint("set x")');
    expect(await first.locator('.stdout').textContent()).toBe('set x\n');
    const second = await runCell(page, 'x * 2');
    expect(await second.locator('.result-text').textContent()).toBe('42');
    expect(await second.locator('.exec-count').textContent()).toMatch(/\[\d+\]/);
    const failing = await runCell(page, 'def f():\n    return 1 / 0\nf()');
    expect(await failing.locator('.error-title').textContent()).toMatch(/^ZeroDivisionError: division by zero/);
    const traceback = await failing.locator('.traceback').textContent();
    expect(traceback).toContain('return 1 / 0');
    expect(traceback).toContain('ZeroDivisionError');
    expect(traceback).not.toContain('\u001b'); // no raw ANSI codes on screen

    // Chat is there but disabled, saying why.
    await page.getByRole('tab', { name: 'Chat' }).click();
    const box = page.getByLabel('Your question');
    expect(await box.isDisabled()).toBe(true);
    expect(await page.locator('.composer-disabled').textContent()).toContain('No model is configured');
  });

  it('a JavaScript cell and a bash cell run in the notebook, each keeping its own state, each labelled with its language', async () => {
    const { page } = await openTab(server.url);
    const js = await runCell(
      page,
      'const xs = [1, 2, 3];\nconsole.log("js", xs.map((x) => x * 2).join(","));',
      'JavaScript',
    );
    expect(await js.locator('.stdout').textContent()).toBe('js 2,4,6\n');
    expect(await js.locator('.code-label').textContent()).toContain('Cell · JavaScript');
    const jsAgain = await runCell(page, 'xs.length * 14', 'JavaScript');
    expect(await jsAgain.locator('.result-text').textContent()).toBe('42');
    const bash = await runCell(page, 'cd /tmp\nname=world', 'Bash');
    expect(await bash.locator('.code-label').textContent()).toContain('Cell · Bash');
    const bashAgain = await runCell(page, 'echo "$(pwd) $name"', 'Bash');
    expect(await bashAgain.locator('.stdout').textContent()).toBe('/tmp world\n');
    // Back to Python: its state is its own.
    const python = await runCell(page, 'print("python", 6 * 7)', 'Python');
    expect(await python.locator('.stdout').textContent()).toBe('python 42\n');
  });

  it('files panel: lists what code wrote, downloads it, deletes it; the step links it too', async () => {
    const { page } = await openTab(server.url);
    const cell = await runCell(
      page,
      "import pandas as pd\npd.DataFrame({'a': [1, 2], 'b': [3, 4]}).to_csv('/mnt/data/out.csv', index=False)\nopen('/mnt/data/notes.txt', 'w').write('keep me')",
    );
    expect(await cell.locator('.file-links').textContent()).toContain('out.csv');

    await page.getByRole('button', { name: 'Files', exact: true }).click();
    const panel = page.getByRole('complementary', { name: 'Files in /mnt/data' });
    await panel.getByText('out.csv').waitFor();
    const [download] = await Promise.all([
      page.waitForEvent('download'),
      panel.getByRole('button', { name: 'Download out.csv' }).click(),
    ]);
    expect(download.suggestedFilename()).toBe('out.csv');
    expect(await downloadText(download)).toBe('a,b\n1,3\n2,4\n');

    // The link under the step downloads the same file.
    const [fromStep] = await Promise.all([
      page.waitForEvent('download'),
      cell.getByRole('button', { name: 'Download notes.txt' }).click(),
    ]);
    expect(await downloadText(fromStep)).toBe('keep me');

    await panel.getByRole('button', { name: 'Delete out.csv' }).click();
    await panel.getByRole('button', { name: 'Really delete out.csv' }).click();
    await expect.poll(() => panel.locator('.file-path').allTextContents()).toEqual(['notes.txt']);
    const id = decodeURIComponent(new URL(page.url()).hash.replace('#/c/', ''));
    const api = client(server);
    const conversation = await api.json<Conversation>(`/v1/conversations/${id}`);
    const listing = await api.json<{ files: { path: string }[] }>(`/v1/sessions/${conversation.sessionId}/files`);
    expect(listing.files.map((file) => file.path)).toEqual(['notes.txt']);

    // Drag and drop a file onto the conversation: it is uploaded and previewed.
    const dropped = await page.evaluateHandle(() => {
      const scope = globalThis as unknown as PageDropScope;
      const transfer = new scope.DataTransfer();
      transfer.items.add(new scope.File(['city,count\nOslo,3\nLima,5\n'], 'dropped.csv', { type: 'text/csv' }));
      return transfer;
    });
    await page.dispatchEvent('main', 'dragenter', { dataTransfer: dropped });
    await page.locator('.drop-overlay').waitFor();
    await page.dispatchEvent('main', 'drop', { dataTransfer: dropped });
    const preview = page.locator('.file-preview', { hasText: 'dropped.csv' });
    await preview.waitFor();
    expect(await preview.locator('.file-facts').textContent()).toContain('2 rows × 2 columns');
    expect(await page.locator('.drop-overlay').count()).toBe(0);
    await expect.poll(() => panel.locator('.file-path').allTextContents()).toEqual(['dropped.csv', 'notes.txt']);
  });

  it('on a phone: a wide printed DataFrame scrolls sideways, and charts saved as PNG and SVG show inline and open full size', async () => {
    const { page } = await openTab(server.url, { width: 390, height: 844 });
    const cell = await runCell(
      page,
      [
        'import matplotlib',
        "matplotlib.use('Agg')",
        'import matplotlib.pyplot as plt',
        'import pandas as pd',
        "df = pd.DataFrame({f'column_{i}': [i * 1.5, i * 2.5] for i in range(12)})",
        'print(df)',
        'fig, ax = plt.subplots(figsize=(4, 2.5))',
        "ax.bar(['north', 'south', 'west'], [3, 1, 2], color='#4f46e5')",
        "fig.savefig('/mnt/data/bars.png')",
        "fig.savefig('/mnt/data/bars.svg')",
        'plt.close(fig)',
      ].join('\n'),
    );
    const printedTable = cell.locator('.stdout');
    expect(await printedTable.textContent()).toContain('column_11');
    const layout = await printedTable.evaluate((element) => {
      const box = element as unknown as { scrollWidth: number; clientWidth: number };
      return { scrollWidth: box.scrollWidth, clientWidth: box.clientWidth };
    });
    expect(layout.scrollWidth).toBeGreaterThan(layout.clientWidth);
    const images = cell.locator('.saved-image img');
    await expect.poll(() => images.count()).toBe(2);
    for (const index of [0, 1]) {
      await expect
        .poll(() => images.nth(index).evaluate((element) => (element as unknown as PageImage).naturalWidth))
        .toBeGreaterThan(100);
    }
    await images.first().scrollIntoViewIfNeeded();
    await mkdir(SCREENSHOT_DIR, { recursive: true });
    await page.screenshot({ path: path.join(SCREENSHOT_DIR, 'phone-real-sandbox.png') });

    // The export has what the cell showed: the printed table and both charts it saved (then closed).
    const { notebook } = await exportNotebook(page);
    const exported = notebook.cells.find((each) => each.cell_type === 'code' && cellSource(each).includes('savefig'));
    const outputs = exported?.outputs ?? [];
    expect([outputs.find((output) => output.output_type === 'stream')?.text].flat().join('')).toContain('column_11');
    const saved = outputs.filter((output) => output.output_type === 'display_data');
    expect(String(saved.find((output) => output.data?.['image/png'])?.data?.['image/png'])).toMatch(/^iVBOR/);
    expect([saved.find((output) => output.data?.['image/svg+xml'])?.data?.['image/svg+xml']].flat().join('')).toContain(
      '<svg',
    );
    await cell.getByRole('button', { name: 'Open bars.svg full size' }).click();
    const viewer = page.getByRole('dialog', { name: 'bars.svg' });
    await viewer.locator('img').waitFor();
    await viewer.getByRole('button', { name: 'Close' }).click();
    await viewer.waitFor({ state: 'detached' });
  });

  it('XSS: HTML and DataFrames from a cell are sanitised; the page keeps working', async () => {
    const { page, dialogs } = await openTab(server.url);
    const payload = '<script>window.__xss=1</script><img src=x onerror="window.__xss=2;alert(2)">';
    const cell = await runCell(
      page,
      [
        'from IPython.display import HTML, display',
        'import pandas as pd',
        `payload = ${JSON.stringify(payload)}`,
        "display(HTML(payload + '<i>still italic</i>'))",
        'print(payload)',
        "pd.DataFrame({'name': ['<img src=x onerror=\"window.__xss=3;alert(3)\">', '<script>window.__xss=4</script>']})",
      ].join('\n'),
    );
    expect(await cell.locator('.stdout').textContent()).toBe(`${payload}\n`); // shown as text
    const outputs = cell.locator('.html-output');
    expect(await outputs.first().locator('i').textContent()).toBe('still italic');
    const table = outputs.nth(1).locator('table');
    expect(await table.locator('tbody td').first().textContent()).toBe('<img src=x onerror="window.__xss=3;alert(3)">');
    expect(await page.locator('.transcript script, .transcript [onerror], .transcript style').count()).toBe(0);
    await page.waitForTimeout(300);
    expect(await page.evaluate(() => (globalThis as unknown as PageGlobals).__xss)).toBeUndefined();
    expect(dialogs).toEqual([]);
    // Still works.
    const after = await runCell(page, 'print("still here")');
    expect(await after.locator('.stdout').textContent()).toBe('still here\n');
  });

  it('XSS: namespace-confusion HTML and <base href> are dropped before parsing: no CSP report, nothing hostile shown', async () => {
    const { page, dialogs } = await openTab(server.url);
    const payloads = [
      // DOMPurify's mutation-XSS classics: a <style> under MathML that re-parses as HTML.
      '<math><mtext><table><mglyph><style><img src=x onerror="window.__xss=11;alert(11)">',
      '<math><mtext><table><mglyph><style><!--</style><img title="--&gt;&lt;/mglyph&gt;&lt;img&Tab;src=1&Tab;onerror=alert(12)&gt;">',
      '<form><math><mtext></form><form><mglyph><style></math><img src onerror="window.__xss=13;alert(13)">',
      '<svg></p><style><a id="</style><img src=1 onerror=alert(14)>">',
      '<math><mi><style>*{background:url(https://attacker.example/x)}</style></mi></math>',
      // A base URL would redirect every relative link and fetch of the page.
      '<base href="https://attacker.example/"><a href="/docs">a relative link</a>',
      "<BASE HREF='//attacker.example/' target=_top>",
    ];
    const cell = await runCell(
      page,
      [
        'from IPython.display import HTML, display',
        `for payload in ${JSON.stringify(payloads)}:`,
        '    display(HTML(payload))',
        "display(HTML('<i>after them</i>'))",
      ].join('\n'),
    );
    const outputs = cell.locator('.html-output');
    await expect.poll(() => outputs.count()).toBe(payloads.length + 1);
    expect(await outputs.last().locator('i').textContent()).toBe('after them');
    expect(await outputs.nth(5).locator('a').textContent()).toBe('a relative link');
    // (An empty <svg> may stay: DOMPurify allows SVG, without its <style>.)
    expect(await page.locator('.transcript :is(style, base, math, mglyph, script, [onerror], [style])').count()).toBe(
      0,
    );
    const baseUri = await page.evaluate(
      () => (globalThis as unknown as { document: { baseURI: string } }).document.baseURI,
    );
    expect(baseUri.startsWith(`${server.url}/`)).toBe(true);
    await page.waitForTimeout(300); // give any handler that slipped through the time to run
    expect(await page.evaluate(() => (globalThis as unknown as PageGlobals).__xss)).toBeUndefined();
    expect(dialogs).toEqual([]);
    // afterEach: no CSP violation was reported while these were parsed and shown.
  });

  it('Stop interrupts running code; a reload follows a running cell to its end', async () => {
    const { page } = await openTab(server.url);
    const cells = page.locator('.turn-cell');
    const editor = page.getByLabel('Python cell (Ctrl+Enter runs it)');
    await editor.fill('import time\ntime.sleep(60)');
    await editor.press('Control+Enter');
    await cells.first().locator('.badge-running').waitFor();
    await page.getByRole('button', { name: 'Stop the running cell' }).click();
    await cells.first().locator('.turn-note').waitFor();
    expect(await cells.first().locator('.turn-note').textContent()).toBe('Stopped.');

    await editor.fill("import time\ntime.sleep(2.5)\nprint('finished after the reload')");
    await editor.press('Control+Enter');
    await cells.nth(1).locator('.badge-running').waitFor();
    await page.reload();
    // Reopened from history while it still runs, then followed to the end.
    await page.locator('.turn-cell').nth(1).locator('.stdout').waitFor();
    expect(await page.locator('.turn-cell').nth(1).locator('.stdout').textContent()).toBe(
      'finished after the reload\n',
    );
  });

  it('an expired conversation says so and offers a new one; one the server lost is dropped with a notice', async () => {
    const api = client(server);
    const expired = await api.json<Conversation>('/v1/conversations', { method: 'POST', json: { title: 'Old one' } });
    await api(`/v1/sessions/${expired.sessionId}`, { method: 'DELETE' });
    const { page } = await openTab(`${server.url}/#/c/${expired.id}`);
    const banner = page.locator('.banner-warning');
    await banner.waitFor();
    expect(await banner.textContent()).toMatch(/session expired at .*: its variables and files are gone/);
    expect(await banner.textContent()).toContain('can be exported');
    expect(await page.getByLabel('Python cell (Ctrl+Enter runs it)').isDisabled()).toBe(true);
    await banner.getByRole('button', { name: 'New conversation' }).click();
    await banner.waitFor({ state: 'detached' });
    expect(await page.getByLabel('Python cell (Ctrl+Enter runs it)').isDisabled()).toBe(false);

    const lost = await api.json<Conversation>('/v1/conversations', { method: 'POST', json: { title: 'Lost one' } });
    await page.goto(`${server.url}/#/c/${lost.id}`);
    await page.locator('.conversation-title', { hasText: 'Lost one' }).waitFor();
    await api(`/v1/conversations/${lost.id}`, { method: 'DELETE' });
    await page.reload();
    const notice = page.locator('.notice-error');
    await notice.waitFor();
    expect(await notice.textContent()).toContain('no longer on the server');
    expect(await page.locator('.conversation-title', { hasText: 'Lost one' }).count()).toBe(0);

    // Deleting from the sidebar asks first, then removes it on the server too.
    await page.getByRole('button', { name: 'Delete conversation Old one' }).click();
    await page.locator('.confirm-delete').getByRole('button', { name: 'Delete' }).click();
    await page.locator('.conversation-title', { hasText: 'Old one' }).waitFor({ state: 'detached' });
    expect((await api(`/v1/conversations/${expired.id}`)).status).toBe(404);
  });
});

describe('web UI on a server with an API key', { timeout: TEST_TIMEOUT }, () => {
  let server: Server;

  beforeAll(async () => {
    server = await startTestServer({
      apiKeys: [API_KEY],
      approvalDefault: 'ask',
      logLevel: 'warn',
      webRoot: WEB_ROOT,
    });
  }, TEST_TIMEOUT);
  afterAll(async () => server?.close());

  it('asks for the key, rejects a wrong one, works with the right one, and signs out', async () => {
    const { page } = await openTab(server.url);
    const dialog = page.getByRole('dialog', { name: 'Sign in to sandcell' });
    await dialog.waitFor();
    const field = dialog.getByLabel('API key');
    await field.fill('not-the-key-123');
    await dialog.getByRole('button', { name: 'Sign in' }).click();
    await dialog.getByRole('alert').waitFor();
    expect(await dialog.getByRole('alert').textContent()).toContain('That key was not accepted');

    await field.fill(API_KEY);
    await dialog.getByRole('button', { name: 'Sign in' }).click();
    await dialog.waitFor({ state: 'detached' });
    expect(
      await page.evaluate(() => (globalThis as unknown as PageGlobals).sessionStorage.getItem('sandcell.apiKey')),
    ).toBe(API_KEY);
    expect(
      await page.evaluate(() => (globalThis as unknown as PageGlobals).localStorage.getItem('sandcell.apiKey')),
    ).toBeNull();

    // The approval default comes from the server's config.
    await page.getByRole('tab', { name: 'Chat' }).click();
    expect(await page.getByRole('switch', { name: 'Approve code' }).isChecked()).toBe(true);
    await page.getByRole('tab', { name: 'Notebook' }).click();

    // Images need the key too: they come through fetch() and blob: URLs.
    const cell = await runCell(
      page,
      "import matplotlib.pyplot as plt\nplt.plot([1, 3, 2]); plt.show()\nprint('with key')",
    );
    expect(await cell.locator('.stdout').textContent()).toBe('with key\n');
    const image = cell.locator('img.output-image');
    await image.waitFor();
    await expect
      .poll(() => image.evaluate((element) => (element as unknown as PageImage).naturalWidth))
      .toBeGreaterThan(100);

    // A reload keeps the key for this tab.
    await page.reload();
    await page.locator('.turn-cell').first().waitFor();
    expect(await page.getByRole('dialog').count()).toBe(0);

    await page.getByRole('button', { name: 'Sign out' }).click();
    await dialog.waitFor();
    expect(
      await page.evaluate(() => (globalThis as unknown as PageGlobals).sessionStorage.getItem('sandcell.apiKey')),
    ).toBeNull();
  });
});
