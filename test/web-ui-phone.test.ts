/**
 * One file (over 500 lines): its cases share one chromium and one server, started once.
 *
 * The web UI on a phone and over many conversations, in Debian's chromium:
 * the drawer, the composer in view, sideways-scrolling output, titles and
 * export names, icons, stopped cells, the mode kept per conversation, images
 * code saved, long code folded. The subject is the UI's own logic, so kernels
 * answer from a script (the scripted backend) and the model is the scripted
 * model; test/web-ui.test.ts runs the real sandbox.
 * Screenshots go to test-output/screenshots/ (untracked): look at them.
 */
import type { Browser, Locator, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ScriptedChatModel } from '../src/agents/scripted-chat-model.js';
import type { ScriptedRun, ScriptedStep } from '../src/backends/scripted/index.js';
import type { Conversation } from '../src/protocol/index.js';
import { type Answer, figure, pngImage, printed } from './support/kernel-script.js';
import { client, startScriptedServer } from './support/server.js';
import {
  inTranscriptView,
  launchBrowser,
  openTab as openBrowserTab,
  PHONE,
  screenshot,
  type Tab,
  WEB_ROOT,
} from './support/web-browser.js';

const UI_TIMEOUT = 60_000;

/** A printed DataFrame, 12 columns wide: far wider than a phone. */
const WIDE_TABLE = [
  `${' '.repeat(4)}${Array.from({ length: 12 }, (_, index) => `column_${index}`.padStart(12)).join('')}`,
  ...Array.from(
    { length: 5 },
    (_, row) =>
      `${String(row).padEnd(4)}${Array.from({ length: 12 }, (_, index) => (row * index * 1.5).toFixed(2).padStart(12)).join('')}`,
  ),
].join('\n');

const LONG_CODE = Array.from({ length: 70 }, (_, index) => `value_${index} = ${index} * 2`).join('\n');
const HOSTILE_SVG =
  '<svg xmlns="http://www.w3.org/2000/svg" width="240" height="120" onload="window.top.__xss=1">' +
  '<script>window.top.__xss=2;alert(2)</script>' +
  '<rect width="240" height="120" fill="#4f46e5"/><text x="20" y="70" fill="#fff" font-size="28">SVG chart</text></svg>';

/** A chart taller than the space kept for it while its image loads. */
const TALL_CHART: ScriptedStep = {
  type: 'display',
  data: { 'image/png': pngImage(480, 600).toString('base64'), 'text/plain': '<Figure size 480x600 with 1 Axes>' },
};

/** How far the streaming cell may go: the test lets it on a step at a time. */
const streaming = { released: 0 };
const STREAMED_LINES = Array.from({ length: 40 }, (_, index) => `line ${index + 1}\n`).join('');

/** What each cell's code does; code the table does not know runs silently (a model's code in chat). */
const CELLS: Record<string, Answer> = {
  'print(wide)': [printed(`${WIDE_TABLE}\n`)],
  // A tall chart (its image loads after the cell's events), then output that keeps coming.
  'plot_and_stream()': [
    TALL_CHART,
    printed('started\n'),
    { type: 'wait', until: () => streaming.released >= 1 },
    printed(STREAMED_LINES),
    { type: 'wait', until: () => streaming.released >= 2 },
    printed('the last line\n'),
  ],
  'import time\ntime.sleep(600)': [printed('working…\n'), { type: 'hang' }],
  "plt.savefig('/mnt/data/chart.png'); open('/mnt/data/badge.svg','w').write(svg)": ({ files }) => {
    files.write('chart.png', pngImage(480, 300));
    files.write('badge.svg', HOSTILE_SVG);
    return [printed('saved\n')];
  },
  'plt.show()': [figure()],
  'plt.show(tall=True)': [TALL_CHART],
  [LONG_CODE]: [printed('done\n')],
  'print(1)': [printed('1\n')],
};
const kernel: ScriptedRun = (context) => {
  const answer = CELLS[context.code] ?? [];
  return typeof answer === 'function' ? answer(context) : answer;
};

