/**
 * Volumes in the web UI, in Debian's chromium against a real server with a state directory and real
 * bubblewrap sessions, the model the scripted one: a volume made in the files panel, a file uploaded
 * into it, the volume ticked for a new conversation, the model told where it is and its code reading
 * and writing there, the conversation saying what it mounts, the volume browsed (into a directory
 * the code made, and back), and a delete of a mounted volume refused with the reason shown.
 */
import { mkdtemp } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ScriptedChatModel } from '../src/agents/scripted-chat-model.js';
import { client, startTestServer } from './support/server.js';
import { removeStateDirectory } from './support/volumes.js';
import { launchBrowser, openTab, screenshot, signIn, type Tab, WEB_ROOT } from './support/web-browser.js';

const UI_TIMEOUT = 90_000;
const KEY = 'web-ui-volumes-key-31c9';

let browser: Browser;
let server: Awaited<ReturnType<typeof startTestServer>>;
let model: ScriptedChatModel;
let stateDirectory: string;
const tabs: Tab[] = [];

beforeAll(async () => {
  browser = await launchBrowser();
  stateDirectory = await mkdtemp(path.join(os.tmpdir(), 'sandcell-web-volumes-'));
  model = new ScriptedChatModel();
  server = await startTestServer({ apiKeys: [KEY], model, logLevel: 'warn', webRoot: WEB_ROOT, stateDirectory });
}, 60_000);
afterAll(async () => {
  for (const tab of tabs) await tab.context.close();
  await browser?.close();
  await server?.close();
  if (stateDirectory) removeStateDirectory(stateDirectory);
});

describe('volumes in the web UI', { timeout: 180_000 }, () => {
  it('made, filled, mounted in a new conversation the model is told of, browsed, and kept while mounted', async () => {
    const tab = await openTab(browser, `http://localhost:${server.port}`, { timeoutMs: UI_TIMEOUT });
    tabs.push(tab);
    const { page } = tab;
    const refused: string[] = [];
    page.on('console', (message) => {
      if (/Content.Security.Policy|Refused to/i.test(message.text())) refused.push(message.text());
    });
    await signIn(page, KEY);

    await page.getByRole('button', { name: 'Files', exact: true }).click();
    const volumes = page.getByRole('region', { name: 'Volumes' });
    await volumes.getByLabel('New volume name').fill('notes');
    await volumes.getByRole('button', { name: 'Make volume' }).click();
    await volumes.getByRole('button', { name: 'Browse notes' }).click();
    const files = volumes.getByRole('group', { name: 'Files of notes' });
    await files.getByText('Empty.').waitFor();
    await files.getByLabel('Files to upload to notes').setInputFiles({
      name: 'todo.txt',
      mimeType: 'text/plain',
      buffer: Buffer.from('water the plants'),
    });
    await files.getByText('todo.txt').waitFor();

    // Ticked for the conversation the next question starts; the model is told where it is.
    await volumes.getByLabel('Mount notes in the new conversation').check();
    await volumes.getByText('at /mnt/volumes/notes').waitFor();
    const code = [
      "print(open('/mnt/volumes/notes/todo.txt').read().upper())",
      "import os; os.makedirs('/mnt/volumes/notes/done', exist_ok=True)",
      "open('/mnt/volumes/notes/done/answer.txt', 'w').write('42')",
    ].join('\n');
    model.enqueue(
      { text: 'Reading the note.', toolCalls: [{ name: 'execute_python_code', arguments: { code } }] },
      { text: 'The note says to water the plants.' },
    );
    const box = page.getByLabel('Your question');
    await box.fill('What does my note say?');
    await box.press('Enter');
    await page.locator('.final-answer', { hasText: 'water the plants' }).waitFor({ timeout: UI_TIMEOUT });
    await page.locator('.stdout', { hasText: 'WATER THE PLANTS' }).waitFor();
    expect(model.calls[0]?.instructions).toContain('/mnt/volumes/notes: the volume "notes", read-write');

    // The conversation says what it mounts; the volume shows what the code wrote.
    await volumes.getByText('mounted at /mnt/volumes/notes').waitFor();
    await files.getByRole('button', { name: 'done/' }).click();
    await files.getByText('answer.txt').waitFor();
    await screenshot(page, 'web-ui-volumes');
    await files.getByRole('button', { name: 'Up', exact: true }).click();
    await files.getByText('todo.txt').waitFor();
    const api = client(server, KEY);
    expect(await (await api('/v1/volumes/notes/files/done/answer.txt')).text()).toBe('42');

    // Mounted by the live session: the delete is refused, and the page says why.
    await volumes.getByRole('button', { name: 'Delete the volume notes' }).click();
    await volumes.getByRole('button', { name: 'Really delete the volume notes' }).click();
    await page.getByText(/The volume notes could not be deleted: .*mounted by session/).waitFor();
    expect((await api('/v1/volumes')).status).toBe(200);
    expect(((await (await api('/v1/volumes')).json()) as { volumes: unknown[] }).volumes).toHaveLength(1);

    // A new conversation starts with nothing ticked.
    await page
      .getByRole('button', { name: /New conversation|New chat|New/ })
      .first()
      .click();
    await expect(volumes.getByLabel('Mount notes in the new conversation').isChecked()).resolves.toBe(false);
    expect(refused).toEqual([]);
  });
});
