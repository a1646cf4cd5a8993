/**
 * docs/ports.md's desktop, run as written: the environment of examples/desktop built for real on
 * bubblewrap (Debian's Xvfb, Openbox, x11vnc, noVNC) into a scratch store, the README's E2B server
 * started on a free port with that store, the page's js block run with the SDK, and the URL it
 * prints opened in Debian's chromium: noVNC's page and its WebSocket come through the port's URL,
 * it connects, and the screen it draws is xclock on the desktop, not a blank canvas.
 */
import { spawn } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { afterAll, expect, it } from 'vitest';
import { createBubblewrapBackend } from '../src/backends/bubblewrap/index.js';
import { describeWhenAvailable, unavailableReason } from './support/backends.js';
import { e2bServeThen, freePort, readmeBlock, root, runShell, scratchClone } from './support/readme.js';
import { launchBrowser, screenshot } from './support/web-browser.js';

const reason =
  process.getuid?.() === 0
    ? await unavailableReason(createBubblewrapBackend({ rootfs: 'runtime' }))
    : 'building an environment needs root';

describeWhenAvailable('docs/ports.md: a desktop', 'bubblewrap-rootfs', reason, () => {
  const clone = scratchClone();
  const store = mkdtempSync(path.join(os.tmpdir(), 'sandcell-readme-desktop-'));
  // The sandboxes' uids reach the environment's /usr through it, as they reach /var/lib/sandcell.
  chmodSync(store, 0o755);
  const script = path.join(root, `.readme-desktop-${process.pid}.mjs`);
  afterAll(async () => {
    rmSync(script, { force: true });
    await rm(clone, { recursive: true, force: true });
    await rm(store, { recursive: true, force: true });
  }, 10 * 60_000);

  it(
    'builds the desktop, starts it in a sandbox, and shows xclock through noVNC at the port’s URL',
    async () => {
      const env = { SANDCELL_ENVIRONMENT_DIR: store };
      const built = await runShell(readmeBlock('ports-desktop-build').code, { cwd: clone, env });
      expect(built.code, built.stderr).toBe(0);
      expect(built.stdout).toMatch(/^Built in \d+ s: environment desktop \([0-9a-f]{12}\) for bubblewrap/);

      const port = await freePort();
      // The block prints the URL; the test's own line below keeps the sandbox until the browser has looked.
      writeFileSync(
        script,
        readmeBlock('ports-desktop').code +
          "\nawait new Promise((resolve) => process.stdin.once('data', resolve));\nawait desktop.kill();\n",
      );
      const browser = await launchBrowser();
      try {
        const child = spawn('bash', ['-c', e2bServeThen(port, script)], {
          cwd: root,
          env: { ...process.env, ...env, SANDCELL_LOG_LEVEL: 'warn' },
          stdio: ['pipe', 'pipe', 'pipe'],
        });
        let stderr = '';
        child.stderr.on('data', (chunk) => {
          stderr += chunk;
        });
        const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
        const lines = createInterface({ input: child.stdout });
        const url = await new Promise<string>((resolve, reject) => {
          lines.on('line', (line) => {
            if (/^http:\/\/6080-[a-z0-9]+\.localhost:\d+\/vnc\.html\?autoconnect=1&resize=scale$/.test(line))
              resolve(line);
          });
          void exited.then((code) => reject(new Error(`the block exited (${code}) before printing a URL: ${stderr}`)));
        });
        const page = await (await browser.newContext({ viewport: { width: 1280, height: 800 } })).newPage();
        // noVNC answers once websockify listens: the page is tried until it loads.
        for (let attempt = 0; attempt < 100; attempt++) {
          const answer = await page.goto(url).catch(() => undefined);
          if (answer?.ok()) break;
          await page.waitForTimeout(200);
        }
        const canvas = page.locator('#noVNC_container canvas, canvas').first();
        await canvas.waitFor({ timeout: 60_000 });
        // Connected: the status bar goes, and the screen is drawn (more than one colour in the canvas).
        await expect
          .poll(
            () =>
              canvas.evaluate((element) => {
                const canvasElement = element as unknown as {
                  width: number;
                  height: number;
                  getContext(kind: '2d'): {
                    getImageData(x: number, y: number, w: number, h: number): { data: Uint8ClampedArray };
                  };
                };
                const { data } = canvasElement
                  .getContext('2d')
                  .getImageData(0, 0, canvasElement.width, canvasElement.height);
                const colours = new Set<number>();
                for (let index = 0; index < data.length && colours.size < 8; index += 4 * 97) {
                  colours.add((data[index] ?? 0) * 65_536 + (data[index + 1] ?? 0) * 256 + (data[index + 2] ?? 0));
                }
                return colours.size;
              }),
            { timeout: 60_000 },
          )
          .toBeGreaterThan(2);
        await screenshot(page, 'desktop-novnc');
        child.stdin.end('done\n');
        expect(await exited, stderr).toBe(0);
      } finally {
        await browser.close();
      }
    },
    25 * 60_000,
  );
});