// The page's side, typed just enough for the functions evaluated in it (this tsconfig has no DOM library).
interface PageElement {
  scrollWidth: number;
  clientWidth: number;
  clientHeight: number;
  scrollHeight: number;
  scrollTop: number;
  placeholder: string;
  src: string;
  naturalWidth: number;
}
interface PageStyle {
  whiteSpace: string;
  lineHeight: string;
  fontWeight: string;
  fontSize: string;
  fontFamily: string;
  paddingLeft: string;
  paddingRight: string;
  textUnderlinePosition: string;
}
declare const document: {
  contentType: string;
  documentElement: { scrollWidth: number };
  createElement(tag: 'canvas'): {
    getContext(kind: '2d'): { font: string; measureText(text: string): { width: number } };
  };
};
declare function getComputedStyle(element: PageElement): PageStyle;

interface PageGlobals {
  __xss?: unknown;
}

let browser: Browser;
let server: Awaited<ReturnType<typeof startScriptedServer>>;
let model: ScriptedChatModel;
const tabs: Tab[] = [];

beforeAll(async () => {
  browser = await launchBrowser();
  model = new ScriptedChatModel();
  server = await startScriptedServer(kernel, { model, logLevel: 'warn', webRoot: WEB_ROOT });
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await server?.close();
});

afterEach(async () => {
  const open = tabs.splice(0);
  for (const tab of open) await tab.context.close();
  for (const tab of open) {
    expect(tab.problems, 'no script errors or CSP violations in the page').toEqual([]);
    expect(tab.dialogs, 'no dialogs').toEqual([]);
    expect(tab.popups, 'no other pages opened').toEqual([]);
  }
  expect(model.remaining, 'scripted answers left over').toBe(0);
});

async function openTab(url: string, viewport?: { width: number; height: number }): Promise<Tab> {
  const tab = await openBrowserTab(browser, url, { viewport, timeoutMs: UI_TIMEOUT });
  tabs.push(tab);
  return tab;
}

async function switchTo(page: Page, mode: 'Chat' | 'Notebook'): Promise<void> {
  await page.getByRole('tab', { name: mode }).click();
  await expect.poll(() => page.getByRole('tab', { name: mode }).getAttribute('aria-selected')).toBe('true');
}

/** Runs a cell in notebook mode; resolves with the finished cell. */
async function runCell(page: Page, code: string): Promise<Locator> {
  const cells = page.locator('.turn-cell');
  const before = await cells.count();
  const editor = page.getByLabel('Python cell (Ctrl+Enter runs it)');
  await editor.fill(code);
  await editor.press('Control+Enter');
  const cell = cells.nth(before);
  await expect.poll(() => cell.locator('.code-step').getAttribute('aria-busy'), { timeout: UI_TIMEOUT }).toBe('false');
  return cell;
}

/** The element's box, or a failure naming it. */
async function box(locator: Locator) {
  const found = await locator.boundingBox();
  if (!found) throw new Error('the element has no box (not rendered)');
  return found;
}

/** How far a scroller is from its end (0: its last line is in view). */
const distanceFromEnd = (locator: Locator) =>
  locator.evaluate((node) => {
    const element = node as unknown as PageElement;
    return element.scrollHeight - element.scrollTop - element.clientHeight;
  });

const conversationId = (page: Page) => decodeURIComponent(new URL(page.url()).hash.replace('#/c/', ''));

describe('the web UI on a phone (390×844)', { timeout: 120_000 }, () => {
  it('the sidebar is a drawer, the composer stays in view, the placeholder fits, nothing overflows sideways', async () => {
    const api = client(server);
    for (const title of ['Fines by region', 'Weather and accidents']) {
      await api.json('/v1/conversations', { method: 'POST', json: { title } });
    }
    const { page } = await openTab(server.url, PHONE);
    const composer = page.getByLabel('Your question');
    await composer.waitFor();
    // The conversation list is out of the way, and out of the tab order.
    const sidebar = page.getByRole('navigation', { name: 'Conversations' });
    expect(await sidebar.isVisible()).toBe(false);
    const composerBox = await box(composer);
    expect(composerBox.y + composerBox.height).toBeLessThanOrEqual(PHONE.height);
    expect(composerBox.x).toBeGreaterThanOrEqual(0);
    expect(composerBox.x + composerBox.width).toBeLessThanOrEqual(PHONE.width);
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(PHONE.width);

    // The placeholder is shown whole: its text is narrower than the box it is in.
    const placeholder = await composer.evaluate((element) => {
      const input = element as unknown as PageElement;
      const style = getComputedStyle(input);
      const context = document.createElement('canvas').getContext('2d')!;
      context.font = `${style.fontWeight} ${style.fontSize} ${style.fontFamily}`;
      const room = input.clientWidth - Number.parseFloat(style.paddingLeft) - Number.parseFloat(style.paddingRight);
      return { text: input.placeholder, width: context.measureText(input.placeholder).width, room };
    });
    expect(placeholder.text).toBe('Ask about your data…');
    expect(placeholder.width).toBeLessThan(placeholder.room);
    await screenshot(page, 'phone-new-conversation');

    // The menu button opens the drawer over the conversation; choosing one closes it and opens that conversation.
    const menu = page.getByRole('button', { name: 'Conversations' });
    expect(await menu.getAttribute('aria-expanded')).toBe('false');
    await menu.click();
    await sidebar.waitFor({ state: 'visible' });
    expect(await menu.getAttribute('aria-expanded')).toBe('true');
    await expect.poll(async () => (await box(sidebar)).x).toBe(0);
    expect((await box(sidebar)).width).toBeLessThan(PHONE.width);
    await screenshot(page, 'phone-drawer');
    await sidebar.locator('.conversation-select', { hasText: 'Weather and accidents' }).click();
    await sidebar.waitFor({ state: 'hidden' });
    await expect.poll(() => page.locator('.conversation-heading').textContent()).toBe('Weather and accidents');

    // Escape closes it too.
    await menu.click();
    await sidebar.waitFor({ state: 'visible' });
    await page.keyboard.press('Escape');
    await sidebar.waitFor({ state: 'hidden' });
    expect(
      await menu.evaluate((element) => element === (document as unknown as { activeElement: unknown }).activeElement),
    ).toBe(true);
  });

  it('printed tables keep their lines and scroll sideways; the composer stays in view under a long history; the view follows new output until the user scrolls up', async () => {
    const { page } = await openTab(server.url, PHONE);
    await switchTo(page, 'Notebook');
    let cell: Locator | undefined;
    for (let index = 0; index < 3; index++) cell = await runCell(page, 'print(wide)');
    const output = cell!.locator('.stdout');
    expect(await output.textContent()).toBe(`${WIDE_TABLE}\n`);
    const layout = await output.evaluate((node) => {
      const element = node as unknown as PageElement;
      return {
        whiteSpace: getComputedStyle(element).whiteSpace,
        scrollWidth: element.scrollWidth,
        clientWidth: element.clientWidth,
        height: element.clientHeight,
        lineHeight: Number.parseFloat(getComputedStyle(element).lineHeight),
      };
    });
    expect(layout.whiteSpace).toBe('pre');
    expect(layout.scrollWidth).toBeGreaterThan(layout.clientWidth); // it scrolls…
    expect(layout.height).toBeLessThan(layout.lineHeight * 8); // …instead of wrapping its 6 lines into many
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(PHONE.width);
    const editor = await box(page.getByLabel('Python cell (Ctrl+Enter runs it)'));
    expect(editor.y + editor.height).toBeLessThanOrEqual(PHONE.height);
    await screenshot(page, 'phone-wide-output');

    // A running cell: the view follows its output, its chart loading late included…
    const transcript = page.locator('.transcript');
    const jump = page.getByRole('button', { name: 'Jump to latest' });
    await page.getByLabel('Python cell (Ctrl+Enter runs it)').fill('plot_and_stream()');
    await page.getByLabel('Python cell (Ctrl+Enter runs it)').press('Control+Enter');
    const running = page.locator('.turn-cell').nth(3);
    const chart = running.locator('img.output-image');
    await expect.poll(() => chart.evaluate((element) => (element as unknown as PageElement).naturalWidth)).toBe(480);
    await expect.poll(() => distanceFromEnd(transcript)).toBeLessThan(2);
    expect(await jump.count()).toBe(0);

    // …until the user scrolls up to read: then what they read stays put while output arrives.
    const view = await box(transcript);
    await page.mouse.move(view.x + view.width / 2, view.y + view.height / 2);
    await page.mouse.wheel(0, -250);
    await jump.waitFor();
    const scrollTop = () => transcript.evaluate((element) => (element as unknown as PageElement).scrollTop);
    const readingAt = await scrollTop();
    const behind = await distanceFromEnd(transcript);
    streaming.released = 1;
    await running.locator('.stdout', { hasText: 'line 40' }).waitFor();
    await page.waitForTimeout(200); // a frame or two for any follow to happen
    expect(await scrollTop()).toBe(readingAt);
    expect(await distanceFromEnd(transcript)).toBeGreaterThan(behind + 100); // the output grew below
    const jumpBox = await box(jump);
    expect(jumpBox.x).toBeGreaterThanOrEqual(0);
    expect(jumpBox.x + jumpBox.width).toBeLessThanOrEqual(PHONE.width);
    expect(jumpBox.y + jumpBox.height).toBeLessThanOrEqual(view.y + view.height);
    await screenshot(page, 'phone-jump-to-latest');

    // "Jump to latest" goes to the end and follows again; the printed output's own box shows its newest line.
    await jump.click();
    await expect.poll(() => distanceFromEnd(transcript)).toBeLessThan(2);
    await jump.waitFor({ state: 'detached' });
    streaming.released = 2;
    await expect.poll(() => running.locator('.code-step').getAttribute('aria-busy')).toBe('false');
    expect(await running.locator('.stdout').textContent()).toContain('the last line');
    await expect.poll(() => distanceFromEnd(transcript)).toBeLessThan(2);
    expect(await distanceFromEnd(running.locator('.stdout'))).toBeLessThan(2);

    // Running something new while scrolled up (by the scrollbar or keys this time) goes to the end, to show it.
    await transcript.evaluate((element) =>
      (element as unknown as { scrollBy(x: number, y: number): void }).scrollBy(0, -400),
    );
    await jump.waitFor();
    await runCell(page, 'print(1)');
    await expect.poll(() => distanceFromEnd(transcript)).toBeLessThan(2);
    expect(await jump.count()).toBe(0);
  });

  it('a chat answer with its code and chart reads well and stays within the screen; the answer under a tall chart is in view, reopened too', async () => {
    const { page } = await openTab(server.url, PHONE);
    model.enqueue(
      {
        text: 'Let me chart the accidents by region.',
        toolCalls: [{ name: 'execute_python_code', arguments: { code: 'plt.show(tall=True)' } }],
      },
      { text: 'Accidents are **highest in the north** (3 a day), and lowest in the south.' },
    );
    await page.getByLabel('Your question').fill('Where do most accidents happen?');
    await page.getByLabel('Your question').press('Enter');
    const answer = page.locator('.final-answer');
    const chart = page.locator('.turn-message img.output-image');
    for (const reopened of [false, true]) {
      if (reopened) await page.reload();
      await answer.waitFor();
      await expect.poll(() => chart.evaluate((element) => (element as unknown as PageElement).naturalWidth)).toBe(480);
      // The chart's image came after the answer and pushed it down: the view followed.
      await expect.poll(() => inTranscriptView(page, answer), { timeout: 2000 }).toBe(true);
    }
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(PHONE.width);
    const composer = await box(page.getByLabel('Your question'));
    expect(composer.y + composer.height).toBeLessThanOrEqual(PHONE.height);
    await page
      .locator('.turn-message')
      .evaluate((element) =>
        (element as unknown as { scrollIntoView(options: unknown): void }).scrollIntoView({ block: 'start' }),
      );
    await screenshot(page, 'phone-chat-answer');
  });
});

describe('titles, export names, icons', { timeout: 120_000 }, () => {
  it('a conversation is named after the first question, or the uploaded file; code names nothing; the export name is short', async () => {
    const { page } = await openTab(server.url);
    model.enqueue({ text: 'Fines go with fewer accidents.' });
    await page.getByLabel('Your question').fill('What drives the number of accidents, and by how much?');
    await page.getByLabel('Your question').press('Enter');
    await page.locator('.final-answer').waitFor();
    await expect
      .poll(() => page.locator('.conversation-heading').textContent())
      .toBe('What drives the number of accidents, and by how much?');
    const [exported] = await Promise.all([
      page.waitForEvent('download'),
      page.getByRole('button', { name: 'Export .ipynb' }).click(),
    ]);
    expect(exported.suggestedFilename()).toBe('what-drives-the-number-of-accidents-and.ipynb');

    // An upload names a new conversation after the file.
    await page.getByRole('button', { name: '+ New conversation' }).click();
    await page
      .getByTestId('upload-input')
      .first()
      .setInputFiles({
        name: 'traffic_accidents.csv',
        mimeType: 'text/csv',
        buffer: Buffer.from('fine,accidents\n10,3\n20,1\n'),
      });
    await page.locator('.file-preview').waitFor();
    await expect.poll(() => page.locator('.conversation-heading').textContent()).toBe('traffic_accidents.csv');

    // Code alone leaves a conversation unnamed, in the header and the sidebar.
    await page.getByRole('button', { name: '+ New conversation' }).click();
    await switchTo(page, 'Notebook');
    await runCell(page, 'print(1)');
    await page.waitForURL(/#\/c\//);
    await expect.poll(() => page.locator('.conversation-heading').textContent()).toBe('New conversation');
    const titles = await page.locator('.conversation-title').allTextContents();
    expect(titles).not.toContain('print(1)');
    expect(titles).toEqual(
      expect.arrayContaining(['traffic_accidents.csv', 'What drives the number of accidents, and by how much?']),
    );
  });

  it('every icon is inline SVG: no emoji or symbol a font may lack', async () => {
    const api = client(server);
    const conversation = await api.json<Conversation>('/v1/conversations', { method: 'POST', json: {} });
    await api.json(`/v1/conversations/${conversation.id}/cells`, {
      method: 'POST',
      json: { code: "plt.savefig('/mnt/data/chart.png'); open('/mnt/data/badge.svg','w').write(svg)" },
    });
    const form = new FormData();
    form.append('file', new Blob(['a,b\n1,2\n']), 'small.csv');
    await api(`/v1/conversations/${conversation.id}/files`, { method: 'POST', body: form });
    const { page } = await openTab(`${server.url}/#/c/${conversation.id}`);
    await page.locator('.file-preview').waitFor();
    await page.getByRole('button', { name: 'Files', exact: true }).click();
    await page.getByRole('complementary', { name: 'Files in /mnt/data' }).getByText('chart.png').waitFor();
    await page.locator('.conversation-item').first().hover();
    const text = await page.locator('body').textContent();
    // Emoji, dingbats, arrows and geometric shapes: the glyphs that show as boxes without the right font.
    expect(text).not.toMatch(/[\p{Extended_Pictographic}\u2190-\u21ff\u2300-\u23ff\u25a0-\u25ff\u2700-\u27bf\u2913]/u);
    for (const name of ['Download chart.png', 'Delete chart.png', 'Upload data files', 'Refresh the file list']) {
      expect(await page.getByRole('button', { name }).first().locator('svg').count(), name).toBe(1);
    }
    await screenshot(page, 'desktop-files-and-icons');
  });
});

describe('cells, modes, images and long code', { timeout: 120_000 }, () => {
  it('a cell the user stopped shows as stopped, not as a red error', async () => {
    const { page } = await openTab(server.url);
    await switchTo(page, 'Notebook');
    const editor = page.getByLabel('Python cell (Ctrl+Enter runs it)');
    await editor.fill('import time\ntime.sleep(600)');
    await editor.press('Control+Enter');
    const cell = page.locator('.turn-cell').first();
    await cell.locator('.badge-running').waitFor();
    await cell.locator('.stdout').waitFor();
    await page.getByRole('button', { name: 'Stop the running cell' }).click();
    await cell.locator('.badge-stopped').waitFor();
    expect(await cell.locator('.status-badge').textContent()).toMatch(/^Stopped/);
    expect(await cell.locator('.code-step').getAttribute('class')).toContain('status-stopped');
    expect(await cell.locator('.code-step').getAttribute('aria-label')).toMatch(/: Stopped$/);
    expect(await cell.locator('.error-output, .badge-error, [role=alert]').count()).toBe(0);
    expect(await cell.locator('.stdout').textContent()).toBe('working…\n'); // what it printed stays
    expect(await cell.locator('.turn-note').textContent()).toBe('Stopped.');
    await screenshot(page, 'desktop-stopped-cell');
  });

  it('the mode is kept with each conversation: a reload and another browser reopen it the same', async () => {
    const { page } = await openTab(server.url);
    await switchTo(page, 'Notebook');
    await runCell(page, '# Mode check\nprint(1)');
    await page.waitForURL(/#\/c\//);
    const notebookId = conversationId(page);

    await page.getByRole('button', { name: '+ New conversation' }).click();
    await switchTo(page, 'Chat');
    model.enqueue({ text: 'Hello.' });
    await page.getByLabel('Your question').fill('Say hello');
    await page.getByLabel('Your question').press('Enter');
    await page.locator('.final-answer').waitFor();
    const chatId = conversationId(page);
    // Switched to notebook and back again, it stays in chat.
    await switchTo(page, 'Notebook');
    await switchTo(page, 'Chat');

    await page.reload();
    await expect.poll(() => page.getByRole('tab', { name: 'Chat' }).getAttribute('aria-selected')).toBe('true');
    await page.locator('.conversation-select', { hasText: 'Mode check' }).click();
    await expect.poll(() => conversationId(page)).toBe(notebookId);
    await expect.poll(() => page.getByRole('tab', { name: 'Notebook' }).getAttribute('aria-selected')).toBe('true');

    // Another browser (a fresh context: nothing in its storage) sees the same.
    const other = await openTab(`${server.url}/#/c/${notebookId}`);
    await other.page.locator('.turn-cell').waitFor();
    expect(await other.page.getByRole('tab', { name: 'Notebook' }).getAttribute('aria-selected')).toBe('true');
    await other.page.goto(`${server.url}/#/c/${chatId}`);
    await other.page.reload();
    await other.page.locator('.final-answer').waitFor();
    expect(await other.page.getByRole('tab', { name: 'Chat' }).getAttribute('aria-selected')).toBe('true');
    const summary = await client(server).json<Conversation>(`/v1/conversations/${notebookId}`);
    expect(summary.mode).toBe('notebook');
  });

  it('images the code saved show inline and open full size; an SVG is shown only as pixels and runs nothing', async () => {
    const tab = await openTab(server.url, PHONE);
    const { page } = tab;
    await switchTo(page, 'Notebook');
    const cell = await runCell(page, "plt.savefig('/mnt/data/chart.png'); open('/mnt/data/badge.svg','w').write(svg)");
    const images = cell.locator('.saved-image img');
    await expect.poll(() => images.count()).toBe(2);
    for (const index of [0, 1]) {
      await expect
        .poll(() => images.nth(index).evaluate((element) => (element as unknown as PageElement).naturalWidth))
        .toBeGreaterThan(100);
    }
    expect((await cell.locator('.saved-image figcaption').allTextContents()).sort()).toEqual([
      'badge.svg',
      'chart.png',
    ]);
    // Both are PNG pixels: "open image in new tab" on either opens a PNG, never the SVG's markup as a page of this origin.
    expect(tab.popups).toEqual([]);
    const sources = await images.evaluateAll((elements) =>
      elements.map((element) => (element as unknown as PageElement).src),
    );
    for (const source of sources) {
      expect(source).toMatch(/^blob:/);
      const opened = await tab.context.newPage();
      await opened.goto(source);
      expect(await opened.evaluate(() => document.contentType)).toBe('image/png');
      await opened.waitForTimeout(200);
      expect(await opened.evaluate(() => (globalThis as unknown as PageGlobals).__xss)).toBeUndefined();
      await opened.close();
    }
    tab.popups.splice(0); // the pages this test opened itself
    // The files stay downloadable as links too, underlined below the descenders: an underscore in a name stays visible.
    expect(await cell.locator('.file-links').textContent()).toContain('badge.svg');
    const link = cell.getByRole('button', { name: 'Download chart.png' });
    expect(
      await link.evaluate((element) => getComputedStyle(element as unknown as PageElement).textUnderlinePosition),
    ).toBe('under');
    await screenshot(page, 'phone-saved-images');

    await cell.getByRole('button', { name: 'Open chart.png full size' }).click();
    const viewer = page.getByRole('dialog', { name: 'chart.png' });
    await viewer.waitFor();
    const full = await box(viewer.locator('img'));
    expect(full.width).toBeGreaterThan((await box(images.first())).width - 1);
    await screenshot(page, 'phone-image-viewer');
    await page.keyboard.press('Escape');
    await viewer.waitFor({ state: 'detached' });

    await cell.getByRole('button', { name: 'Open badge.svg full size' }).click();
    await page.getByRole('dialog', { name: 'badge.svg' }).waitFor();
    await page.getByRole('dialog', { name: 'badge.svg' }).getByRole('button', { name: 'Close' }).click();
    await page.waitForTimeout(300); // give a handler that slipped through the time to run
    expect(await page.evaluate(() => (globalThis as unknown as PageGlobals).__xss)).toBeUndefined();
    // afterEach: no dialog, no page opened.
  });

  it('a chart figure opens full size too', async () => {
    const { page } = await openTab(server.url);
    await switchTo(page, 'Notebook');
    const cell = await runCell(page, 'plt.show()');
    const chart = cell.getByRole('button', { name: /^Open Chart 1 from cell .* full size$/ });
    await chart.click();
    await page.getByRole('dialog').locator('img').waitFor();
    await page.getByRole('dialog').click({ position: { x: 5, y: 200 } }); // outside the image
    await page.getByRole('dialog').waitFor({ state: 'detached' });
  });

  it('long code is folded after 15 lines with "Show all"; short code is not', async () => {
    const { page } = await openTab(server.url);
    await switchTo(page, 'Notebook');
    const long = await runCell(page, LONG_CODE);
    const code = long.locator('.code-block');
    const lineHeight = await code.evaluate((element) =>
      Number.parseFloat(getComputedStyle(element as unknown as PageElement).lineHeight),
    );
    const folded = await box(code);
    expect(folded.height).toBeLessThan(lineHeight * 18);
    expect(folded.height).toBeGreaterThan(lineHeight * 14);
    const toggle = long.getByRole('button', { name: 'Show all 70 lines' });
    expect(await toggle.getAttribute('aria-expanded')).toBe('false');
    await screenshot(page, 'desktop-folded-code');
    await toggle.click();
    expect((await box(code)).height).toBeGreaterThan(lineHeight * 69);
    await long.getByRole('button', { name: 'Show less' }).click();
    expect((await box(code)).height).toBeLessThan(lineHeight * 18);

    const short = await runCell(page, 'print(1)');
    expect(await short.locator('.fold-toggle').count()).toBe(0);
  });
});
